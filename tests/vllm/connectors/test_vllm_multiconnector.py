"""pdlint's composite model (vllm/connectors/composite.py) against each release's own MultiConnector code.

From every release that registers MultiConnector (0.9.0+) the test lifts the code that reads
kv_connector_extra_config.connectors (__init__ before 0.11.1, _get_connector_classes_and_configs after), the
scheduler's get_num_new_matched_tokens (which child loads a request), and, where they exist, the code that decides
HMA for the wrapper (0.21.0 - 0.22.x: the `_all_support_hma` expression of __init__; 0.23.0+:
MultiConnector.all_children_support_hma with KVConnectorFactory.supports_hma_config). Child classes are stubs whose
SupportsHMA is read from the same release's source (test_vllm_registry.hma_classes).
"""
from __future__ import annotations

import ast
import copy
import functools
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import vllm_source
from test_vllm_registry import hma_classes as _hma_classes

from pdlint.topology.types import Instance
from pdlint.vllm.connectors import composite, registry
from pdlint.vllm.model import hma
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

hma_classes = functools.cache(_hma_classes)  # a walk of every kv_connector file: once per release
RELEASES = [r for r in KNOWN if registry.registered("MultiConnector", r)]
ROOTS = vllm_source.roots(RELEASES)
MULTI = f"{vllm_source.KV}/v1/multi_connector.py"
FACTORY = f"{vllm_source.KV}/factory.py"

NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
OFFLOAD = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
           "kv_connector_extra_config": {"num_cpu_blocks": 8}}
LMCACHE = {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
MOONCAKE = {"kv_connector": "MooncakeConnector", "kv_role": "kv_producer"}
SIMPLE = {"kv_connector": "SimpleCPUOffloadConnector", "kv_role": "kv_both"}
GRID: list[list[dict[str, Any]]] = [
    [OFFLOAD, NIXL], [NIXL], [LMCACHE, NIXL], [NIXL, LMCACHE], [LMCACHE, {**NIXL, "engine_id": "child"}],
    [OFFLOAD, MOONCAKE], [SIMPLE, NIXL], [LMCACHE], [],
    [{"kv_connector": "MultiConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"connectors": [LMCACHE, NIXL]}}, NIXL],
]


class KVTransferConfig:
    """Stands in for vLLM's KVTransferConfig: keeps the fields it is given (engine_id unset: a fresh id)."""

    def __init__(self, **fields: Any) -> None:
        self.kv_connector = fields.get("kv_connector")
        self.kv_role = fields.get("kv_role")
        self.kv_connector_extra_config = fields.get("kv_connector_extra_config", {})
        self.kv_connector_module_path = fields.get("kv_connector_module_path")
        self.engine_id = fields.get("engine_id") or "fresh-uuid4"


def _class(name: str) -> type:
    return type(name or "Unnamed", (), {})


def _instance(release: Release, connectors: list[dict[str, Any]], **more: Any) -> Instance:
    return Instance(host="h", index=None, deployment="dep", role="decode", instance_id="h", node="h",
                    version=release.text, connector="MultiConnector", kv_role="kv_both", engine_id="wrapper",
                    extra={"connectors": connectors}, **more)


def _config(connectors: list[dict[str, Any]]) -> Any:
    ktc = KVTransferConfig(kv_connector="MultiConnector", kv_role="kv_both", engine_id="wrapper",
                           kv_connector_extra_config={"connectors": connectors})
    return types.SimpleNamespace(kv_transfer_config=ktc)


def _method(root: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse((root / MULTI).read_text(encoding="utf-8"))
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MultiConnector")
    return next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == name)


def vllm_children(release: Release, connectors: list[dict[str, Any]]) -> list[KVTransferConfig]:
    """The children's KVTransferConfigs as the release's MultiConnector builds them."""
    root = ROOTS[release]
    made: list[KVTransferConfig] = []
    factory = types.SimpleNamespace(get_connector_class=lambda ktc: _class(ktc.kv_connector),
                                    create_connector_v1=lambda cfg, role: made.append(cfg.kv_transfer_config),
                                    create_connector=lambda cfg, role: made.append(cfg.kv_transfer_config))
    env = {"KVTransferConfig": KVTransferConfig, "KVConnectorFactory": factory, "copy": copy}
    if vllm_source.has(root, MULTI, "_get_connector_classes_and_configs", "MultiConnector"):
        lifted = vllm_source.lift(root, MULTI, {"_get_connector_classes_and_configs"}, "MultiConnector", env)
        return [cfg.kv_transfer_config for _, cfg in lifted["_get_connector_classes_and_configs"](None,
                                                                                                 _config(connectors))]
    # Before 0.11.1 the loop is in __init__: run its statements after super().__init__ on a bare object.
    init = _method(root, "__init__")
    init.body = [s for s in init.body if "super()" not in ast.unparse(s)]
    init.decorator_list, init.returns = [], None
    for arg in init.args.args:
        arg.annotation = None
    namespace = dict(env)
    exec(compile(ast.Module(body=[init], type_ignores=[]), f"{release}/{MULTI}", "exec"), namespace)  # noqa: S102
    namespace["__init__"](types.SimpleNamespace(), _config(connectors), "role")
    return made


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_children_are_read_as_the_release_reads_them(release: Release) -> None:
    for connectors in GRID:
        if not connectors:
            continue
        inst = _instance(release, connectors)
        try:
            theirs = vllm_children(release, connectors)
        except TypeError as exc:  # 0.10.0+: KVTransferConfig(**ktc, engine_id=...) with a child's own engine_id
            assert "engine_id" in str(exc)
            assert any("engine_id" in m for _, m, _ in composite.config_problems(inst)), (release, connectors)
            continue
        assert not any("engine_id" in m for _, m, _ in composite.config_problems(inst)), (release, connectors)
        ours = [composite.as_child(_instance(release, connectors), c) for c in composite.children(
            _instance(release, connectors))]
        assert [(t.kv_connector, t.kv_role, dict(t.kv_connector_extra_config)) for t in theirs] == \
            [(o.connector, o.kv_role, dict(o.extra)) for o in ours], (release, connectors)
        # engine_id: inherited from the wrapper from 0.10.0 (None in pdlint: vLLM draws a fresh uuid4).
        assert [t.engine_id for t in theirs] == [o.engine_id or "fresh-uuid4" for o in ours], (release, connectors)


def vllm_loader(release: Release, connectors: list[dict[str, Any]]) -> int | None:
    """Index of the child the release's get_num_new_matched_tokens assigns a decode request to.

    On a decode, the P/D transfer child reports the prompt as matched (the request carries do_remote_prefill);
    an offloading child without a local hit reports 0.
    """
    lifted = vllm_source.lift(ROOTS[release], MULTI, {"get_num_new_matched_tokens"}, "MultiConnector")
    kids = []
    for i, item in enumerate(connectors):
        toks = 64 if registry.kind_of(item["kv_connector"]) in composite.TRANSFER_KINDS else 0
        kids.append(types.SimpleNamespace(index=i, get_num_new_matched_tokens=lambda r, n, t=toks: (t, False)))
    me = types.SimpleNamespace(_connectors=kids, _requests_to_connector={})
    lifted["get_num_new_matched_tokens"](me, types.SimpleNamespace(request_id="r"), 0)
    chosen = me._requests_to_connector.get("r")
    return chosen if chosen is None or isinstance(chosen, int) else chosen.index  # 0.9.x stores the child itself


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_the_transfer_child_is_the_one_vllm_loads_a_remote_prefill_from(release: Release) -> None:
    for connectors in GRID:
        if not connectors or any(c["kv_connector"] == "MultiConnector" for c in connectors):
            continue
        child = composite.transfer(_instance(release, connectors))
        assert vllm_loader(release, connectors) == (child.index if child else None), (release, connectors)


def _fake_vllm_module(name: str, **attrs: Any) -> dict[str, types.ModuleType]:
    """sys.modules entries so that `from <name> import X` inside a lifted function finds attrs."""
    parts = name.split(".")
    mods = {".".join(parts[:i]): types.ModuleType(".".join(parts[:i])) for i in range(1, len(parts) + 1)}
    for key, value in attrs.items():
        setattr(mods[name], key, value)
    return mods


def vllm_config_hma(release: Release, connectors: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> bool:
    """0.23.0+: KVConnectorFactory.supports_hma_config of a MultiConnector config, run as the release wrote it."""
    root = ROOTS[release]
    hma = hma_classes(release)
    multi = types.SimpleNamespace()
    factory = types.SimpleNamespace()
    env = {"KVTransferConfig": KVTransferConfig, "KVConnectorFactory": factory,
           "supports_hma": lambda cls: cls.__name__ in hma}
    children = vllm_source.lift(root, MULTI, {"all_children_support_hma"}, "MultiConnector", env)
    decide = vllm_source.lift(root, FACTORY, {"supports_hma_config"}, "KVConnectorFactory", env)
    factory.get_connector_class = lambda ktc: _class(ktc.kv_connector)
    factory.supports_hma_config = lambda ktc: decide["supports_hma_config"](factory, ktc)
    multi.all_children_support_hma = lambda ktc: children["all_children_support_hma"](multi, ktc)
    for key, mod in _fake_vllm_module(MULTI[:-3].replace("/", "."), MultiConnector=multi).items():
        monkeypatch.setitem(sys.modules, key, mod)
    return bool(factory.supports_hma_config(_config(connectors).kv_transfer_config))


def vllm_init_hma(release: Release, connectors: list[dict[str, Any]]) -> bool:
    """0.21.0 - 0.22.x: MultiConnector.__init__'s `self._all_support_hma = ...` over the built children."""
    init = _method(ROOTS[release], "__init__")
    target = next(s for s in ast.walk(init) if isinstance(s, ast.Assign)
                  and ast.unparse(s.targets[0]) == "self._all_support_hma")
    hma = hma_classes(release)
    me = types.SimpleNamespace(_connectors=[_class(c["kv_connector"])() for c in connectors])
    return bool(eval(compile(ast.Expression(target.value), "init", "eval"),  # noqa: S307 - vLLM's own expression
                     {"supports_hma": lambda c: type(c).__name__ in hma, "self": me}))


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.21.0")], ids=str)
def test_hma_support_is_the_release_s(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    for connectors in GRID:
        inst = _instance(release, connectors)
        if release >= R("0.23.0"):
            assert composite.config_hma("MultiConnector", None, inst.extra, release) is \
                vllm_config_hma(release, connectors, monkeypatch), (release, connectors)
            assert composite.children_hma(inst) is vllm_config_hma(release, connectors, monkeypatch) or not connectors
        else:
            assert composite.children_hma(inst) is vllm_init_hma(release, connectors), (release, connectors)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_an_unset_flag_resolves_as_the_release_resolves_it(release: Release) -> None:
    """The HMA the engine runs with an unset flag, and whether the engine starts with it explicitly on."""
    text = (ROOTS[release] / MULTI).read_text(encoding="utf-8")
    wrapper_is_hma = "class MultiConnector(KVConnectorBase_V1, SupportsHMA)" in text
    assert registry.supports_hma("MultiConnector", release) is wrapper_is_hma
    for connectors in GRID:
        inst = _instance(release, connectors)
        unset_on = hma.enabled(inst)
        if not wrapper_is_hma or registry.HMA_DEFAULT.at(release) != "by-connector":
            assert unset_on is False, (release, connectors)  # forced off, off unless set, or no SupportsHMA
        else:
            assert unset_on is bool(composite.children_hma(inst) or (not connectors and release < R("0.23.0")))
        explicit = _instance(release, connectors, disable_hma=False)
        starts = hma.failure(explicit) is None
        if not wrapper_is_hma:
            assert not starts or registry.HMA_DEFAULT.at(release) in ("absent", "forced-off"), (release, connectors)
        else:
            assert starts is (composite.children_hma(explicit) is not False), (release, connectors)


BROKEN_ITEMS: list[Any] = [None, "NixlConnector", ["NixlConnector"], 7, {**NIXL, "kv_connector_extra_config": "x"},
                           {**NIXL, "kv_connector_extra_config": None}, {**NIXL, "kv_connector_extra_config": [1]},
                           {**NIXL, "kv_bogus": 1}, {**NIXL, "kv_connector_extra_config": {}}]


def real_config_class(release: Release) -> type:
    """The release's KVTransferConfig field types (lifted), as a plain dataclass (0.9.0) or a pydantic one (0.9.1+,
    extra="forbid" from 0.16.0), as the release's own decorators make it."""
    import dataclasses

    from test_vllm_kv_lax import _TYPES, _annotations
    pydantic = pytest.importorskip("pydantic")
    root = ROOTS[release]
    fields = [(k, eval(a, dict(_TYPES)), dataclasses.field(default=None))  # noqa: S307 - vLLM's own annotations
              for k, a in _annotations(root).items()]
    cls = dataclasses.make_dataclass("KVTransferConfig", fields)
    source = next(p for p in (root / "vllm/config/kv_transfer.py", root / "vllm/config/__init__.py",
                              root / "vllm/config.py") if p.exists()).read_text(encoding="utf-8")
    utils = root / "vllm/config/utils.py"
    forbid = utils.exists() and 'ConfigDict(extra="forbid")' in utils.read_text(encoding="utf-8")
    if "from pydantic.dataclasses import dataclass" in source or forbid:
        cls = pydantic.dataclasses.dataclass(cls, config=pydantic.ConfigDict(extra="forbid" if forbid else "ignore"))
    return cls


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_items_vllm_cannot_build_a_child_from(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    """A null, non-mapping, or badly typed item: the release's own MultiConnector code fails iff pdlint says so."""
    pydantic = pytest.importorskip("pydantic")
    monkeypatch.setattr(sys.modules[__name__], "KVTransferConfig", real_config_class(release))
    for item in BROKEN_ITEMS:
        connectors = [item]
        try:
            vllm_children(release, connectors)
            fails = False
        except (TypeError, AttributeError, pydantic.ValidationError):
            fails = True
        inst = _instance(release, connectors)
        ours = [m for _, m, _ in composite.config_problems(inst) if "child 0" in m and "kv_role" not in m]
        assert bool(ours) is fails, (release, item, ours)

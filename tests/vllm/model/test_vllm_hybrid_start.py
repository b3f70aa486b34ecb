"""Hybrid models at connector start against each release's own code (vllm/connectors/moriio/hybrid.py, vllm/model/hma.py).

Per release, model kind (full attention, sliding window, Mamba hybrid, MLA), HMA unset / true / false, connector
mode and VLLM_SSM_CONV_STATE_LAYOUT (unset, SD, DS), vLLM's verdict is composed from its own code:
- HMA as the release's VllmConfig.__post_init__ resolves it, and unify_hybrid_kv_cache_specs with HMA off
  (test_vllm_hma);
- NIXL: the asserts inside the worker __init__'s `if self._has_mamba:` block (`assert self._is_hma_required`,
  `assert is_conv_state_dim_first()`), with mamba_utils.get_conv_state_layout lifted from the release;
- MoRIIO: MoRIIOConnectorScheduler.__init__'s mode, group-kind, `_has_mamba` and `_is_hma_required` statements,
  and the mode and conv-layout checks of MoRIIOConnectorWorker.register_kv_caches.
pdlint's verdict is whether it reports the engine as failing at start (connector[config] or tp-ratio[moriio-write]
naming the model's layers). Both sides of the pair run the same settings.
"""
from __future__ import annotations

import ast
import enum
import functools
import itertools
import types
from typing import Any

import pytest
import test_vllm_hma as th
import vllm_source

from pdlint.engine import core as engine
from pdlint.hostvars import HostVars
from pdlint.vllm.connectors import registry
from pdlint.vllm.releases import R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in th.RELEASES if registry.registered("NixlConnector", r)]
ROOTS = th.ROOTS
KV = vllm_source.KV
MORIIO = f"{KV}/v1/moriio/moriio_connector.py"
ENVS: tuple[str | None, ...] = (None, "SD", "DS")
START_RULES = ("connector[config]", "tp-ratio[moriio-write]")


class MoRIIOMode(enum.Enum):
    READ = "read"
    WRITE = "write"


class MoRIIOError(Exception):
    pass


def _no_imports(stmts: list[ast.stmt]) -> list[ast.stmt]:
    return [th._NoImports().visit(s) for s in stmts]


@functools.cache
def _conv_first(release: Release) -> Any:
    """is_conv_state_dim_first of the release, reading a stand-in envs (None: no such function)."""
    rel = "vllm/model_executor/layers/mamba/mamba_utils.py"
    if not vllm_source.has(ROOTS[release], rel, "is_conv_state_dim_first"):
        return None
    envs = types.SimpleNamespace(VLLM_SSM_CONV_STATE_LAYOUT=None)
    lifted = vllm_source.lift(ROOTS[release], rel, {"get_conv_state_layout", "is_conv_state_dim_first"},
                              env={"envs": envs, "logger": th._Log()})
    return envs, lifted["is_conv_state_dim_first"]


def _fn(body: list[ast.stmt], args: str, namespace: dict[str, Any]) -> Any:
    fn = ast.parse(f"def f({args}):\n    pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = _no_imports(body) or [ast.Pass()]
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), "lifted", "exec"),  # noqa: S102
         namespace)
    return namespace["f"]


@functools.cache
def _nixl_mamba_asserts(release: Release) -> Any:
    """The asserts of the NIXL worker __init__'s `if self._has_mamba:` block(s), as fn(self) (None: none)."""
    asserts: list[ast.stmt] = []
    for rel in th._NIXL_WORKERS:
        path = ROOTS[release] / KV / rel
        if not path.exists():
            continue
        inits = [f for c in ast.parse(path.read_text(encoding="utf-8")).body
                 if isinstance(c, ast.ClassDef) and c.name.endswith("Worker")
                 for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
        for node in (n for init in inits for n in ast.walk(init)):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "self._has_mamba":
                asserts += [s for s in node.body if isinstance(s, ast.Assert)]
    if not asserts:
        return None
    conv = _conv_first(release)
    return _fn(asserts, "self", {"is_conv_state_dim_first": conv[1] if conv else (lambda: True)}), conv


def _groups(kind: str) -> list[Any]:
    """KV cache groups as get_kv_cache_groups forms them: the layers of one spec kind share a group."""
    by_kind: dict[str, list[str]] = {}
    specs = th._layers(kind)
    for name, spec in specs.items():
        by_kind.setdefault(spec.KIND, []).append(name)
    return [types.SimpleNamespace(kv_cache_spec=specs[names[0]], layer_names=names, enable_kv_transfer=True)
            for names in by_kind.values()]


def vllm_fails(release: Release, connector: str, kind: str, disable: bool | None, read: bool,
               layout: str | None) -> bool:
    """The engine does not start in release, as its own code decides."""
    on = th.vllm_hma(release, connector, disable)
    if isinstance(on, str) or not on and th.vllm_unify_raises(release, kind):
        return True
    specs = th._layers(kind)
    hma_required = on and any(not isinstance(s, th.FullAttentionSpec) for s in specs.values())
    has_mamba = any(isinstance(s, th.MambaSpec) for s in specs.values())
    try:
        if registry.kind_of(connector) == "nixl":
            lifted = _nixl_mamba_asserts(release)
            if lifted and has_mamba:
                fn, conv = lifted
                if conv:
                    conv[0].VLLM_SSM_CONV_STATE_LAYOUT = layout
                fn(types.SimpleNamespace(_is_hma_required=hma_required))
        else:
            _moriio(release, kind, on, read, layout)
    except (AssertionError, NotImplementedError, MoRIIOError):
        return True
    return False


@functools.cache
def _moriio_scheduler(release: Release) -> Any:
    root = ROOTS[release]
    tree = ast.parse((root / MORIIO).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MoRIIOConnectorScheduler")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    keep = ("self.mode", "(self._attn_group_ids, self._mamba_group_ids)", "self._has_mamba", "self._is_hma_required")
    body = [s for s in init.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) in keep
            or isinstance(s, ast.If) and ast.unparse(s.test) in ("self._has_mamba", "self._is_hma_required")]
    # Statements that size buffers (not checks) are dropped from the `_has_mamba` blocks.
    for s in body:
        if isinstance(s, ast.If):
            s.body = [b for b in s.body if "raise" in ast.unparse(b) or isinstance(b, ast.Assign) and
                      "unsupported" in ast.unparse(b)] or [ast.Pass()]
    names = {n for n in ("_split_kv_cache_group_kinds", "is_full_attention_spec")
             if vllm_source.has(root, MORIIO, n)}
    env: dict[str, Any] = {**th._SPECS, "MoRIIOMode": MoRIIOMode, "MoRIIOError": MoRIIOError}
    env.update(vllm_source.lift(root, MORIIO, names, env=dict(env)) if names else {})
    env.setdefault("is_full_attention_spec", lambda spec: isinstance(spec, th.FullAttentionSpec))
    return _fn(body, "self, vllm_config, kv_cache_config, get_moriio_mode", env)


@functools.cache
def _moriio_worker(release: Release) -> Any:
    """The mode and conv-layout checks of register_kv_caches (None: it has none)."""
    root = ROOTS[release]
    tree = ast.parse((root / MORIIO).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MoRIIOConnectorWorker")
    reg = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "register_kv_caches")
    body: list[ast.stmt] = []
    for s in reg.body:
        if isinstance(s, ast.If) and ast.unparse(s.test).startswith("self._has_mamba"):
            s.body = [b for b in s.body if isinstance(b, ast.Raise) or isinstance(b, ast.If) and
                      "is_conv_state_dim_first" in ast.unparse(b.test)] or [ast.Pass()]
            body.append(s)
    conv = _conv_first(release)
    if not body:
        return None
    env = {"MoRIIOMode": MoRIIOMode, "MoRIIOError": MoRIIOError,
           "is_conv_state_dim_first": conv[1] if conv else (lambda: True)}
    return _fn(body, "self", env), conv


def _moriio(release: Release, kind: str, on: bool, read: bool, layout: str | None) -> None:
    mode = MoRIIOMode.READ if read else MoRIIOMode.WRITE
    groups = _groups(kind)
    config = types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(disable_hybrid_kv_cache_manager=not on),
        speculative_config=None, kv_transfer_config=None)
    kv_cache_config = types.SimpleNamespace(kv_cache_groups=groups, transfer_groups=groups)
    me = types.SimpleNamespace(kv_transfer_config=None)
    _moriio_scheduler(release)(me, config, kv_cache_config, lambda *_: mode)
    worker = _moriio_worker(release)
    if worker:
        fn, conv = worker
        if conv:
            conv[0].VLLM_SSM_CONV_STATE_LAYOUT = layout
        fn(types.SimpleNamespace(mode=mode, _has_mamba=any(isinstance(g.kv_cache_spec, th.MambaSpec)
                                                           for g in groups)))


def _hosts(release: Release, connector: str, kind: str, disable: bool | None, read: bool,
           layout: str | None) -> list[HostVars]:
    extra: dict[str, Any] = {"http_port": 8000, "read_mode": "true" if read else "false"} \
        if connector == "MoRIIOConnector" else {}
    common: dict[str, Any] = {"vllm_pd_deployment": "x", "vllm_version": release.text,
                              "vllm_model": th.MODELS[kind], "vllm_env": {} if layout is None else
                              {"VLLM_SSM_CONV_STATE_LAYOUT": layout}}
    if disable is not None:
        common["vllm_disable_hybrid_kv_cache_manager"] = disable
    if connector == "MoRIIOConnector" and release < R("0.23.0"):
        common["vllm_env"] = {**common["vllm_env"], "VLLM_MORIIO_CONNECTOR_READ_MODE": "1" if read else "0"}
    return [HostVars(role[0], {**common, "vllm_pd_role": role, "vllm_port": 8000 + i, "vllm_kv_transfer_config": {
        "kv_connector": connector, "kv_role": "kv_producer" if role == "prefill" else "kv_consumer",
        "kv_connector_extra_config": extra}}) for i, role in enumerate(("prefill", "decode"))]


def pdlint_fails(hosts: list[HostVars], kind: str) -> bool:
    said = {"mamba": "Mamba", "sliding": "sliding-window"}.get(kind)
    return any(f.rule in START_RULES and "p" in f.hosts and said is not None and said in f.message and
               ("does not start" in f.message or "raises" in f.message or "MoRIIOError" in f.message)
               for f in engine.lint(hosts).findings)


def _grid(release: Release) -> list[tuple[str, str, bool | None, bool, str | None]]:
    connectors = [c for c in ("NixlConnector", "MoRIIOConnector") if registry.registered(c, release)]
    cells = []
    for connector, kind, disable, layout in itertools.product(connectors, th.MODELS, (None, True, False), ENVS):
        for read in ((True, False) if connector == "MoRIIOConnector" else (True,)):
            cells.append((connector, kind, disable, read, layout))
    return cells


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.18.0")], ids=str)
def test_hybrid_engines_start_as_the_release_decides(release: Release) -> None:
    wrong = []
    for connector, kind, disable, read, layout in _grid(release):
        if kind in ("full", "mla"):
            continue  # no hybrid layers: nothing here can fail (and other rules speak for them)
        if disable is False and connector not in th.hma_classes(release):
            continue  # create_connector's ValueError: connector[config]'s older check (hma.rejected)
        theirs = vllm_fails(release, connector, kind, disable, read, layout)
        ours = pdlint_fails(_hosts(release, connector, kind, disable, read, layout), kind)
        if theirs != ours:
            wrong.append((connector, kind, disable, "read" if read else "write", layout, theirs, ours))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:4]}"


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.20.0")], ids=str)
def test_the_ds_hint_passes(release: Release) -> None:
    """Where pdlint blames the conv-state layout, setting DS is enough for the release's own checks."""
    for connector, kind, disable, read, layout in _grid(release):
        if kind != "mamba" or layout == "DS":
            continue
        found = [f for f in engine.lint(_hosts(release, connector, kind, disable, read, layout)).findings
                 if "VLLM_SSM_CONV_STATE_LAYOUT" in f.message and "p" in f.hosts]
        if found:
            assert "VLLM_SSM_CONV_STATE_LAYOUT: DS" in (found[0].hint or ""), found[0]
            assert not vllm_fails(release, connector, kind, disable, read, "DS"), (connector, disable, read)

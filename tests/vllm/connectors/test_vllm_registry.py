"""pdlint's connector registry, HMA support and KVTransferConfig tables against every release's own source.

Each table is read again from the release's files with ast (factory.py's register_connector calls, the
classes deriving from SupportsHMA, KVTransferConfig's annotated fields, the CLI parser, config/utils.py), and
the rules built from the tables are run on small inventories pinned to each release.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import vllm_source

from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.schema import check as schema
from pdlint.topology.build import build
from pdlint.vllm.connectors import kvconfig, registry
from pdlint.vllm.releases import KNOWN, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)  # fetched when a test first reads it
KV = vllm_source.KV


def _root(release: Release) -> Path:
    root = ROOTS[release]
    assert root is not None
    return root


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def registered_classes(release: Release) -> dict[str, str]:
    """name -> class name of every module-level KVConnectorFactory.register_connector(...) call in factory.py."""
    found = {}
    for node in _tree(_root(release) / KV / "factory.py").body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("register_connector"):
            args = [a.value for a in call.args if isinstance(a, ast.Constant)]
            found[args[0]] = args[2] if len(args) > 2 else args[0]
    return found


def hma_classes(release: Release) -> set[str]:
    """Classes under kv_connector/ that derive from SupportsHMA (directly, through a base, or by alias)."""
    bases: dict[str, set[str]] = {}
    for path in (_root(release) / KV).rglob("*.py"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(ast.unparse(b).split(".")[-1] for b in node.bases)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                bases.setdefault(node.targets[0].id, set()).add(node.value.id)  # NixlConnector = NixlPullConnector

    def supports(name: str, seen: frozenset[str] = frozenset()) -> bool:
        return name == "SupportsHMA" or (name not in seen and any(supports(b, seen | {name})
                                                                   for b in bases.get(name, ())))
    return {c for c in bases if c != "SupportsHMA" and supports(c)}


def kv_transfer_class(release: Release) -> tuple[Path, ast.ClassDef]:
    vllm = _root(release) / "vllm"
    for path in (vllm / "config" / "kv_transfer.py", vllm / "config" / "__init__.py", vllm / "config.py"):
        if path.exists():
            found = [n for n in ast.walk(_tree(path)) if isinstance(n, ast.ClassDef) and n.name == "KVTransferConfig"]
            if found:
                return path, found[0]
    raise AssertionError(f"{release}: no KVTransferConfig")


def vllm_config_file(release: Release) -> Path:
    vllm = _root(release) / "vllm"
    for path in (vllm / "config" / "vllm.py", vllm / "config" / "__init__.py", vllm / "config.py"):
        if path.exists() and "class VllmConfig" in path.read_text(encoding="utf-8"):
            return path
    raise AssertionError(f"{release}: no VllmConfig")


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_registered_names_are_factory_py_s(release: Release) -> None:
    assert set(registered_classes(release)) == registry.NAMES.at(release)


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_hma_support_is_the_supports_hma_classes(release: Release) -> None:
    classes = hma_classes(release)
    supported = {name for name, cls in registered_classes(release).items() if cls in classes}
    assert supported == registry.SUPPORTS_HMA.at(release)
    assert {n for n in registry.NAMES.at(release) if registry.supports_hma(n, release)} == supported


def _hma_mode(release: Release) -> str:
    """How VllmConfig resolves an unset disable_hybrid_kv_cache_manager with a connector, read from the source."""
    text = vllm_config_file(release).read_text(encoding="utf-8")
    fields = [f for f in (_root(release) / "vllm" / "config" / "scheduler.py", vllm_config_file(release))
              if f.exists() and "disable_hybrid_kv_cache_manager:" in f.read_text(encoding="utf-8")]
    if not fields:
        return "absent"
    declared = next(line for line in fields[0].read_text(encoding="utf-8").splitlines()
                    if "disable_hybrid_kv_cache_manager:" in line)
    if "None" not in declared:
        assert "if self.kv_transfer_config is not None:" in text
        return "forced-off"
    branch = text.split("disable_hybrid_kv_cache_manager is None:", 1)[1].split("elif", 1)[0]
    return "by-connector" if "supports_hma" in branch else "off-unless-set"


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_unset_hma_resolves_as_vllm_config_does(release: Release) -> None:
    assert registry.HMA_DEFAULT.at(release) == _hma_mode(release)


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_factory_answer_to_unknown_names(release: Release) -> None:
    text = (_root(release) / KV / "factory.py").read_text(encoding="utf-8")
    if "Unsupported connector type" not in text or "kv_connector_module_path" not in text:
        assert registry.UNKNOWN_NAME.at(release).startswith("KeyError")  # 0.8.5: cls._registry[name]()
        assert not registry.module_path_honoured(release)
    else:
        assert registry.UNKNOWN_NAME.at(release).startswith("ValueError")
        assert registry.module_path_honoured(release)
    assert ("cannot be an empty string" in text) == (registry.UNKNOWN_NAME.step(release) is
                                                     registry.UNKNOWN_NAME.steps[-1])


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_kv_transfer_config_fields(release: Release) -> None:
    _, cls = kv_transfer_class(release)
    fields = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert fields == kvconfig.fields(release)
    assert fields <= set(kvconfig.ALL_FIELDS)


def _extra_mode(release: Release) -> str:
    """What --kv-transfer-config does with an unknown key, read from the parser and the config decorator."""
    root = _root(release) / "vllm"
    utils = root / "config" / "utils.py"
    if utils.exists() and 'extra="forbid"' in utils.read_text(encoding="utf-8"):
        return "rejected"
    if "f(**json.loads(x))" in (root / "engine" / "arg_utils.py").read_text(encoding="utf-8"):
        return "rejected"  # a stdlib dataclass called with the JSON's keys: TypeError
    _, cls = kv_transfer_class(release)
    model_config = [n for n in cls.body if isinstance(n, ast.Assign) and "model_config" in ast.unparse(n)]
    assert not model_config, "a BaseModel with its own config"
    return "ignored"


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_unknown_keys_are_ignored_or_rejected_as_vllm_does(release: Release) -> None:
    assert kvconfig.EXTRA.at(release) == _extra_mode(release)


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_kv_role_messages(release: Release) -> None:
    path, cls = kv_transfer_class(release)
    text = ast.unparse(cls)
    assert kvconfig.ROLE_REQUIRED.at(release) in text  # implicitly joined literals are one Constant
    assert "Unsupported kv_role" in text
    roles = ("kv_producer", "kv_consumer", "kv_both")
    assert all(r in path.read_text(encoding="utf-8") for r in roles)


# The rules built from the tables, on one inventory per release --------------------------------------------------

def _findings(release: Release, kv: dict[str, Any], **more: Any) -> list[Any]:
    hosts = [HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_version": release.text,
                             "vllm_kv_transfer_config": kv, **more})
             for name, role in (("p", "prefill"), ("d", "decode"))]
    topo, _ = build(hosts)
    return [f for rule in REGISTRY.values() for f in rule.check(topo) if "p" in f.hosts]


NAMES = sorted({n for s in registry.NAMES.steps for n in s.value} | {"NIXLConnector"})


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_connector_unknown_fires_exactly_for_names_the_factory_cannot_give_a_v1_class(release: Release) -> None:
    names = registered_classes(release)
    text = (_root(release) / KV / "factory.py").read_text(encoding="utf-8")
    for name in NAMES:
        kv = {"kv_connector": name, "kv_role": "kv_both"}
        fired = [f for f in _findings(release, kv) if f.rule == "connector[unknown]"]
        v0 = name in names and ".v1." not in _module_of(text, name)  # a V0 module: V1 asserts its base class
        assert bool(fired) == (name not in names or v0), (release, name)
        if fired and not v0:
            assert f"not registered in vLLM {release}" in fired[0].message or "renamed" in fired[0].message
        with_path = _findings(release, {**kv, "kv_connector_module_path": "my.module"})
        honoured = "kv_connector_module_path" in text
        assert any(f.rule == "connector[unknown]" for f in with_path) == (bool(fired) and (v0 or not honoured))


def _module_of(factory: str, name: str) -> str:
    """The module path a register_connector call gives name."""
    tree = ast.parse(factory)
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.args[0], ast.Constant) and call.args[0].value == name:
            return str(call.args[1].value)  # type: ignore[attr-defined]
    return ""


def test_connector_unknown_messages_say_when() -> None:
    from pdlint.vllm.releases import R
    [p2p] = [f for f in _findings(R("0.32.0"), {"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer"})
             if f.rule == "connector[unknown]"]
    assert p2p.message.startswith("kv_connector 'P2pNcclConnector' is not registered in vLLM 0.32.0 "
                                  "(registered 0.9.2 - 0.23.0)")
    [shared] = [f for f in _findings(R("0.13.0"), {"kv_connector": "SharedStorageConnector", "kv_role": "kv_both"})
                if f.rule == "connector[unknown]"]
    assert shared.message.startswith("SharedStorageConnector was renamed ExampleConnector in 0.13.0")
    assert shared.hint == "use kv_connector ExampleConnector"
    v0 = _findings(R("0.9.2"), {"kv_connector": "PyNcclConnector", "kv_role": "kv_both"})
    assert any(f.rule == "connector[unknown]" and "V0 connector" in f.message for f in v0)
    assert not any(f.rule == "connector[unknown]" for f in _findings(
        R("0.9.2"), {"kv_connector": "PyNcclConnector", "kv_role": "kv_both"}, vllm_env={"VLLM_USE_V1": "0"}))


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_schema_judges_kv_transfer_config_keys_by_release(release: Release) -> None:
    fields = kvconfig.fields(release)
    for key in (*kvconfig.ALL_FIELDS, "kv_typo_key"):
        kv = {"kv_connector": "NixlConnector", "kv_role": "kv_both", key: _value(key)}
        for version_at in ("host", "instance"):
            if version_at == "host":
                values = {"vllm_version": release.text, "vllm_kv_transfer_config": kv}
            else:
                values = {"vllm_instances": [{"version": release.text, "kv_transfer_config": kv, "port": 8000}]}
            found = [f for f in schema.check(HostVars("h", values)) if key in f.message]
            if key in fields:
                assert not found, (release, key, found)
                continue
            assert len(found) == 1, (release, key)
            expected = "error" if kvconfig.EXTRA.at(release) == "rejected" else "warning"
            assert found[0].severity == expected, (release, key)


def _value(key: str) -> Any:
    return {"kv_buffer_size": 1e9, "kv_rank": 0, "kv_parallel_size": 2, "kv_ip": "10.0.0.1", "kv_port": 14579,
            "kv_connector_extra_config": {}, "enable_permute_local_kv": False, "kv_load_failure_policy": "fail",
            "engine_id": "e1", "kv_buffer_device": "cuda", "kv_connector_module_path": "m",
            "kv_connector": "NixlConnector", "kv_role": "kv_both"}.get(key, 1)

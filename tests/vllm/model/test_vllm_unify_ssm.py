"""A Mamba/SSM hybrid with the hybrid KV cache manager off, against each release's own code.

For every release with a V1 MambaSpec (0.9.2 - 0.33.0) v1/kv_cache_interface.py runs as vLLM wrote it (its module
body executed with torch and the vllm imports replaced by stand-ins: a torch namespace, get_dtype_size 2, a
KVCacheSpecRegistry that walks the MRO to the classes register_all_kvcache_specs registers as their own base), so
the spec classes, their dcp_sharded defaults (0.31.0+), merge and UniformTypeKVCacheSpecs.is_uniform_type are the
release's. unify_hybrid_kv_cache_specs with _promote_local_kv_cache_specs and is_kv_cache_spec_uniform /
is_kv_cache_type_uniform are lifted from v1/core/kv_cache_utils.py (0.33.0: v1/core/kv_cache_planning.py) and run on
the layer specs of Mamba hybrids of three families (Jamba: attention every 8th layer; Nemotron-H: a
hybrid_override_pattern; Granite-4.0-H: layer_types) and of sliding-window models of two families (gpt-oss:
alternating; Gemma 3: 5 sliding to 1 full), at two Mamba block sizes. The disable flag resolves as the release's
own VllmConfig.__post_init__ (test_vllm_hma.vllm_hma). pdlint's hma.off_failure must fire exactly when the code
raises, quoting the ValueError the release raises.
"""
from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import itertools
import sys
import types
from collections import defaultdict
from typing import Any

import pytest
import vllm_source
from test_vllm_hma import vllm_hma

from pdlint.hostvars import HostVars
from pdlint.topology.build import build
from pdlint.topology.types import Instance
from pdlint.vllm.connectors import registry
from pdlint.vllm.model import hma
from pdlint.vllm.releases import KNOWN, R, Release

RELEASES = [r for r in KNOWN if r >= R("0.9.2")]  # v1/kv_cache_interface.py MambaSpec
ROOTS = vllm_source.roots(RELEASES)
_KEEP = ("dataclasses", "typing", "math", "copy", "abc", "collections", "enum", "functools", "itertools",
         "fractions", "__future__")
# the classes register_all_kvcache_specs (v1/core/single_type_kv_cache_manager.py) registers as their own
# uniform_type_base_spec; MLAAttentionSpec and the other FullAttentionSpec subclasses group with FullAttentionSpec
_OWN_BASE = ("FullAttentionSpec", "SlidingWindowSpec", "SlidingWindowMLASpec", "ChunkedLocalAttentionSpec", "MambaSpec")


class _Log:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


@functools.cache
def specs(release: Release) -> dict[str, Any]:
    """The namespace of the release's v1/kv_cache_interface.py, run with stand-in torch and vllm imports."""
    root = ROOTS[release]
    tree = ast.parse((root / "vllm/v1/kv_cache_interface.py").read_text(encoding="utf-8"))

    def kept(node: ast.stmt) -> bool:
        if isinstance(node, ast.Import):
            return all(a.name.split(".")[0] in _KEEP for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] in _KEEP
        return True
    tree.body = [n for n in tree.body if kept(n)]
    bases: list[type] = []

    class KVCacheSpecRegistry:
        @classmethod
        def get_uniform_type_base_spec(cls, spec: Any) -> type | None:
            return next((b for b in type(spec).__mro__ if b in bases), None)

    module = types.ModuleType(f"pdlint_test_kv_cache_interface_{release.text.replace('.', '_')}")
    module.__dict__.update({
        "torch": types.SimpleNamespace(dtype=type("dtype", (), {}), Tensor=object, bfloat16="bfloat16", uint8="uint8"),
        "Self": Any, "VllmConfig": object, "init_logger": lambda n: _Log(), "cdiv": lambda a, b: -(-a // b),
        "round_up": lambda a, b: -(-a // b) * b, "get_dtype_size": lambda d: 2, "nvfp4_kv_cache_full_dim": lambda *a: 0,
        "MambaAttentionBackendEnum": enum.Enum("MambaAttentionBackendEnum", "MAMBA1 MAMBA2 SHORT_CONV LINEAR GDN_ATTN"),
        "KVCacheSpecRegistry": KVCacheSpecRegistry, "KVCacheLayout": object, "_DIM_B": "B", "_DIM_L": "L",
        "MULTIMODAL_REGISTRY": None})
    sys.modules[module.__name__] = module  # dataclasses looks the defining module up (KW_ONLY, ClassVar)
    exec(compile(tree, f"{release}/kv_cache_interface.py", "exec"), module.__dict__)  # noqa: S102
    bases.extend(module.__dict__[n] for n in _OWN_BASE if n in module.__dict__)
    return module.__dict__


def _make(cls: type, **given: Any) -> Any:
    values = {"block_size": 16, "num_kv_heads": 8, "head_size": 128, "dtype": "bfloat16", "use_mla": False,
              "shapes": ((4, 8), (8, 8)), "dtypes": ("bfloat16", "bfloat16"), "sliding_window": 128, **given}
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _jamba(layers: int = 32, period: int = 8, offset: int = 4) -> tuple[str, ...]:
    """transformers JambaConfig.layers_block_type: attention where i % attn_layer_period == attn_layer_offset."""
    return tuple("full" if i % period == offset else "mamba" for i in range(layers))


_NEMOTRON_H = {"M": "mamba", "*": "full", "-": "none", "E": "none"}
MODELS: dict[str, tuple[str, ...]] = {
    "jamba": _jamba(),
    "nemotron-h": tuple(_NEMOTRON_H[c] for c in "M-M-M-M*-" + "M-M-M-M-M*-" * 3 + "M-M-M-M-M-"),
    "granite-4.0-h": tuple("full" if i in (5, 15, 25, 35) else "mamba" for i in range(40)),
    "gpt-oss": tuple("sliding" if i % 2 == 0 else "full" for i in range(24)),
    "gemma-3": tuple("full" if (i + 1) % 6 == 0 else "sliding" for i in range(34)),
}
MAMBA = ("jamba", "nemotron-h", "granite-4.0-h")


def layer_specs(release: Release, model: str, mamba_block: int) -> dict[str, Any]:
    ns = specs(release)
    made = {"full": lambda: _make(ns["FullAttentionSpec"]), "sliding": lambda: _make(ns["SlidingWindowSpec"]),
            "mamba": lambda: _make(ns["MambaSpec"], block_size=mamba_block)}
    return {f"model.layers.{i}": made[k]() for i, k in enumerate(MODELS[model]) if k != "none"}


@functools.cache
def _unify(release: Release) -> Any:
    root = ROOTS[release]
    rel = next(p for p in ("vllm/v1/core/kv_cache_planning.py", "vllm/v1/core/kv_cache_utils.py")
               if vllm_source.has(root, p, "unify_hybrid_kv_cache_specs"))
    names = {n for n in ("unify_hybrid_kv_cache_specs", "_promote_local_kv_cache_specs", "is_kv_cache_spec_uniform",
                         "is_kv_cache_type_uniform") if vllm_source.has(root, rel, n)}
    env = {**specs(release), "logger": _Log(), "defaultdict": defaultdict}
    return vllm_source.lift(root, rel, names, env=env)["unify_hybrid_kv_cache_specs"]


def vllm_unify_error(release: Release, model: str, mamba_block: int = 16) -> str | None:
    """The ValueError the release's unify_hybrid_kv_cache_specs raises on the model's layers (None: it does not)."""
    try:
        _unify(release)(layer_specs(release, model, mamba_block))
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_unify_raises_for_every_mamba_hybrid(release: Release) -> None:
    """Every Mamba hybrid raises in every release, at both Mamba block sizes; sliding-window models never do."""
    for model, block in itertools.product(MODELS, (16, 2048)):
        error = vllm_unify_error(release, model, block)
        assert (error is not None) == (model in MAMBA), (model, block, error)


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.31.0")], ids=str)
def test_dcp_sharded_puts_attention_and_mamba_in_one_group(release: Release) -> None:
    """0.31.0+: the grouping key is False for both attention (dcp_sharded defaults True) and Mamba (not an
    AttentionSpec; KVCacheSpec.dcp_sharded defaults False). Only an attention spec vLLM marks dcp_sharded=False
    (model_runner's DCP=1 draft under DCP > 1) is promoted apart, and then nothing raises."""
    ns = specs(release)
    defaults = {name: next(f.default for f in dataclasses.fields(ns[name]) if f.name == "dcp_sharded")
                for name in ("KVCacheSpec", "AttentionSpec", "FullAttentionSpec", "SlidingWindowSpec", "MambaSpec")}
    assert defaults == {"KVCacheSpec": False, "AttentionSpec": True, "FullAttentionSpec": True,
                        "SlidingWindowSpec": True, "MambaSpec": False}
    assert not issubclass(ns["MambaSpec"], ns["AttentionSpec"])
    replicated = {n: dataclasses.replace(s, dcp_sharded=False) if isinstance(s, ns["AttentionSpec"]) else s
                  for n, s in layer_specs(release, "jamba", 16).items()}
    _unify(release)(replicated)  # promoted apart: does not raise


CONNECTORS = ("MooncakeConnector", "NixlConnector", "NixlPushConnector", "MoRIIOConnector", "P2pNcclConnector",
              "LMCacheConnectorV1", "OffloadingConnector", "SharedStorageConnector", "ExampleConnector")
_FACTS = {"jamba": (32, 8), "nemotron-h": (64, 8), "granite-4.0-h": (32, 8)}  # heads, KV heads


def _instance(release: Release, connector: str, disable: bool | None, model: str) -> Instance:
    heads, kv_heads = _FACTS[model]
    values: dict[str, Any] = {"vllm_pd_deployment": "x", "vllm_pd_role": "prefill", "vllm_version": release.text,
                              "vllm_model": f"org/{model}", "vllm_model_num_attention_heads": heads,
                              "vllm_model_num_kv_heads": kv_heads, "vllm_model_has_ssm": True,
                              "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": "kv_producer"}}
    if disable is not None:
        values["vllm_disable_hybrid_kv_cache_manager"] = disable
    topo, _ = build([HostVars("p", values)])
    return topo.instances[0]


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_off_failure_is_the_release_s_unify(release: Release) -> None:
    """Per connector and disable flag: HMA resolves off (the release's __post_init__) and a Mamba hybrid's unify
    raises exactly where hma.off_failure reports it, quoting the release's own ValueError."""
    wrong = []
    for connector, disable, model in itertools.product(CONNECTORS, (None, True, False), MAMBA):
        if not registry.registered(connector, release):
            continue
        on = vllm_hma(release, connector, disable)
        if isinstance(on, str):
            continue  # __post_init__ refuses the flag itself
        error = None if on else vllm_unify_error(release, model)
        found = hma.off_failure(_instance(release, connector, disable, model))
        if (error is None) != (found is None) or error and found and f'"{error}"' not in found[0]:
            wrong.append((connector, disable, model, error, found))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:2]}"


def _hosts(connector: str, version: str, model: str, heads: int, kv_heads: int, disable: str) -> str:
    kv = "vllm_kv_transfer_config: {kv_connector: "
    return f"""\
all:
  vars:
    vllm_pd_deployment: hybrid
    vllm_version: "{version}"
    vllm_model: {model}
    vllm_model_num_attention_heads: {heads}
    vllm_model_num_kv_heads: {kv_heads}
    vllm_model_has_ssm: true
{disable}  hosts:
    p1: {{vllm_pd_role: prefill, {kv}{connector}, kv_role: kv_producer}}}}
    d1: {{vllm_pd_role: decode, {kv}{connector}, kv_role: kv_consumer}}}}
"""


_PROMOTE = "ValueError \"Failed to promote local KV cache specs to one unified type.\""
RULE_CASES = [
    # (connector, release, model, heads, KV heads, the disable line, the message's reason, [(line, column)]): the
    # finding sits on the variable that turned HMA off, else on each side's kv_connector
    ("MooncakeConnector", "0.31.0", "ai21labs/AI21-Jamba-Mini-1.7", 32, 8,
     "    vllm_disable_hybrid_kv_cache_manager: true\n", "vllm_disable_hybrid_kv_cache_manager is true", [(9, 5)]),
    ("NixlConnector", "0.33.0", "ibm-granite/granite-4.0-h-small", 32, 8,
     "    vllm_disable_hybrid_kv_cache_manager: yes\n", "vllm_disable_hybrid_kv_cache_manager is true", [(9, 5)]),
    ("LMCacheConnectorV1", "0.32.0", "nvidia/Nemotron-H-8B-Base-8K", 32, 8, "",  # on each side's kv_connector
     "it is unset and LMCacheConnectorV1 does not support it, so VllmConfig.__post_init__ turns it off",
     [(10, 73), (11, 72)]),
]


@pytest.mark.parametrize(("connector", "version", "model", "heads", "kv_heads", "disable", "why", "where"),
                         RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_connector_config_reports_unify(connector: str, version: str, model: str, heads: int, kv_heads: int,
                                        disable: str, why: str, where: list[tuple[int, int]], lint) -> None:
    found = [f for f in lint(_hosts(connector, version, model, heads, kv_heads, disable))
             if f.rule == "connector[config]" and "Mamba/SSM" in f.message]
    message = (f"{model} has Mamba/SSM layers and the hybrid KV cache manager is off ({why}): vLLM {version} does "
               f"not start ({_PROMOTE})")
    assert [(f.message, f.severity, f.origin.line, f.origin.column) for f in found] == \
        [(message, "error", line, col) for line, col in where]
    assert all(f.origin.file.endswith("hosts.yml") for f in found)


def test_multiconnector_fails_alike(lint) -> None:
    """unify runs before any connector (or a MultiConnector's children) is built: a composite fails the same."""
    children = "[{kv_connector: MooncakeConnector}, {kv_connector: OffloadingConnector}]"
    hosts = _hosts("MultiConnector", "0.32.0", "ibm-granite/granite-4.0-h-tiny", 32, 8,
                   "    vllm_disable_hybrid_kv_cache_manager: true\n")
    hosts = hosts.replace("kv_role: kv_producer}", f"kv_role: kv_producer, kv_connector_extra_config: "
                          f"{{connectors: {children}}}}}").replace(
        "kv_role: kv_consumer}", f"kv_role: kv_consumer, kv_connector_extra_config: {{connectors: {children}}}}}")
    found = [f for f in lint(hosts) if f.rule == "connector[config]" and "Mamba/SSM" in f.message]
    assert [(f.message, f.origin.line, f.origin.column) for f in found] == [(
        "ibm-granite/granite-4.0-h-tiny has Mamba/SSM layers and the hybrid KV cache manager is off "
        f"(vllm_disable_hybrid_kv_cache_manager is true): vLLM 0.32.0 does not start ({_PROMOTE})", 9, 5)]

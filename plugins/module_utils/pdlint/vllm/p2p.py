"""P2pNcclConnector (0.9.2 - 0.23.0): what each release does with a P/D pair."""
from __future__ import annotations

from collections.abc import Iterator

from .pair import Problem, Side, family

_C = "kv_connector/v1/p2p/p2p_nccl_connector.py P2pNcclConnector"


@family("p2p-nccl")
def pair(p: Side, d: Side) -> Iterator[Problem]:
    """Rank r talks only to rank r, and pipeline parallelism is not supported."""
    if p.tp != d.tp:
        yield Problem("tp-ratio[p2p-nccl]", "decode", ("tensor_parallel_size",),
                      f"P2pNccl needs equal TP, got prefill TP {p.tp} and decode TP {d.tp}",
                      f"{_C}.check_tensors_except_dim, start_load_kv, save_kv_layer")
    for side in (p, d):
        if side.pp > 1:
            yield Problem("tp-ratio[p2p-nccl]", side.role, ("pipeline_parallel_size",),
                          f"P2pNccl does not support pipeline parallelism (PP {side.pp})",
                          f"{_C}.check_tensors_except_dim (\"Asymmetric TP, PP,and others\")",
                          hint="use pipeline_parallel_size 1", tp_fix=False)

"""Mooncake (V1 MooncakeConnector): what each release does with a P/D pair."""
from __future__ import annotations

from collections.abc import Iterator

from .pair import Problem, Side, family

_C = "kv_connector/v1/mooncake/mooncake_connector.py"


@family("mooncake")
def pair(p: Side, d: Side) -> Iterator[Problem]:
    """0.32.0 behaviour: TP divisibility both ways, equal block sizes."""
    if max(p.tp, d.tp) % min(p.tp, d.tp):
        big, small = ("decode", "prefill") if d.tp > p.tp else ("prefill", "decode")
        yield Problem("tp-ratio[mooncake]", "decode", ("tensor_parallel_size",),
                      f"{big} TP {max(p.tp, d.tp)} is not a multiple of {small} TP {min(p.tp, d.tp)} "
                      "(Mooncake pairs ranks by whole ratios)", f"{_C} _get_tp_ratio")
    if p.block_size is not None and d.block_size is not None and p.block_size != d.block_size:
        yield Problem("pd-mismatch[block-size]", "decode", ("block_size",),
                      f"decode block size {d.block_size} vs prefill block size {p.block_size}: MooncakeConnector "
                      "pairs blocks one to one, so block sizes must be equal",
                      f"{_C} MooncakeConnectorWorker (\"Mooncake KV region length mismatch\")",
                      hint=f"use block size {p.block_size} on decode", tp_fix=False)

"""NIXL (NixlConnector, NixlPullConnector, NixlPushConnector): what each release does with a P/D pair.

In pull mode (NixlConnector / NixlPullConnector) the decode worker reads, so
"local" in vLLM's code is decode and "remote" prefill; NixlPushConnector
(0.24.0+) mirrors it (prefill writes).
"""
from __future__ import annotations

from collections.abc import Iterator

from .pair import Problem, Side, family

_TOPO = "kv_connector/utils.py TransferTopology.tp_ratio"
_BASE = "kv_connector/v1/nixl/base_worker.py NixlBaseConnectorWorker._validate_remote_agent_handshake"


def is_push(side: Side) -> bool:
    return side.connector == "NixlPushConnector"


def _ratio_ok(a: int, b: int) -> bool:
    return max(a, b) % min(a, b) == 0


@family("nixl")
def pair(p: Side, d: Side) -> Iterator[Problem]:
    """0.32.0 behaviour (TP divisibility, P>D replication guard, block sizes)."""
    yield from tp_ratio(p, d)
    yield from replication(p, d)
    yield from block_size(p, d)


def tp_ratio(p: Side, d: Side) -> Iterator[Problem]:
    if _ratio_ok(p.tp, d.tp):
        return
    big, small = ("decode", "prefill") if d.tp > p.tp else ("prefill", "decode")
    yield Problem("tp-ratio[nixl]", "decode", ("tensor_parallel_size",),
                  f"{big} TP {max(p.tp, d.tp)} is not a multiple of {small} TP {min(p.tp, d.tp)} "
                  "(NIXL pairs ranks by whole ratios)", _TOPO)


def replication(p: Side, d: Side) -> Iterator[Problem]:
    k = p.kv_heads
    if k is None or p.mla is None or p.mla or p.ssm:
        return
    push = is_push(p)
    writer, reader = (p, d) if not push else (d, p)
    if writer.tp > reader.tp and writer.tp > k and _ratio_ok(p.tp, d.tp):
        yield Problem(
            "kv-heads[nixl-prefill-replicated]", writer.role, ("tensor_parallel_size",),
            f"{writer.role} TP {writer.tp} > {reader.role} TP {reader.tp} and > {k} KV heads: {writer.role}'s KV "
            f"heads are replicated and NIXL cannot split them for {reader.role}",
            f"{_BASE} (assert not (tp_ratio < 0 and is_kv_replicated))")


def block_size(p: Side, d: Side) -> Iterator[Problem]:
    bp, bd = p.block_size, d.block_size
    if bp is None or bd is None or bp == bd:
        return
    push = is_push(p)
    reader, remote = (bd, bp) if not push else (bp, bd)
    split = not p.mla and not p.ssm and (p.tp > d.tp if not push else d.tp > p.tp)
    if split:
        why = "NIXL needs equal block sizes when prefill TP > decode TP" if not push else \
            "NIXL push needs equal block sizes when decode TP > prefill TP"
    elif reader % remote:
        side = "decode" if not push else "prefill"
        why = f"NIXL needs the {side} block size to be a multiple of the other side's"
    else:
        return
    yield Problem("pd-mismatch[block-size]", "decode", ("block_size",),
                  f"decode block size {bd} vs prefill block size {bp}: {why}",
                  "kv_connector/utils.py TransferTopology.block_size_ratio; " + _BASE,
                  hint=f"use block size {bp} on decode" if bp < bd else f"use block size {bp} on both sides",
                  tp_fix=False)

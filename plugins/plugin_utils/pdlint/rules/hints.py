"""Hints that work: TP sizes found by asking the same checks the rules ask, never a formula of their own."""
from __future__ import annotations

import dataclasses
import functools

from ..topology.types import Engine
from ..vllm import pair as vpair
from ..vllm import parallel
from ..vllm.registry import nearest
from .base import words

_LIMIT = 256  # the largest TP size a hint considers


def _fits(side: vpair.Side, tp: int, gpus: int | None, dp_local: int, nnodes: int) -> bool:
    """The engine passes its own checks at TP tp: heads, KV-head split, and the node's GPUs."""
    if not (parallel.heads_ok(tp, side.heads) and parallel.kv_split_ok(tp, side.kv_heads, side.mla)):
        return False
    if gpus is not None:
        return tp * side.pp * dp_local <= gpus * max(nnodes, 1)
    return True


def _solves(problems: tuple[vpair.Problem, ...], remaining: frozenset[str]) -> bool:
    """No problem left but those no TP size causes or fixes (a block-size mismatch, say)."""
    return all(not pr.tp_fix and pr.rule in remaining for pr in problems)


def valid_tp(engine: Engine, side: vpair.Side, other: vpair.Side, near: int) -> list[int]:
    """TP sizes for side (near its current one) with which the pair has no TP problem in its release."""
    return nearest(sorted(candidates(engine, side, other)), near)


def candidates(engine: Engine, side: vpair.Side, other: vpair.Side) -> frozenset[int]:
    """Every TP size for side that passes the engine's own checks and leaves the pair no TP problem."""
    lead = engine.lead
    return _candidates(side, other, lead.gpu_count, lead.dp_local, lead.nnodes)


@functools.lru_cache(maxsize=4096)
def _candidates(side: vpair.Side, other: vpair.Side, gpus: int | None, dp_local: int,
                nnodes: int) -> frozenset[int]:
    # Asked once per finding and per instance of a pair (hints, tp[*] hints): the search is 256 pair checks.
    now = vpair.problems(*((side, other) if side.role == "prefill" else (other, side)))
    remaining = frozenset(pr.rule for pr in now if not pr.tp_fix)
    found = []
    for tp in range(1, _LIMIT + 1):
        if not _fits(side, tp, gpus, dp_local, nnodes):
            continue
        moved = dataclasses.replace(side, tp=tp)
        if _solves(vpair.problems(*((moved, other) if side.role == "prefill" else (other, moved))), remaining):
            found.append(tp)
    return frozenset(found)


def tp_hint(p: Engine, d: Engine, sp: vpair.Side, sd: vpair.Side) -> str | None:
    """"use decode TP 4 or 8", else a prefill TP, else None when no TP size fixes the pair."""
    decode = valid_tp(d, sd, sp, sd.tp)
    if decode:
        return f"use decode TP {words(decode)}"
    prefill = valid_tp(p, sp, sd, sp.tp)
    if prefill:
        return f"use prefill TP {words(prefill)}"
    return None

"""MoRIIO's rank math, as vLLM 0.32.0 does it.

Source: vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_connector.py
(get_moriio_remote_tp_rank, get_moriio_expected_ack_count,
validate_moriio_heterogeneous_tp_kv_heads) and moriio_common.py
(get_moriio_mode, get_port_offset, MoRIIOConstants).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .pair import Problem, Side, family

_C = "kv_connector/v1/moriio/moriio_connector.py"

DEFAULT_HANDSHAKE_PORT = 6301
DEFAULT_NOTIFY_PORT = 61005
# moriio_common._DEPRECATED_ENV_VARS: logged as deprecated and ignored in 0.32.0.
IGNORED_ENV = ("VLLM_MORIIO_CONNECTOR_READ_MODE", "VLLM_MORIIO_QP_PER_TRANSFER",
               "VLLM_MORIIO_POST_BATCH_SIZE", "VLLM_MORIIO_NUM_WORKERS")


def read_mode(extra: Mapping[str, Any]) -> bool:
    """moriio_common.get_moriio_mode: READ iff read_mode is "true" or "1" (any case)."""
    return str(extra.get("read_mode", "false")).lower().strip() in ("true", "1")


def remote_tp_rank(local_tp_rank: int, local_tp_size: int, remote_tp_size: int) -> int:
    """get_moriio_remote_tp_rank: the remote rank a local rank pairs with (ValueError if invalid)."""
    if local_tp_size <= 0 or remote_tp_size <= 0:
        raise ValueError("TP sizes must be positive")
    if not 0 <= local_tp_rank < local_tp_size:
        raise ValueError(f"local_tp_rank {local_tp_rank} must be in [0, {local_tp_size})")
    if remote_tp_size == local_tp_size:
        return local_tp_rank
    if remote_tp_size > local_tp_size:
        if remote_tp_size % local_tp_size != 0:
            raise ValueError(f"remote tp_size {remote_tp_size} must be a multiple of local "
                             f"tp_size {local_tp_size} for heterogeneous-TP P/D")
        return local_tp_rank * (remote_tp_size // local_tp_size)
    if local_tp_size % remote_tp_size != 0:
        raise ValueError(f"local tp_size {local_tp_size} must be a multiple of remote "
                         f"tp_size {remote_tp_size} for heterogeneous-TP P/D")
    return local_tp_rank // (local_tp_size // remote_tp_size)


def ack_count(producer_tp_size: int, consumer_tp_size: int) -> int:
    """get_moriio_expected_ack_count: release acks a prefill rank waits for (ValueError if invalid)."""
    if producer_tp_size <= 0 or consumer_tp_size <= 0:
        raise ValueError("TP sizes must be positive")
    if consumer_tp_size <= producer_tp_size:
        return 1
    if consumer_tp_size % producer_tp_size != 0:
        raise ValueError(f"consumer tp_size {consumer_tp_size} must be a multiple of "
                         f"producer tp_size {producer_tp_size} for heterogeneous-TP P/D")
    return consumer_tp_size // producer_tp_size


def kv_heads_ok(local_tp_size: int, remote_tp_size: int, total_num_kv_heads: int, is_mla: bool) -> bool:
    """validate_moriio_heterogeneous_tp_kv_heads: heterogeneous TP needs replicated KV heads."""
    if is_mla or local_tp_size == remote_tp_size:
        return True
    return min(local_tp_size, remote_tp_size) >= total_num_kv_heads


def port_offset(dp_local_rank: int, tp_rank: int) -> int:
    """get_port_offset as the listeners call it in 0.32.0 (tp_size left at 1): dp + tp."""
    return dp_local_rank + tp_rank


def _read(side: Side) -> bool:
    return read_mode(dict(side.extra))


@family("moriio")
def pair(p: Side, d: Side) -> Iterator[Problem]:
    """0.32.0 behaviour: rank map and ack count, write-mode alignment, KV-head guard, block sizes."""
    read = _read(p) and _read(d)
    if max(p.tp, d.tp) % min(p.tp, d.tp):
        if d.tp > p.tp:
            message = f"decode TP {d.tp} is not a multiple of prefill TP {p.tp} (MoRIIO needs {d.tp}/{p.tp} acks)"
        else:
            message = f"prefill TP {p.tp} is not a multiple of decode TP {d.tp} (MoRIIO rank map)"
        yield Problem("tp-ratio[moriio]", "decode", ("tensor_parallel_size",), message,
                      f"{_C} get_moriio_remote_tp_rank, get_moriio_expected_ack_count")
    elif not read and p.tp != d.tp:
        yield Problem("tp-ratio[moriio-write]", "decode", ("tensor_parallel_size", "extra.read_mode"),
                      f"MoRIIO write mode with prefill TP {p.tp} and decode TP {d.tp}: write-mode notifications "
                      "only line up when the TP sizes are equal",
                      f"{_C} MoRIIOConnectorScheduler.update_state_after_alloc; moriio_engine.py "
                      "MoRIIOWriter._execute_write_task (no check: the transfer hangs)",
                      hint=f"set kv_connector_extra_config.read_mode: \"true\" on both sides, or use decode TP {p.tp}")
    k, mla = p.kv_heads, p.mla
    if read and k is not None and mla is not None and not kv_heads_ok(d.tp, p.tp, k, mla):
        small = p if p.tp < d.tp else d
        yield Problem("kv-heads[moriio-replicated]", small.role, ("tensor_parallel_size",),
                      f"MoRIIO heterogeneous TP (prefill {p.tp}, decode {d.tp}) needs KV heads replicated on both "
                      f"sides, but {small.role} TP {small.tp} < {k} KV heads",
                      f"{_C} validate_moriio_heterogeneous_tp_kv_heads")
    if p.block_size is not None and d.block_size is not None and p.block_size != d.block_size:
        yield Problem("pd-mismatch[block-size]", "decode", ("block_size",),
                      f"decode block size {d.block_size} vs prefill block size {p.block_size}: MoRIIOConnector "
                      "pairs blocks one to one, so block sizes must be equal",
                      f"{_C} (block ids are paired 1:1; no check)", hint=f"use block size {p.block_size} on decode",
                      tp_fix=False)

"""MoRIIO's rank math and pair check, release by release (MoRIIOConnector is registered from 0.14.0).

Source: vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_connector.py
(get_moriio_remote_tp_rank, get_moriio_expected_ack_count,
validate_moriio_heterogeneous_tp_kv_heads: 0.25.0+), moriio_tp_mapping.py
(validate_write_tp_topology: 0.33.0) and moriio_common.py (get_moriio_mode,
get_port_offset). Settings and ports: vllm/connectors/moriio/config.py.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ...history import history
from ...parallel import tp_ratio_ok
from ...releases import Release, Timeline
from ..pair import Problem, Side

_C = "kv_connector/v1/moriio/moriio_connector.py"
_COMMON = "kv_connector/v1/moriio/moriio_common.py"
_MAP = "kv_connector/v1/moriio/moriio_tp_mapping.py"

MODE = Timeline(
    "MoRIIO READ/WRITE switch",
    ("0.14.0", "env", f"{_COMMON} get_moriio_mode (envs.VLLM_MORIIO_CONNECTOR_READ_MODE)",
     "READ when env VLLM_MORIIO_CONNECTOR_READ_MODE is true or 1; kv_connector_extra_config.read_mode is not read"),
    ("0.23.0", "extra", f"{_COMMON} get_moriio_mode(kv_transfer_config), _warn_deprecated_env_vars",
     "READ when kv_connector_extra_config.read_mode is 'true' or '1'; the env variable is deprecated and ignored"),
)
READ_TP = history("tp-ratio[moriio]", Timeline(
    "MoRIIO READ mode, prefill TP != decode TP",
    ("0.14.0", "none", f"{_C} MoRIIOConnectorWorker._moriio_handshake (dials its own TP rank; no check)",
     "no rank map: decode rank r reads prefill rank r; unequal TP is not checked (wrong KV or a hang)"),
    ("0.25.0", "rank-map", f"{_C} get_moriio_remote_tp_rank, get_moriio_expected_ack_count",
     "rank map: the larger TP must be a multiple of the smaller (decode handshake), and decode TP a multiple of "
     "prefill TP when larger (prefill's ack count)"),
))
KV_GUARD = history("kv-heads[moriio-replicated]", Timeline(
    "MoRIIO READ mode KV-head guard",
    ("0.14.0", False, f"{_C} (no KV-head check before 0.25.0)", "no check (unequal TP is tp-ratio[moriio]'s)"),
    ("0.25.0", True, f"{_C} validate_moriio_heterogeneous_tp_kv_heads",
     "heterogeneous TP needs min(prefill TP, decode TP) >= K unless MLA"),
))
WRITE_TP = history("tp-ratio[moriio-write]", Timeline(
    "MoRIIO WRITE mode, prefill TP != decode TP",
    ("0.14.0", "none", f"{_C} MoRIIOConnectorWorker._moriio_handshake; moriio_engine.py MoRIIOWriter "
     "(no check: prefill rank r writes decode rank r)",
     "equal TP only; unequal TP is not checked (a hang or wrong KV)"),
    ("0.25.0", "handshake", f"{_C} MoRIIOConnectorWorker._remote_tp_rank (get_moriio_remote_tp_rank on prefill); "
     "moriio_engine.py MoRIIOWriter (no head mapping)",
     "equal TP only: writes carry no head mapping (unchecked); from 0.27.0, given remote_tp_size, the prefill "
     "handshake also rejects TP sizes that are not multiples of each other"),
    ("0.33.0", "mapping", f"{_MAP} validate_write_tp_topology, compute_write_tp_mapping",
     "fan-out/fan-in mapping: one TP a multiple of the other, each TP dividing K or a multiple of K (MLA exempt)"),
))
WRITE_PEER_TP = history("tp-ratio[moriio-write]", Timeline(
    "MoRIIO WRITE: the decode TP size the prefill handshake assumes",
    ("0.14.0", "unused", f"{_C} MoRIIOConnectorWorker._moriio_handshake (dials its own TP rank)",
     "not used: prefill rank r dials decode rank r"),
    ("0.25.0", "default-1", f"{_COMMON} MoRIIOConnectorMetadata.add_new_req kv_transfer_params.get(\"tp_size\", 1)",
     "kv_transfer_params tp_size, default 1: write requests carry none, so every prefill rank maps to decode "
     "rank 0 (\"rank collapse\", vLLM's 0.27.0 comment)"),
    ("0.27.0", "default-equal", f"{_COMMON} MoRIIOConnectorMetadata.add_new_req (remote_tp_size or tp_size or 0); "
     f"{_C} MoRIIOConnectorWorker._remote_tp_rank (0: equal TP)", "missing means equal TP"),
))
HYBRID = history("tp-ratio[moriio]", Timeline(
    "MoRIIO hybrid (Mamba/KDA) models",
    ("0.14.0", "none", f"{_C} (no hybrid Mamba/KDA transfer)", "no Mamba-specific check"),
    ("0.31.0", "read-only", f"{_C} MoRIIOConnectorWorker.register_kv_caches, _mamba_tp_ratio",
     "READ mode only (WRITE raises MoRIIOError), and equal TP (NotImplementedError)"),
    ("0.33.0", "read-equal", f"{_C} MoRIIOConnectorWorker._mamba_tp_ratio; {_MAP} compute_write_tp_mapping",
     "READ needs equal TP; WRITE maps the state slices across TP sizes"),
))
DIAL = history("tp-ratio[moriio]", Timeline(
    "MoRIIO READ handshake dial offset (listener: handshake_port + DP rank + TP rank)",
    ("0.14.0", "dp+tp", f"{_C} MoRIIOConnectorWorker._moriio_handshake get_port_offset(remote_dp_rank, tp_rank)",
     "dials handshake_port + DP rank + TP rank, as the listener binds"),
    ("0.27.0", "dp*tp+tp", f"{_C} MoRIIOConnectorWorker._moriio_handshake "
     "get_port_offset(remote_dp_rank, dial_tp_rank, remote_tp_size)",
     "dials handshake_port + DP rank x prefill TP + TP rank; the listener still binds + DP rank + TP rank"),
    ("0.28.0", "dp_local*tp+tp", f"{_C} MoRIIOConnectorWorker._background_moriio_handshake (fold_local_rank)",
     "dials with the pod-local DP rank: only a host running several DP ranks of TP > 1 misdials (and its "
     "listeners collide: port[collision])"),
))


def read_mode(extra: Mapping[str, Any], env: Mapping[str, Any] | None = None, release: Release | None = None) -> bool:
    """moriio_common.get_moriio_mode: READ iff the release's switch is "true" or "1" (any case)."""
    if release is not None and MODE.at(release) == "env":
        return str((env or {}).get("VLLM_MORIIO_CONNECTOR_READ_MODE", "False")).lower() in ("true", "1")
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


def paired_rank(local_tp_rank: int, local_tp_size: int, remote_tp_size: int, release: Release) -> int:
    """The remote rank a local rank exchanges KV with in release (before 0.25.0: its own rank, if it exists)."""
    if READ_TP.at(release) == "rank-map":
        return remote_tp_rank(local_tp_rank, local_tp_size, remote_tp_size)
    if not 0 <= local_tp_rank < local_tp_size:
        raise ValueError(f"local_tp_rank {local_tp_rank} must be in [0, {local_tp_size})")
    if local_tp_size != remote_tp_size:
        raise ValueError(f"MoRIIO in vLLM {release} has no rank map: local TP {local_tp_size} and remote TP "
                         f"{remote_tp_size} must be equal")
    return local_tp_rank


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


def write_topology_error(producer_tp: int, consumer_tp: int, kv_heads: int | None, is_mla: bool | None) -> str | None:
    """validate_write_tp_topology (0.33.0): vLLM's message, or None if the WRITE mapping accepts the pair."""
    larger, smaller = max(producer_tp, consumer_tp), min(producer_tp, consumer_tp)
    if larger % smaller:
        return (f"MoRIIO WRITE needs one TP size to be a multiple of the other, got producer tp_size={producer_tp}, "
                f"consumer tp_size={consumer_tp}")
    if is_mla or producer_tp == consumer_tp or kv_heads is None or is_mla is None:
        return None
    for tp in (producer_tp, consumer_tp):
        if (tp <= kv_heads and kv_heads % tp) or (tp > kv_heads and tp % kv_heads):
            return f"MoRIIO WRITE cannot shard {kv_heads} KV heads over tp_size={tp}"
    return None


def port_offset(dp_rank: int, tp_rank: int, tp_size: int = 1) -> int:
    """get_port_offset(dp_rank, tp_rank, tp_size=1) = dp_rank * tp_size + tp_rank (unchanged 0.14.0 - 0.33.0)."""
    return dp_rank * tp_size + tp_rank


def side_read(side: Side) -> bool:
    """The side's mode as its own release reads it."""
    return read_mode(dict(side.extra), dict(side.env), side.release)


def _mode_note(side: Side) -> str:
    if MODE.at(side.release) == "env":
        return f" (vLLM {side.release} takes the mode from VLLM_MORIIO_CONNECTOR_READ_MODE)"
    return ""


def pair(p: Side, d: Side) -> Iterator[Problem]:
    """Every problem of a MoRIIO pair in the releases its sides run (decode's for READ, prefill's for WRITE)."""
    read = side_read(p) and side_read(d)
    yield from (_read(p, d) if read else _write(p, d))
    rel = d.release if read else p.release
    hybrid = HYBRID.at(rel)
    if p.ssm and p.tp != d.tp and (hybrid == "read-only" or (hybrid == "read-equal" and read)):
        yield Problem("tp-ratio[moriio]", "decode", ("tensor_parallel_size",),
                      f"hybrid Mamba/KDA model with prefill TP {p.tp} and decode TP {d.tp}: MoRIIO in vLLM {rel} "
                      "transfers recurrent state only between equal TP sizes", HYBRID.step(rel).source)
    if p.ssm and not read and HYBRID.at(p.release) == "read-only":
        yield Problem("tp-ratio[moriio-write]", "prefill", ("extra.read_mode", "kv_connector_extra_config"),
                      f"hybrid Mamba/KDA model in MoRIIO write mode: vLLM {p.release} implements hybrid transfer "
                      "for read mode only (MoRIIOError at startup)", HYBRID.step(p.release).source,
                      hint="set kv_connector_extra_config.read_mode: \"true\" on both sides", tp_fix=False)
    if DIAL.at(d.release) == "dp*tp+tp" and read and p.dp > 1 and p.tp > 1:
        yield Problem("tp-ratio[moriio]", "prefill", ("data_parallel_size",),
                      f"prefill DP {p.dp} with TP {p.tp}: in vLLM {d.release} decode dials prefill DP rank k at "
                      f"handshake_port + k*{p.tp} + rank, but prefill listens at handshake_port + k + rank (vLLM "
                      "does not check this: the handshake reaches the wrong rank or hangs)",
                      DIAL.step(d.release).source, hint="run prefill with DP 1 per engine, or TP 1", tp_fix=False)
    if p.block_size is not None and d.block_size is not None and p.block_size != d.block_size:
        yield Problem("pd-mismatch[block-size]", "decode", ("block_size",),
                      f"decode block size {d.block_size} vs prefill block size {p.block_size}: MoRIIOConnector "
                      "pairs blocks one to one, so block sizes must be equal",
                      f"{_C} (block ids are paired 1:1; no check)", hint=f"use block size {p.block_size} on decode",
                      tp_fix=False)


def _read(p: Side, d: Side) -> Iterator[Problem]:
    rel = d.release  # decode dials, maps ranks and reads
    if READ_TP.at(rel) == "none":
        if p.tp != d.tp:
            yield Problem("tp-ratio[moriio]", "decode", ("tensor_parallel_size",),
                          f"decode TP {d.tp} differs from prefill TP {p.tp}: MoRIIO read mode in vLLM {rel} pairs "
                          f"decode rank r with prefill rank r (vLLM {rel} does not check this: the transfer reads "
                          "the wrong KV or hangs)", READ_TP.step(rel).source)
        return
    if not tp_ratio_ok(p.tp, d.tp):
        if d.tp > p.tp:
            message = f"decode TP {d.tp} is not a multiple of prefill TP {p.tp} (MoRIIO needs {d.tp}/{p.tp} acks)"
        else:
            message = f"prefill TP {p.tp} is not a multiple of decode TP {d.tp} (MoRIIO rank map)"
        yield Problem("tp-ratio[moriio]", "decode", ("tensor_parallel_size",), message, READ_TP.step(rel).source)
    k, mla = p.kv_heads, p.mla
    if k is not None and mla is not None and not kv_heads_ok(d.tp, p.tp, k, mla):
        small = p if p.tp < d.tp else d
        yield Problem("kv-heads[moriio-replicated]", small.role, ("tensor_parallel_size",),
                      f"MoRIIO heterogeneous TP (prefill {p.tp}, decode {d.tp}) needs KV heads replicated on both "
                      f"sides, but {small.role} TP {small.tp} < {k} KV heads (vLLM {rel})",
                      KV_GUARD.step(rel).source)


def _write(p: Side, d: Side) -> Iterator[Problem]:
    rel = p.release  # prefill dials, maps ranks and writes
    step = WRITE_TP.step(rel)
    if step.value == "mapping":
        error = write_topology_error(p.tp, d.tp, p.kv_heads, p.mla)
        if error:
            yield Problem("tp-ratio[moriio-write]", "decode", ("tensor_parallel_size",),
                          f"MoRIIO write mode with prefill TP {p.tp} and decode TP {d.tp}: vLLM {rel} raises "
                          f"\"{error}\"", step.source)
        return
    if WRITE_PEER_TP.at(rel) == "default-1" and p.tp > 1:
        yield Problem("tp-ratio[moriio-write]", "prefill", ("version", "tensor_parallel_size"),
                      f"MoRIIO write mode in vLLM {rel} with prefill TP {p.tp}: write requests carry no tp_size, so "
                      "the prefill handshake maps every prefill rank to decode rank 0 (\"rank collapse\", fixed in "
                      "vLLM 0.27.0; vLLM does not check this: the KV lands on the wrong ranks)",
                      WRITE_PEER_TP.step(rel).source, tp_fix=False,
                      hint="use vLLM 0.27.0 or later, or read mode, or a router that sends tp_size (the decode TP) "
                           "in kv_transfer_params")
    if p.tp == d.tp:
        return
    if WRITE_PEER_TP.at(rel) == "default-equal" and not tp_ratio_ok(p.tp, d.tp):
        error = (f"remote tp_size {d.tp} must be a multiple of local tp_size {p.tp}" if d.tp > p.tp else
                 f"local tp_size {p.tp} must be a multiple of remote tp_size {d.tp}")
        message = (f"MoRIIO write mode{_mode_note(p)} with prefill TP {p.tp} and decode TP {d.tp}: the prefill "
                   f"handshake in vLLM {rel} raises \"{error}\" (given the decode TP as remote_tp_size, as the "
                   "proxy sends it), and write mode needs equal TP anyway")
    else:
        message = (f"MoRIIO write mode{_mode_note(p)} with prefill TP {p.tp} and decode TP {d.tp}: write mode in "
                   f"vLLM {rel} only works with equal TP sizes (vLLM {rel} does not check this: prefill ranks write "
                   "their KV shards without head mapping and notify the decode rank of their own TP rank, so the "
                   "transfer hangs or the KV lands misplaced)")
    yield Problem("tp-ratio[moriio-write]", "decode", ("tensor_parallel_size", "extra.read_mode"), message,
                  step.source, hint=_read_hint(p, d))


def _read_hint(p: Side, d: Side) -> str | None:
    """Read mode as the fix, when read mode pairs these TP sizes in these releases (else: a TP search)."""
    if READ_TP.at(d.release) != "rank-map" or list(_read(p, d)):
        return None
    switch = ("kv_connector_extra_config.read_mode: \"true\"" if MODE.at(p.release) == MODE.at(d.release) == "extra"
              else "read mode (VLLM_MORIIO_CONNECTOR_READ_MODE=1 before vLLM 0.23.0, else read_mode: \"true\")")
    return f"set {switch} on both sides, or use decode TP {p.tp}"

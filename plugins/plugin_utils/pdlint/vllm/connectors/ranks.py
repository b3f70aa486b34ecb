"""Which remote TP ranks a local rank exchanges KV with, per connector and release, and the KV heads a rank holds."""
from __future__ import annotations

from ..releases import DEFAULT, Release
from . import moriio, nixl


def remote_ranks(local_rank: int, local_tp: int, remote_tp: int, connector: str = "moriio",
                 release: Release = DEFAULT) -> list[int]:
    """Remote TP ranks a local rank exchanges KV with (MoRIIO READ rank map, or NIXL's handshake targets) in release."""
    if connector == "moriio":
        return [moriio.paired_rank(local_rank, local_tp, remote_tp, release)]
    return nixl_targets(local_rank, local_tp, remote_tp, release)


def nixl_targets(local_rank: int, local_tp: int, remote_tp: int, release: Release = DEFAULT) -> list[int]:
    """The remote TP ranks a NIXL reader (decode in pull mode) reads from in release; ValueError where vLLM fails.

    0.9.0: the handshake dials port + own rank (no tp_ratio). 0.9.1 - 0.13.0: tp_ratio = local // remote and
    `tp_rank // tp_ratio` (_nixl_handshake, then TpKVTopology.get_target_remote_rank). 0.14.0+:
    TpKVTopology.get_target_remote_ranks / TransferTopology.handshake_target_ranks (either side may be larger).
    """
    if not 0 <= local_rank < local_tp or remote_tp <= 0:
        raise ValueError(f"rank {local_rank} of TP {local_tp} with remote TP {remote_tp}")
    how = nixl.TP_PAIRING.at(release)
    if how == "equal":
        if local_tp != remote_tp:
            raise ValueError(f"NIXL in vLLM {release} pairs rank r with rank r: TP {local_tp} and {remote_tp} differ")
        return [local_rank]
    if local_tp >= remote_tp or how == "decode-multiple":
        if local_tp % remote_tp:
            raise ValueError(f"Local tensor parallel size {local_tp} is not divisible by remote tensor parallel "
                             f"size {remote_tp}.")
        return [local_rank // (local_tp // remote_tp)]
    if remote_tp % local_tp:
        raise ValueError(f"Remote tensor parallel size {remote_tp} is not divisible by local tensor parallel "
                         f"size {local_tp}.")
    ratio = remote_tp // local_tp
    return [local_rank * ratio + i for i in range(ratio)]


def nixl_notifications(prefill_tp: int, decode_tp: int) -> int:
    """Completion notifications a NIXL prefill rank waits for before freeing a request's blocks (pull mode).

    Decode sends `req_id:tp_ratio` (0.9.1 - 0.13.0); from 0.14.0 consumers_per_producer = -tp_ratio when more
    consumers than producers, else 1 (_get_new_notifs; 0.30.0+ TransferTopology.dcp_consumer_count).
    """
    return max(1, decode_tp // prefill_tp)


def moriio_write_targets(prefill_rank: int, prefill_tp: int, decode_tp: int, kv_heads: int | None,
                         mla: bool | None, ssm: bool | None, release: Release = DEFAULT) -> list[int]:
    """Decode TP ranks a MoRIIO WRITE-mode prefill rank writes into, in release (ValueError where vLLM fails).

    Before 0.25.0 each rank writes its own rank; 0.25.0 - 0.26.0 requests carry no tp_size (read as 1), so every
    rank maps to decode rank 0; 0.27.0 - 0.32.0 get_moriio_remote_tp_rank with the decode TP; 0.33.0
    moriio_tp_mapping.compute_write_tp_mapping (fan-out, or fan-in where only the first holder of a head writes).
    """
    if not 0 <= prefill_rank < prefill_tp:
        raise ValueError(f"prefill rank {prefill_rank} must be in [0, {prefill_tp})")
    how = moriio.WRITE_TP.at(release)
    if how == "none":
        if prefill_rank >= decode_tp:
            raise ValueError(f"decode TP {decode_tp} has no rank {prefill_rank}")
        return [prefill_rank]
    if how == "handshake":
        peer = 1 if moriio.WRITE_PEER_TP.at(release) == "default-1" else decode_tp
        return [moriio.remote_tp_rank(prefill_rank, prefill_tp, peer)]
    error = moriio.write_topology_error(prefill_tp, decode_tp, kv_heads, bool(mla))
    if error:
        raise ValueError(error)
    if decode_tp >= prefill_tp:
        ratio = decode_tp // prefill_tp
        return [prefill_rank * ratio + j for j in range(ratio)]
    if not mla and not kv_heads:
        raise ValueError("the model's KV heads are unknown: which prefill rank writes a head cannot be told")
    heads = 1 if mla else kv_heads or 1
    ratio = prefill_tp // decode_tp
    target = prefill_rank // ratio
    own = rank_heads(prefill_rank, prefill_tp, heads)[0]
    first = next(q for q in range(target * ratio, (target + 1) * ratio) if rank_heads(q, prefill_tp, heads)[0] == own)
    return [target] if first == prefill_rank or ssm else []


def rank_heads(tp_rank: int, tp: int, kv_heads: int) -> range:
    """KV heads TP rank tp_rank holds (QKVParallelLinear: K/TP each, or one replicated head when TP > K).

    The same formula as MoRIIO 0.33.0's moriio_tp_mapping._rank_heads.
    """
    if tp <= kv_heads:
        per_rank = kv_heads // tp
        return range(tp_rank * per_rank, (tp_rank + 1) * per_rank)
    head = tp_rank * kv_heads // tp
    return range(head, head + 1)

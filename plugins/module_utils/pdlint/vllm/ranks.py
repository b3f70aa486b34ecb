"""Which remote TP ranks a local rank exchanges KV with, per connector."""
from __future__ import annotations

from . import moriio
from . import registry as connectors
from .releases import DEFAULT, Release


def remote_ranks(local_rank: int, local_tp: int, remote_tp: int, connector: str = "moriio",
                 release: Release = DEFAULT) -> list[int]:
    """Remote TP ranks a local rank exchanges KV with (MoRIIO rank map in release, or NIXL handshake_target_ranks)."""
    if connector == "moriio":
        return [moriio.paired_rank(local_rank, local_tp, remote_tp, release)]
    if not connectors.tp_ratio_ok(local_tp, remote_tp):
        raise ValueError(f"TP sizes {local_tp} and {remote_tp} are not multiples of each other")
    if local_tp >= remote_tp:  # kv_connector/utils.py TransferTopology.handshake_target_ranks
        return [local_rank // (local_tp // remote_tp)]
    ratio = remote_tp // local_tp
    return [local_rank * ratio + i for i in range(ratio)]

"""How one engine's TP splits the model's heads and which GPUs its workers take (the same in every release pdlint
knows)."""
from __future__ import annotations

from collections.abc import Mapping


def heads_ok(tp: int, heads: int | None) -> bool:
    """config/model.py ModelConfig.verify_with_parallel_config: H % TP == 0."""
    return not heads or heads % tp == 0


def kv_split_ok(tp: int, kv_heads: int | None, mla: bool | None) -> bool:
    """model_executor/layers/linear.py QKVParallelLinear: replicate K when TP >= K (TP % K == 0), else split it.

    MLA models have one latent KV per rank, so only heads_ok applies to them.
    """
    if not kv_heads or mla is not False:
        return True
    return tp % kv_heads == 0 if tp >= kv_heads else kv_heads % tp == 0


def visible_devices(env: Mapping[str, object]) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as a list of device names (None when unset)."""
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return None
    return [d.strip() for d in str(raw).split(",") if d.strip()]


def rank_devices(tp: int, pp: int, dp_local: int, nnodes: int, node_rank: int,
                 visible: list[str] | None) -> list[tuple[int, int, int, str | None]]:
    """(local DP index, PP rank, TP rank, CUDA device) of every worker this node runs, in vLLM's order.

    A DP engine takes the node's devices [dp_index * W, (dp_index + 1) * W) with W = TP x PP / nnodes (v1/engine
    utils.py set_device_control_env_var), and worker rank pp_rank * TP + tp_rank sits on local device
    rank - node_rank * W (nnodes > 1 splits one engine's ranks over its hosts in order). Without
    CUDA_VISIBLE_DEVICES the devices are 0, 1, ...; None: the list is shorter than the workers (gpu[count]).
    """
    per_node = tp * pp // max(nnodes, 1)
    devices: list[tuple[int, int, int, str | None]] = []
    for dp_index in range(dp_local):
        for local in range(per_node):
            rank = node_rank * per_node + local
            slot = dp_index * per_node + local
            name = str(slot) if visible is None else (visible[slot] if slot < len(visible) else None)
            devices.append((dp_index, rank // tp, rank % tp, name))
    return devices


def tp_ratio_ok(a: int, b: int) -> bool:
    """The larger TP is a multiple of the smaller: the whole-ratio rank maps (NIXL, Mooncake, MoRIIO) need it."""
    return max(a, b) % min(a, b) == 0

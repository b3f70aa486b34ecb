"""How one engine's TP must split the model's heads (the same in every release pdlint knows)."""
from __future__ import annotations


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

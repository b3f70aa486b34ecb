"""A checkpoint's weight bytes from its config.json alone: the parameter count of the layers every decoder of these
families has, times the checkpoint dtype's size. A lower bound of the safetensors index's metadata.total_size
(biases, extra norms and quantization scales are left out), used where no index file is at hand. Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the config's torch_dtype (dtype in newer files): bytes per parameter of the checkpoint
_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
# model types whose layers are attention + a gated MLP (three matrices) or a mixture of such experts
_DENSE = frozenset({"llama", "mistral", "qwen2", "qwen3"})
_MOE = frozenset({"mixtral", "qwen3_moe"})


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def parameters(config: Mapping[str, Any]) -> int | None:
    """Parameters of a config of the families above (None for others): embeddings, the LM head unless tied,
    per layer q/k/v/o and the MLP (each expert's, and the router), and the norms."""
    kind = config.get("model_type")
    hidden, heads, layers, vocab = (_int(config.get(k)) for k in
                                    ("hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size"))
    if kind not in _DENSE | _MOE or not (hidden and heads and layers and vocab):
        return None
    kv_heads = _int(config.get("num_key_value_heads")) or heads
    head = _int(config.get("head_dim")) or hidden // heads
    attention = hidden * head * (2 * heads + 2 * kv_heads)  # q and o: heads; k and v: KV heads
    if kind in _MOE:
        experts = _int(config.get("num_local_experts") or config.get("num_experts"))
        inner = _int(config.get("moe_intermediate_size") or config.get("intermediate_size"))
        if not (experts and inner):
            return None
        mlp = experts * 3 * hidden * inner + hidden * experts
    else:
        inner = _int(config.get("intermediate_size"))
        if not inner:
            return None
        mlp = 3 * hidden * inner
    head_norms = 2 * head if kind in ("qwen3", "qwen3_moe") else 0  # q_norm, k_norm
    per_layer = attention + mlp + 2 * hidden + head_norms
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    return embeddings + layers * per_layer + hidden


def weight_bytes(config: Mapping[str, Any]) -> int | None:
    """parameters() times the checkpoint dtype's bytes; None when either is unknown."""
    if config.get("quantization_config") is not None:  # a quantized checkpoint: its bytes are not the dtype's
        return None
    count = parameters(config)
    size = _DTYPE_BYTES.get(str(config.get("torch_dtype") or config.get("dtype") or ""))
    return count * size if count is not None and size is not None else None

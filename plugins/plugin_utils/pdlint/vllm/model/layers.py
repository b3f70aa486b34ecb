"""How many layers a model has and which kind each is, as a vLLM release reads config.json; the layers of a PP stage.

The kinds: "full" (full attention), "sliding" (sliding-window attention), "chunked" (chunked local attention:
Llama 4's RoPE layers, vllm/model/chunked.py), "mamba" (Mamba/SSM), "linear" (linear
attention: gated DeltaNet, lightning attention), "none" (a layer that keeps no KV cache: an MLP or MoE-only
block, a no-op attention block). vLLM counts them in ModelConfig.get_num_layers_by_block_type (vllm/config.py
0.8.5 - 0.10.1.1, vllm/config/__init__.py 0.10.2, vllm/config/model.py 0.11.0 -), whose branches this follows:
- attention-free models (Mamba, FalconMamba): every layer is Mamba;
- has_noops (Nemotron-NAS block_configs): a block whose attention is no_op holds no attention;
- hybrids: `layers_block_type` (Jamba, NemotronH: read from hf_config up to 0.11.0, hf_text_config from 0.11.1;
  vLLM's NemotronHConfig.layers_block_type (vllm/transformers_utils/configs/nemotron_h.py, 0.9.1 - 0.31.0)
  spells hybrid_override_pattern (0.9.1 -) M/*/-/E as mamba/attention/mlp/moe), then `attn_type_list` (MiniMax, hf_config:
  1 attention, 0 linear), then `layer_types` (Qwen3-Next, Qwen3.5: 0.10.2 -; hf_config up to 0.16.0, hf_text_config
  from 0.17.0; attention is "full_attention" up to 0.31.0, _ATTENTION_LAYER_TYPES from 0.32.0);
- Llama 4 (llama4.py Llama4Attention, not get_num_layers_by_block_type): chunked where no_rope_layers is not 0
  (0.10.1 -), full attention elsewhere (vllm/model/chunked.py);
- otherwise every layer is attention: sliding where the model's layer_types says "sliding_attention" (gpt-oss,
  Gemma 3/4, Step-3.7: the model files read config.layer_types[layer_idx]), or sliding_window_pattern (older
  Gemma 3 configs), or every layer when the whole model has a sliding window (Mistral-7B-v0.1).
The layer count: ModelConfig.get_layers_start_end_indices reads num_hidden_layers (num_nextn_predict_layers for
the MTP draft types) up to 0.13.0; from 0.14.0 the model_arch_config convertor's get_num_hidden_layers does.
Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...topology.types import ModelFacts
from ..releases import R, Release
from . import chunked
from . import config as model_config

KINDS = ("full", "sliding", "chunked", "mamba", "linear", "none")
ATTENTION = frozenset(("full", "sliding", "chunked"))
_DISTRIBUTED = "vllm/distributed/utils.py get_pp_indices"
# layer_types spellings that hold a full-attention KV cache (vllm/config/model.py _ATTENTION_LAYER_TYPES, 0.32.0 -)
_FULL_TYPES = frozenset(("full_attention", "attention", "indexed_attention", "deepseek_sparse_attention",
                         "qwen_sparse_attention"))
_LAYER_TYPES = {"sliding_attention": "sliding", "linear_attention": "linear", "mamba": "mamba"}
_BLOCK_TYPES = {"attention": "full", "mamba": "mamba", "mlp": "none", "moe": "none", "hybrid": "mamba"}
_PATTERN = {"M": "mamba", "*": "full", "-": "none", "E": "none"}
# MTP draft model types whose layer count is num_nextn_predict_layers (ModelConfig.get_layers_start_end_indices
# up to 0.13.0; the *MTPModelArchConfigConvertor classes from 0.14.0)
MTP_TYPES = frozenset(("deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "ernie_mtp", "qwen3_next_mtp", "pangu_ultra_moe_mtp",
                       "bailing_hybrid_mtp", "step3p5_mtp"))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(data: Mapping[str, Any], release: Release) -> Mapping[str, Any] | None:
    return model_config.text_config(data, release).config


def num_layers(data: Mapping[str, Any], release: Release) -> int | None:
    """The total hidden layers release reads from config.json data (None: vLLM could not tell, or rejects it)."""
    text = _text(data, release)
    if text is None:
        return None
    model_type = text.get("model_type") if release < R("0.14.0") else data.get("model_type")
    if model_type in MTP_TYPES:
        return _int(text.get("num_nextn_predict_layers", 0))
    if data.get("model_type") == "longcat_flash" and release >= R("0.14.0"):
        return _int(text.get("num_layers"))  # LongCatFlashModelArchConfigConvertor.get_num_hidden_layers
    # no num_hidden_layers (Nemotron-3-Ultra lists layers_block_type only): what transformers' config class makes
    # of it is not vLLM's code, so the count is unknown rather than guessed
    return _int(model_config.Reader(text).get("num_hidden_layers"))


def layer_kinds(data: Mapping[str, Any], release: Release) -> tuple[str, ...] | None:
    """The kind of each layer release sees in config.json data (see the module docstring); None when unknown."""
    count = num_layers(data, release)
    text = _text(data, release)
    if count is None or text is None:
        return None
    derived = model_config.derive(data, release)
    if derived.kv_heads == 0:  # attention-free (ZERO_KV model types)
        return ("mamba",) * count
    if chunked.is_llama4(data, text):  # before layer_types: Llama4TextConfig's "chunked_attention" is vLLM's own
        return chunked.llama4_kinds(text, count, chunked.chunk_size(data, release), release)
    listed = _listed(data, text, release)
    if listed is not None:
        return tuple(listed[:count]) if len(listed) >= count else None
    pattern = _int(text.get("sliding_window_pattern"))
    if derived.sliding_window is not None and pattern:
        return tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(count))
    return ("sliding" if derived.sliding_window is not None else "full",) * count


def _listed(data: Mapping[str, Any], text: Mapping[str, Any], release: Release) -> list[str] | None:
    """The per-layer kinds config.json spells out, in get_num_layers_by_block_type's order; None if it spells none."""
    blocks = text.get("block_configs") if data.get("model_type") == "nemotron-nas" else None
    if isinstance(blocks, list):
        return ["none" if isinstance(b, Mapping) and isinstance(b.get("attention"), Mapping)
                and b["attention"].get("no_op") else "full" for b in blocks]
    where = text if release >= R("0.11.1") else data
    block_types = where.get("layers_block_type")
    if isinstance(block_types, list):
        return [_BLOCK_TYPES.get(str(t), "full") for t in block_types]
    pattern = where.get("hybrid_override_pattern")
    if isinstance(pattern, str) and release >= R("0.9.1"):  # NemotronH: 0.9.1 -
        return [_PATTERN.get(c, "none") for c in pattern]
    attn_types = data.get("attn_type_list")
    if isinstance(attn_types, list) and attn_types:
        return ["full" if t == 1 else "linear" for t in attn_types]
    layer_types = text.get("layer_types") if isinstance(text.get("layer_types"), list) else data.get("layer_types")
    if isinstance(layer_types, list):
        return [_kind_of(str(t), release) for t in layer_types]
    return None


def _kind_of(layer_type: str, release: Release) -> str:
    if layer_type == "full_attention" or layer_type in _FULL_TYPES and release >= R("0.32.0"):
        return "full"
    return _LAYER_TYPES.get(layer_type, "full" if layer_type in _FULL_TYPES else "none")


def run_length(kinds: Sequence[str]) -> str:
    """Kinds as the table writes them: "linear*3 full*1 linear*3 full*1" (kind*count runs)."""
    runs: list[list[Any]] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1][1] += 1
        else:
            runs.append([kind, 1])
    return " ".join(f"{k}*{n}" for k, n in runs)


def from_run_length(text: str) -> tuple[str, ...] | None:
    """The kinds of a run_length string; None when it is not one."""
    kinds: list[str] = []
    for run in text.split():
        kind, star, count = run.partition("*")
        if not star or kind not in KINDS or not count.isdigit():
            return None
        kinds.extend([kind] * int(count))
    return tuple(kinds)


def pp_indices(layers: int, pp_rank: int, pp_size: int, partition: str | None) -> tuple[int, int] | str:
    """(start, end) of pp_rank's layers, as get_pp_indices computes them (every release 0.8.5 -), or the error.

    VLLM_PP_LAYER_PARTITION (partition) names each stage's count; without it the remainder goes to the stages
    before the last, from the second-to-last backwards.
    """
    if partition is not None:
        try:
            parts = [int(p) for p in partition.split(",")]
        except ValueError:
            return f"VLLM_PP_LAYER_PARTITION {partition!r} is not a list of integers ({_DISTRIBUTED}: ValueError)"
        if len(parts) != pp_size:
            return f"VLLM_PP_LAYER_PARTITION names {len(parts)} stages, pipeline_parallel_size is {pp_size}"
        if sum(parts) != layers:
            return f"VLLM_PP_LAYER_PARTITION adds up to {sum(parts)} layers, the model has {layers}"
    else:
        parts = [layers // pp_size] * pp_size
        for i in range(2, layers % pp_size + 2):
            parts[-i] += 1
    start = sum(parts[:pp_rank])
    return start, start + parts[pp_rank]


def stage_layers(facts: ModelFacts, pp_size: int, pp_rank: int, env: Mapping[str, str]) -> tuple[str, ...] | None:
    """The kinds of the layers PP stage pp_rank of pp_size holds (env: the instance's VLLM_* variables); None when
    the model's layers are unknown or vLLM would refuse the partition (pp_error says why)."""
    if facts.layer_kinds is None or not 0 <= pp_rank < pp_size:
        return None
    span = pp_indices(len(facts.layer_kinds), pp_rank, pp_size, env.get("VLLM_PP_LAYER_PARTITION"))
    if isinstance(span, str):
        return None
    return facts.layer_kinds[span[0]:span[1]]


def stages(kinds: Sequence[str] | None, pp_size: int, env: Mapping[str, str]) -> list[tuple[str, ...]] | None:
    """The layer kinds of each of pp_size stages (get_pp_indices); None when the kinds are unknown or vLLM would
    refuse the partition."""
    if not kinds or pp_size < 1:
        return None
    held = []
    for rank in range(pp_size):
        span = pp_indices(len(kinds), rank, pp_size, env.get("VLLM_PP_LAYER_PARTITION"))
        if isinstance(span, str):
            return None
        held.append(tuple(kinds[span[0]:span[1]]))
    return held


def pp_error(facts: ModelFacts, pp_size: int, env: Mapping[str, str]) -> str | None:
    """Why get_pp_indices raises ValueError for this model and VLLM_PP_LAYER_PARTITION (None: it does not)."""
    layers = facts.layers if facts.layers is not None else len(facts.layer_kinds or ()) or None
    if layers is None:
        return None
    span = pp_indices(layers, 0, pp_size, env.get("VLLM_PP_LAYER_PARTITION"))
    return span if isinstance(span, str) else None

"""Per-release tables behind vllm/model/config.py: which model types vLLM treats specially, read from each wheel."""
from __future__ import annotations

from ..releases import R, Release, Timeline

_OLD = "vllm/config.py ModelConfig"  # 0.8.5 - 0.10.0; vllm/config/__init__.py 0.10.1 - 0.10.2
_MODEL = "vllm/config/model.py ModelConfig"  # 0.11.0 - 0.13.0
_CONV = "vllm/transformers_utils/model_arch_config_convertor.py"  # 0.14.0 -

_BASE_MLA = ("deepseek_v2", "deepseek_v3", "deepseek_mtp")
_MLA_0_11_1 = (*_BASE_MLA, "kimi_k2", "deepseek_v32", "longcat_flash", "kimi_linear", "pangu_ultra_moe",
               "pangu_ultra_moe_mtp")
_MLA_0_17 = (*_MLA_0_11_1, "glm4_moe_lite", "glm4_moe_lite_mtp", "glm_moe_dsa", "AXK1", "bailing_hybrid")
_MLA_0_25 = (*_MLA_0_17, "deepseek_v4", "bailing_hybrid_mtp")
_MLA_0_26 = (*(t for t in _MLA_0_25 if t != "AXK1"), "axk1", "longcat_flash_ngram")
_MLA_0_29 = (*_MLA_0_26, "k3_dspark", "dots3_note", "bailing_hybrid_v3_mtp", "hy_v4", "hy_v4_mtp")
_MLA_0_30 = (*_MLA_0_29, "deepseek_v41", "glm5_next", "glm5_next_text")

# hf_text_config.model_type values is_deepseek_mla accepts (with kv_lora_rank set).
MLA_TYPES: Timeline[frozenset[str]] = Timeline(
    "model types is_deepseek_mla accepts",
    ("0.8.5", frozenset(_BASE_MLA), f"{_OLD}.is_deepseek_mla"),
    ("0.10.0", frozenset((*_BASE_MLA, "kimi_k2")), f"{_OLD}.is_deepseek_mla"),
    ("0.11.0", frozenset((*_BASE_MLA, "kimi_k2", "deepseek_v32", "longcat_flash")), f"{_MODEL}.is_deepseek_mla"),
    ("0.11.1", frozenset(_MLA_0_11_1), f"{_MODEL}.is_deepseek_mla"),
    ("0.14.0", frozenset(_MLA_0_11_1), f"{_CONV} ModelArchConfigConvertorBase.is_deepseek_mla"),
    ("0.15.0", frozenset((*_MLA_0_11_1, "glm4_moe_lite", "glm4_moe_lite_mtp")), f"{_CONV} is_deepseek_mla"),
    ("0.16.0", frozenset((*_MLA_0_11_1, "glm4_moe_lite", "glm4_moe_lite_mtp", "glm_moe_dsa")),
     f"{_CONV} is_deepseek_mla"),
    ("0.17.0", frozenset(_MLA_0_17), f"{_CONV} is_deepseek_mla"),
    ("0.20.0", frozenset((*_MLA_0_17, "deepseek_v4")), f"{_CONV} is_deepseek_mla"),
    ("0.25.0", frozenset(_MLA_0_25), f"{_CONV} is_deepseek_mla"),
    ("0.26.0", frozenset(_MLA_0_26), f"{_CONV} is_deepseek_mla"),
    ("0.27.0", frozenset((*_MLA_0_26, "k3_dspark")), f"{_CONV} is_deepseek_mla"),
    ("0.28.0", frozenset((*_MLA_0_26, "k3_dspark", "dots3_note", "bailing_hybrid_v3_mtp")), f"{_CONV} is_deepseek_mla"),
    ("0.29.0", frozenset(_MLA_0_29), f"{_CONV} is_deepseek_mla"),
    ("0.30.0", frozenset(_MLA_0_30), f"{_CONV} is_deepseek_mla"),
    ("0.32.0", frozenset(t for t in _MLA_0_30 if t != "longcat_flash_ngram"), f"{_CONV} is_deepseek_mla"),
)
# The inner model.model_type an EAGLE draft (model_type "eagle") is MLA for.
EAGLE_MLA_TYPES: Timeline[frozenset[str]] = Timeline(
    "EAGLE inner model types is_deepseek_mla accepts",
    ("0.8.5", frozenset(("deepseek_v2", "deepseek_v3")), f"{_OLD}.is_deepseek_mla"),
    ("0.11.0", frozenset(("deepseek_v2", "deepseek_v3", "deepseek_v32")), f"{_MODEL}.is_deepseek_mla"),
    ("0.15.0", frozenset(("deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp")), f"{_CONV} is_deepseek_mla"),
    ("0.17.0", frozenset(("AXK1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp")),
     f"{_CONV} is_deepseek_mla"),
    ("0.26.0", frozenset(("axk1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp")),
     f"{_CONV} is_deepseek_mla"),
)
# The fields get_total_num_kv_heads tries, in order (getattr up to 0.13.0, getattr_iter from 0.14.0).
KV_FIELDS: Timeline[tuple[str, ...]] = Timeline(
    "KV-head fields",
    ("0.8.5", ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num"),
     f"{_OLD}.get_total_num_kv_heads"),
    ("0.14.0", ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num"),
     f"{_CONV} ModelArchConfigConvertorBase.get_total_num_kv_heads"),
    ("0.20.0", ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", "num_attention_groups"),
     f"{_CONV} ModelArchConfigConvertorBase.get_total_num_kv_heads (CONFIG_FIELD_ALIASES from 0.33.0)"),
)
# Model types whose total KV heads are 0: attention-free by the registry up to 0.13.0 (MambaForCausalLM,
# FalconMambaForCausalLM), by MODEL_ARCH_CONFIG_CONVERTORS from 0.14.0 (Mamba, Terratorch, Medusa convertors).
ZERO_KV: Timeline[frozenset[str]] = Timeline(
    "model types without KV heads",
    ("0.8.5", frozenset(("mamba", "falcon_mamba")), f"{_OLD}.get_total_num_kv_heads (is_attention_free)"),
    ("0.14.0", frozenset(("mamba", "falcon_mamba", "timm_wrapper", "medusa")), f"{_CONV} MODEL_ARCH_CONFIG_CONVERTORS"),
    ("0.33.0", frozenset(("mamba", "falcon_mamba", "timm_wrapper")), f"{_CONV} MODEL_ARCH_CONFIG_CONVERTORS"),
)
# Model types whose convertor computes KV heads from fields pdlint does not model: their facts stay unknown.
UNMODELLED: Timeline[frozenset[str]] = Timeline(
    "model types with their own KV-head convertor",
    ("0.8.5", frozenset(), f"{_OLD}.get_total_num_kv_heads"),
    ("0.19.0", frozenset(("cohere_asr",)), f"{_CONV} CohereAsrModelArchConfigConvertor"),
    ("0.24.0", frozenset(("cohere_asr", "moss_audio")), f"{_CONV} MossAudioModelArchConfigConvertor"),
)
MPT_SPECIAL: Timeline[bool] = Timeline(
    "MPT reads attn_config.kv_n_heads",
    ("0.8.5", True, f"{_OLD}.get_total_num_kv_heads"),
    ("0.14.0", True, f"{_CONV} MPTModelArchConfigConvertor"),
    ("0.29.0", False, f"{_CONV} MODEL_ARCH_CONFIG_CONVERTORS (mpt removed)"),
)
FALCON = frozenset(("falcon", "RefinedWeb", "RefinedWebModel"))
# transformers' PretrainedConfig.get_text_config: the sub-configs it may return.
TEXT_CONFIG_NAMES = ("text_config", "decoder", "generator", "text_encoder")
# transformers' config classes' attribute_map (standard name -> the name config.json uses), for the model types
# whose config.json does not use the standard names (GPT2Config, GPTBigCodeConfig, GPTJConfig, BloomConfig,
# MptConfig, DbrxConfig; vLLM's own RWConfig (RefinedWeb) and ChatGLMConfig in vllm/transformers_utils/configs/).
# transformers' FalconConfig has none: a "falcon" config.json's n_head is not its heads (FalconConfig's default is).
_GPT2 = {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer", "hidden_size": "n_embd"}
_MPT = {"num_attention_heads": "n_heads", "num_hidden_layers": "n_layers", "hidden_size": "d_model"}
ATTRIBUTE_MAP: dict[str, dict[str, str]] = {
    "gpt2": _GPT2, "gpt_bigcode": _GPT2, "gptj": _GPT2,
    "bloom": {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
    "RefinedWeb": {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
    "RefinedWebModel": {"num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
    "mpt": _MPT, "dbrx": _MPT,
    "chatglm": {"num_hidden_layers": "num_layers", "n_head_kv": "multi_query_group_num"},
}


def span_of(release: Release) -> str:
    """The function that derives KV heads in release, for messages."""
    return KV_FIELDS.step(release).source.split(" (")[0] + (" up to 0.13.0" if release < R("0.14.0") else "")

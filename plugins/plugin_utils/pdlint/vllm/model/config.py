"""A model's facts from its config.json (a plain dict), derived as each vLLM release derives them.

vLLM reads config.json through transformers' PretrainedConfig (attribute access, the config class's
attribute_map aliases) and then its own ModelConfig:
- 0.8.5 - 0.13.0: ModelConfig.get_total_num_kv_heads, is_deepseek_mla, get_hf_config_sliding_window /
  get_sliding_window (vllm/config.py; vllm/config/__init__.py 0.10.1 - 0.10.2; vllm/config/model.py 0.11.0 -);
- 0.14.0 -: ModelConfig asks model_arch_config, built by MODEL_ARCH_CONFIG_CONVERTORS[model_type] (base:
  ModelArchConfigConvertorBase) in vllm/transformers_utils/model_arch_config_convertor.py;
- every release: get_hf_text_config (vllm/transformers_utils/config.py) picks the text sub-config first.
Pure: no I/O; the caller reads the file.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..releases import R, Release
from . import config_defaults, types

_MISSING = object()


class _Config:
    """A config.json dict read as transformers' PretrainedConfig is: keys as attributes, attribute_map aliases."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        model_type = data.get("model_type")
        self.aliases = types.ATTRIBUTE_MAP.get(model_type, {}) if isinstance(model_type, str) else {}

    def has(self, name: str) -> bool:
        return self.get(name, _MISSING) is not _MISSING

    def get(self, name: str, default: Any = None) -> Any:
        if name in self.aliases and self.aliases[name] in self.data:
            return self.data[self.aliases[name]]
        return self.data.get(name, default)


Reader = _Config  # for vllm/model/layers.py: config.json read with the model type's attribute_map


@dataclasses.dataclass(frozen=True)
class Derived:
    """What release derives from one config.json; None where it cannot tell (or vLLM would fail)."""

    release: Release
    heads: int | None = None
    kv_heads: int | None = None
    mla: bool | None = None
    sliding_window: int | None = None
    layers: int | None = None
    model_type: str | None = None
    head_size: int | None = None  # ModelConfig.get_head_size: what one KV head holds per token (MLA: the latent)
    max_len: int | None = None  # the smallest of the config's length fields: max_model_len's default, at most
    error: str | None = None  # a config vLLM rejects when it loads it
    how: tuple[str, ...] = ()  # each fact: which field, which vLLM function
    unknown: str | None = None  # why pdlint cannot tell what vLLM reads (the facts stay unknown: a warning)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class Text(NamedTuple):
    """The text sub-config get_hf_text_config returns, as its config class holds it."""

    config: Mapping[str, Any] | None  # None: an error, or facts pdlint cannot know (unknown)
    where: str  # the sub-config's name; "" for the config itself
    written: Mapping[str, Any] | None = None  # the fields the file itself gives it (the rest: class defaults)
    error: str | None = None  # vLLM refuses the config
    unknown: str | None = None  # why pdlint cannot tell what vLLM reads (a warning, never an error)


def text_config(data: Mapping[str, Any], release: Release) -> Text:
    """The text sub-config as get_hf_text_config picks it, with its config class's defaults (vllm/config_defaults).

    0.8.5 - 0.9.2 first take thinker_config.text_config (Qwen2.5-Omni); then transformers'
    PretrainedConfig.get_text_config: the one non-null of text_config, text_encoder, decoder, generator, else
    the config itself. A composite builds its text config even when the file has none (from the top-level fields
    when the class reads them so, Qwen2-VL; else from the defaults alone). A text config without
    num_attention_heads once its class's defaults are in fails (assert up to 0.12.0, ValueError from 0.13.0);
    when pdlint does not know the class, the facts are unknown.
    """
    thinker = data.get("thinker_config")
    if release <= R("0.9.2") and isinstance(thinker, Mapping) and isinstance(thinker.get("text_config"), Mapping):
        return Text(thinker["text_config"], "thinker_config.text_config", thinker["text_config"])
    found = [name for name in types.TEXT_CONFIG_NAMES if data.get(name) is not None]
    if len(found) > 1:
        return Text(None, "", error=(f"config.json has several text configs ({', '.join(found)}); transformers "
                                     "refuses it"))
    top = data.get("model_type")
    how = config_defaults.COMPOSITES.get(top) if isinstance(top, str) else None
    if not found and how is None:
        return Text(config_defaults.filled(data, top), "", data)
    name = found[0] if found else str(how["name"])  # type: ignore[index]
    sub = data[name] if found else data if how["flat"] else {}  # type: ignore[index]
    if not isinstance(sub, Mapping):
        return Text(None, name, error=f"{name} is not a mapping")
    # a composite pdlint has no row for (vLLM's own class, remote code) builds a class pdlint cannot name
    klass = config_defaults.text_class(top, sub)
    written, sub = sub, config_defaults.filled(sub, klass)
    if _Config(sub).has("num_attention_heads"):
        return Text(sub, name, written)
    if klass is None or not config_defaults.known(klass) or config_defaults.has_heads(klass):
        named = klass or sub.get("model_type")
        return Text(None, name, unknown=(f"{name} has no num_attention_heads and pdlint does not know the defaults "
                                         f"of its config class (model_type {named!r}, in {top!r})"))
    what = "an AssertionError" if release < R("0.13.0") else "a ValueError"
    return Text(None, name, error=f"{name} has no num_attention_heads (nor has the {klass} config class): vLLM "
                                  f"{release} stops with {what} in get_hf_text_config "
                                  "(vllm/transformers_utils/config.py)")


def _falcon_mqa(hf: _Config, text: _Config, release: Release) -> bool:
    """Multi-query attention: one KV head, unless Falcon's new_decoder_architecture overrides it.

    0.8.5 - 0.13.0 ModelConfig.get_total_num_kv_heads: any model type with multi_query (GPTBigCode too), Falcon's
    new_decoder_architecture read from hf_config; 0.14.0 -: FalconModelArchConfigConvertor only, reading it from
    hf_text_config.
    """
    falcon = hf.get("model_type") in types.FALCON
    if release < R("0.14.0"):
        new_arch = falcon and bool(hf.get("new_decoder_architecture", False))
        return not new_arch and bool(text.get("multi_query", False))
    return falcon and not text.get("new_decoder_architecture", False) and bool(text.get("multi_query", False))


def kv_heads(hf: _Config, text: _Config, release: Release, heads: int | None) -> tuple[int | None, str]:
    """Total KV heads and the field they came from, per release (see the module docstring for the functions)."""
    model_type = hf.get("model_type")
    if _falcon_mqa(hf, text, release):
        return 1, "multi_query (one KV head)"
    if model_type == "mpt" and types.MPT_SPECIAL.at(release):
        attn = hf.get("attn_config") if release < R("0.14.0") else text.get("attn_config")
        if isinstance(attn, Mapping) and "kv_n_heads" in attn:
            return _int(attn["kv_n_heads"]), "attn_config.kv_n_heads"
        return heads, "num_attention_heads (MPT without attn_config.kv_n_heads)"
    if model_type == "dbrx":
        attn = hf.get("attn_config") if release < R("0.14.0") else text.get("attn_config")
        # transformers' DbrxAttentionConfig defaults kv_n_heads to 1, so the attribute always exists
        value = attn.get("kv_n_heads", 1) if isinstance(attn, Mapping) else 1
        return _int(value), "attn_config.kv_n_heads"
    if model_type == "nemotron-nas":
        return _nas(hf if release < R("0.14.0") else text, heads)
    if model_type in types.ZERO_KV.at(release):
        return 0, f"none ({model_type} keeps no KV cache)"
    for name in types.KV_FIELDS.at(release):
        if release < R("0.14.0"):
            value = text.get(name)
            if value is not None:
                return _int(value), name
        elif text.has(name):  # getattr_iter: a field written as null is taken, and is None
            return _int(text.get(name)), name
    return heads, "num_attention_heads (no KV-head field)"


def _nas(cfg: _Config, heads: int | None) -> tuple[int | None, str]:
    """Nemotron-NAS: heads // n_heads_in_group of the first block whose attention is not a no-op."""
    for block in cfg.get("block_configs") or ():
        attention = block.get("attention") if isinstance(block, Mapping) else None
        if isinstance(attention, Mapping) and not attention.get("no_op"):
            group = _int(attention.get("n_heads_in_group"))
            if heads is None or not group:
                return None, "block_configs"
            return heads // group, "block_configs[].attention.n_heads_in_group"
    return None, "block_configs (no attention block: vLLM raises RuntimeError)"


def is_mla(text: _Config, release: Release) -> bool:
    """is_deepseek_mla: hf_text_config.model_type in the release's MLA types and kv_lora_rank set.

    DeepSeek-V4 checks head_dim instead: 0.20.0 - 0.32.0 when compress_ratios is present, 0.33.0 - when
    get_compress_ratios (vllm/transformers_utils/deepseek_v4_utils.py) finds compress_ratios or compress_rates
    non-empty. An EAGLE draft checks model.model_type.
    """
    model_type = text.get("model_type")
    if model_type in types.MLA_TYPES.at(release):
        if release >= R("0.33.0"):
            v4 = bool(text.get("compress_ratios") or (text.get("compress_rates") and text.get("layer_types")))
        else:
            v4 = release >= R("0.20.0") and text.has("compress_ratios")
        if v4:
            return text.get("head_dim") is not None
        return text.get("kv_lora_rank") is not None
    if model_type == "eagle":
        inner = text.get("model")
        inner_type = inner.get("model_type") if isinstance(inner, Mapping) else None
        return inner_type in types.EAGLE_MLA_TYPES.at(release) and text.get("kv_lora_rank") is not None
    return False


def sliding_window(text: _Config, release: Release) -> int | None:
    """The sliding window: 0.8.5 - 0.10.0 get_hf_config_sliding_window (None when use_sliding_window is false),
    0.10.1 - ModelConfig.get_sliding_window (hf_text_config.sliding_window; transformers' Qwen2/Qwen3 config
    classes null it themselves when use_sliding_window is false, so the result is the same); 0.33.0 - a 0 means
    disabled (ModelConfig.__post_init__)."""
    if text.has("use_sliding_window") and not text.get("use_sliding_window"):
        return None
    window = _int(text.get("sliding_window"))
    if window == 0 and release >= R("0.33.0"):
        return None
    return window


def head_size(text: _Config, release: Release, mla: bool, heads: int | None) -> int | None:
    """ModelConfig.get_head_size (vllm/config.py 0.8.5 - 0.10.0, vllm/config/model.py 0.10.1 - 0.13.0,
    ModelArchConfigConvertorBase.get_head_size 0.14.0 -), with MLA on (VLLM_MLA_DISABLE unset): kv_lora_rank +
    qk_rope_head_dim; zamba2's attention_head_dim (to 0.13.0); head_dim; hidden_size_per_head; else
    hidden_size // num_attention_heads. DeepSeek-V4's compressed layout is not modelled (None)."""
    if mla:
        if text.has("compress_ratios") or text.has("compress_rates"):
            return None
        return _sum_ints(text.get("kv_lora_rank"), text.get("qk_rope_head_dim", 0))
    if text.get("model_type") == "zamba2" and release < R("0.14.0"):
        return _int(text.get("attention_head_dim"))
    dim = _int(text.get("head_dim"))
    if dim:
        return dim
    dim = _int(text.get("hidden_size_per_head"))
    if dim:
        return dim
    hidden = _int(text.get("hidden_size"))
    return hidden // heads if hidden is not None and heads else None


def _sum_ints(*values: Any) -> int | None:
    ints = [_int(v) for v in values]
    return None if any(v is None for v in ints) else sum(v for v in ints if v is not None)


# _get_and_verify_max_len's possible_keys (vllm/config.py, vllm/config/model.py; every release): the smallest set one
# bounds max_model_len's default. Rope scaling may raise it (not modelled: pdlint's figure is a lower bound).
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length",
                "max_seq_length", "seq_len")


def max_len(text: _Config) -> int | None:
    found = [n for n in (_int(text.get(k)) for k in _LENGTH_KEYS) if n]
    return min(found) if found else None


def derive(data: Mapping[str, Any], release: Release) -> Derived:
    """The facts release derives from config.json data."""
    if not isinstance(data, Mapping):
        return Derived(release, error="config.json is not a JSON object")
    sub, where, written, error, unknown = text_config(data, release)
    model_type = data.get("model_type") if isinstance(data.get("model_type"), str) else None
    if sub is None:
        return Derived(release, model_type=model_type, error=error, how=(unknown,) if unknown else (),
                       unknown=unknown)
    hf, text = _Config(config_defaults.filled(data, model_type)), _Config(sub)
    if model_type in types.UNMODELLED.at(release):
        # MODEL_ARCH_CONFIG_CONVERTORS[model_type] reads heads, KV heads and layers from sub-configs of its own
        # (CohereAsr: encoder / transf_decoder, 0.19.0 -; MossAudio: language_config, 0.24.0 -): the generic fields
        # would give other numbers, so the facts are unknown (is_deepseek_mla and the sliding window stay generic)
        return Derived(release, mla=is_mla(text, release), sliding_window=sliding_window(text, release),
                       model_type=model_type, how=(f"heads, KV heads: MODEL_ARCH_CONFIG_CONVERTORS[{model_type!r}] "
                                                   "(vllm/transformers_utils/model_arch_config_convertor.py), not "
                                                   "modelled by pdlint",))
    prefix = f"{where}." if where else ""
    heads = _int(text.get("num_attention_heads"))
    kv, kv_field = kv_heads(hf, text, release, heads)
    if heads is None and kv == 0:
        heads = 0  # attention-free: ModelConfig.get_num_attention_heads reads getattr(..., "num_attention_heads", 0)
    span = types.span_of(release)
    own = _Config(written or {})
    note = {n: "" if own.has(n) or not text.has(n) else f" (not in the file: the default of "
            f"{text.get('model_type')}'s config class, {config_defaults.SOURCE})" for n in ("num_attention_heads", kv_field)}
    how = (f"heads: {prefix}num_attention_heads{note['num_attention_heads']}",
           f"KV heads: {prefix if '.' not in kv_field else ''}{kv_field}{note[kv_field]} ({span})",
           f"MLA: model_type {text.get('model_type')!r} and kv_lora_rank "
           f"({types.MLA_TYPES.step(release).source})")
    mla = is_mla(text, release)
    return Derived(release, heads=heads, kv_heads=kv, mla=mla,
                   sliding_window=sliding_window(text, release), layers=_int(text.get("num_hidden_layers")),
                   model_type=model_type, head_size=head_size(text, release, mla, heads), max_len=max_len(text),
                   how=how)

"""Chunked local attention (Llama 4's iRoPE layers) per release: the model fact, its layers, and what it does to HMA.

ModelConfig.attention_chunk_size is `getattr(hf_text_config, "attention_chunk_size", None)` (vllm/config.py,
vllm/config/__init__.py 0.10.1 - 0.10.2, vllm/config/model.py 0.11.0 -), for any model; transformers'
Llama4TextConfig defaults it to 8192, and from 0.21.0 MimoV2ModelArchConfigConvertor
(transformers_utils/model_arch_config_convertor.py _strip_mimo_v2_attention_chunk_size) deletes it for MiMo-V2, whose
config.json sets it without using it. VllmConfig.__post_init__ then turns the hybrid KV cache manager off for such a
model (CHUNKED_HMA) unless envs.VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE (`bool(int(os.getenv(NAME,
default)))`, ALLOW_DEFAULT) is true; a speculative EAGLE config turns it off too (pdlint reads no speculative config).
From 0.13.0 an explicit `disable_hybrid_kv_cache_manager: false` there is a ValueError.
The layers: Llama4Attention (model_executor/models/llama4.py) builds ChunkedLocalAttention, whose KV cache spec is
ChunkedLocalAttentionSpec, for a layer whose no_rope_layers entry is not 0 when attention_chunk_size is set
(0.10.2 -; 0.10.1 - 0.10.1.1 every RoPE layer; transformers fills no_rope_layers as
`int((i + 1) % no_rope_layer_interval != 0)`, interval 4, when it is missing or empty); the other (NoPE) layers are
full attention. unify_hybrid_kv_cache_specs treats a
ChunkedLocalAttentionSpec as it treats a SlidingWindowSpec: beside full attention it becomes a FullAttentionSpec
(attention_chunk_size=C). Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...topology.types import Instance
from .. import env_values
from ..connectors.registry import release as registry_release
from ..history import history
from ..releases import R, Release, Timeline
from . import config as model_config

ENV = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
_POST_INIT = "VllmConfig.__post_init__ (`model_config.attention_chunk_size is not None` and not envs." + ENV + ")"
# What a model with attention_chunk_size does to the hybrid KV cache manager.
CHUNKED_HMA: Timeline[str | None] = history("pd-mismatch[hma]", Timeline(
    "the hybrid KV cache manager with chunked local attention (attention_chunk_size)",
    ("0.8.5", None, "config.py (no disable_hybrid_kv_cache_manager option)", "no HMA option"),
    ("0.9.1", None, "config.py VllmConfig.__post_init__ (no chunked local attention branch; 0.10.0: EAGLE only)",
     "chunked local attention leaves HMA as the connector decides"),
    ("0.10.1", "off", f"config/__init__.py (0.11.1+ config/vllm.py) {_POST_INIT}, under `if not "
     "disable_hybrid_kv_cache_manager`", f"HMA off unless {ENV} is true, whatever the setting"),
    ("0.13.0", "off-or-raise", f"config/vllm.py {_POST_INIT}: need_disable_hybrid_kv_cache_manager",
     "HMA off unless the variable is true; an explicit false is a ValueError"),
))
ALLOW_DEFAULT: Timeline[bool | None] = history("pd-mismatch[hma]", Timeline(
    f"{ENV} when unset",
    ("0.8.5", None, "vllm/envs.py (not defined)", "not defined"),
    ("0.10.1", False, f"vllm/envs.py environment_variables[{ENV!r}] (os.getenv(..., \"0\"))",
     "unset is false: chunked local attention turns HMA off"),
    ("0.14.0", True, f"vllm/envs.py environment_variables[{ENV!r}] (os.getenv(..., \"1\"))",
     "unset is true: only an explicit 0 turns HMA off"),
))
history("connector[config]", CHUNKED_HMA)  # its explicit-enable ValueError is a start problem
history("connector[config]", ALLOW_DEFAULT)
_LAYERS = R("0.10.1")  # llama4.py builds ChunkedLocalAttention (ChunkedLocalAttentionSpec) from this release
_NEEDS_SIZE = R("0.10.2")  # a RoPE layer is chunked only with an attention_chunk_size from this release
_STRIP = R("0.21.0")
_STRIPPED = frozenset(("mimo_v2", "mimo_v2_flash", "mimo_v2_mtp", "mimo_v2_omni_mtp"))
_LLAMA4 = frozenset(("llama4", "llama4_text"))
_LLAMA4_DEFAULT = 8192  # transformers Llama4TextConfig(attention_chunk_size=8192)
_MISSING = object()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def chunk_size(data: Mapping[str, Any], release: Release) -> int | None:
    """ModelConfig.attention_chunk_size for config.json data in release (None: not set, or vLLM deletes it)."""
    found = model_config.text_config(data, release)
    text, error = found.config, found.error
    if error is not None or text is None:
        return None
    if data.get("model_type") in _STRIPPED and release >= _STRIP:
        return None
    value = text.get("attention_chunk_size", _MISSING)
    if value is _MISSING and (data.get("model_type") in _LLAMA4 or text.get("model_type") in _LLAMA4):
        return _LLAMA4_DEFAULT
    return None if value is _MISSING else _int(value)


def llama4_kinds(text: Mapping[str, Any], count: int, chunk: int | None, release: Release) -> tuple[str, ...] | None:
    """Each layer's kind as Llama4Attention builds it: "chunked" for a RoPE layer with a chunk size (0.10.1 -),
    else "full"; None when no_rope_layers does not cover the layers."""
    rope = text.get("no_rope_layers")
    if not rope:
        interval = _int(text.get("no_rope_layer_interval", 4))
        if not interval:
            return None
        rope = [int((i + 1) % interval != 0) for i in range(count)]
    if not isinstance(rope, list) or len(rope) < count:
        return None
    # 0.10.1 - 0.10.1.1: `Attention if self.nope else ChunkedLocalAttention`; 0.10.2 -: `not self.nope and
    # config.attention_chunk_size`
    chunked = release >= _LAYERS and (bool(chunk) or release < _NEEDS_SIZE)
    return tuple("chunked" if chunked and r != 0 else "full" for r in rope[:count])


def kinds_at(kinds: tuple[str, ...], release: Release) -> tuple[str, ...]:
    """Layer kinds as release builds them: before 0.10.1 no layer is a ChunkedLocalAttention (pdlint's table writes
    the newest release's kinds)."""
    return kinds if release >= _LAYERS or "chunked" not in kinds else tuple(
        "full" if k == "chunked" else k for k in kinds)


def is_llama4(data: Mapping[str, Any], text: Mapping[str, Any]) -> bool:
    return data.get("model_type") in _LLAMA4 or text.get("model_type") in _LLAMA4


def plain_llama4(data: Mapping[str, Any]) -> bool:
    """A Llama 4 config.json: its model classes (llama4.py, mllama4.py) implement no IsHybrid, so no Mamba/SSM."""
    text = data.get("text_config")
    return is_llama4(data, text if isinstance(text, Mapping) else data)


def allowed(inst: Instance) -> bool | None:
    """envs.VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE as the release reads it from vllm_env (its default
    when unset); None when unrendered or not an integer (int() raises)."""
    if not inst.knows(f"env.{ENV}"):
        return None
    value = inst.env.get(ENV)
    if value is None:
        return ALLOW_DEFAULT.at(registry_release(inst))
    number = env_values.as_int(str(value))
    return None if number is None else bool(number)


def forces_off(inst: Instance) -> bool | None:
    """VllmConfig.__post_init__ turns HMA off for the model's chunked local attention (None: cannot tell)."""
    release = registry_release(inst)
    if CHUNKED_HMA.at(release) is None or inst.facts.attention_chunk_size is None:
        return False
    ok = allowed(inst)
    return None if ok is None else not ok


def because(inst: Instance) -> str:
    """Why forces_off() is True, in the release's terms."""
    release = registry_release(inst)
    set_to = inst.env.get(ENV)
    said = f"{ENV}={set_to}" if set_to is not None else f"{ENV} is unset (false by default in vLLM {release})"
    return (f"the model uses chunked local attention (attention_chunk_size {inst.facts.attention_chunk_size}) and "
            f"{said}, so vLLM {release} VllmConfig.__post_init__ turns it off")


def start_error(inst: Instance) -> tuple[str, str, str, str] | None:
    """(field, message, hint, vLLM source) of the ValueError VllmConfig.__post_init__ raises for chunked local
    attention: an unreadable variable, or HMA explicitly on where it turns HMA off (0.13.0 -)."""
    release = registry_release(inst)
    mode = CHUNKED_HMA.at(release)
    if mode is None or inst.facts.attention_chunk_size is None or not inst.knows(f"env.{ENV}"):
        return None
    source = CHUNKED_HMA.step(release).source
    value = inst.env.get(ENV)
    # up to 0.12.x the branch sits under `if not disable_hybrid_kv_cache_manager`: an explicit true never reads it
    read = mode != "off" or inst.disable_hma is not True
    if read and value is not None and env_values.as_int(str(value)) is None:
        return (f"env.{ENV}", (f"{ENV}={str(value)!r} is not an integer: for a model with attention_chunk_size vLLM "
                               f"{release} reads it with bool(int(...)) in VllmConfig.__post_init__, which raises "
                               "ValueError"), f"set {ENV} to 1 or 0", ALLOW_DEFAULT.step(release).source)
    if mode != "off-or-raise" or inst.disable_hma is not False or not forces_off(inst):
        return None
    return ("disable_hybrid_kv_cache_manager",
            (f"vllm_disable_hybrid_kv_cache_manager is false, but {because(inst)}: ValueError \"Hybrid KV cache "
             "manager was explicitly enabled but is not supported in this configuration.\""),
            f"leave vllm_disable_hybrid_kv_cache_manager unset (or true), or set {ENV}=1 in vllm_env", source)

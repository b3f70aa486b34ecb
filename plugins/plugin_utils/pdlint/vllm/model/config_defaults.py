"""What transformers' config classes fill in where a config.json is silent, as data (no transformers import).

vLLM reads the config object AutoConfig builds, never the dict: LlamaConfig's __init__ gives a llama config.json
without num_attention_heads 32 heads, and a composite (LlavaConfig, Gemma3Config, Mistral3Config, ...) builds its
text_config dict into a class of its own choosing (CONFIG_MAPPING[text_config.get("model_type", "llama")] for
Llava; always Gemma3TextConfig for Gemma 3). data/config_defaults.json holds those defaults for the fields pdlint
reads, and how each composite builds its text config; tools/config_defaults.py generates it from transformers'
classes (the version is TRANSFORMERS). Model types vLLM registers classes of its own for are not in it.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "config_defaults.json"), encoding="utf-8") as _fh:
    _TABLE: dict[str, Any] = json.load(_fh)

TRANSFORMERS: str = _TABLE["transformers"]
CLASSES: dict[str, dict[str, Any]] = _TABLE["classes"]  # model_type -> {field: default}; "heads": False if none
COMPOSITES: dict[str, dict[str, Any]] = _TABLE["composites"]  # model_type -> name, default, follows, flat
SOURCE = f"transformers {TRANSFORMERS}, tools/config_defaults.py"


def known(model_type: Any) -> bool:
    """Whether pdlint knows what model_type's config class fills in."""
    return isinstance(model_type, str) and model_type in CLASSES


def has_heads(model_type: str) -> bool:
    """Whether model_type's config class has a num_attention_heads attribute whatever the file says."""
    return CLASSES[model_type].get("heads", True) is not False


def filled(data: Mapping[str, Any], model_type: Any) -> Mapping[str, Any]:
    """data as model_type's class holds it: the class defaults under the fields the file writes, and the class's
    model_type. An unknown model_type: data as written."""
    if not known(model_type):
        return data
    defaults = {k: v for k, v in CLASSES[model_type].items() if k != "heads"}
    found = {**defaults, **data, "model_type": model_type}
    if model_type == "gpt_bigcode" and "num_key_value_heads" not in data:
        # GPTBigCodeConfig.__init__ sets num_key_value_heads = 1 if multi_query else n_head, which vLLM reads from
        # 0.14.0 (the generic convertor; before, multi_query alone gave one KV head): a field that follows another
        # is no default the table can hold
        heads = data.get("n_head", found.get("num_attention_heads"))
        found["num_key_value_heads"] = 1 if found.get("multi_query") else heads
    return found


def text_class(composite: Any, sub: Mapping[str, Any]) -> str | None:
    """The model_type of the class composite builds the text-config dict sub into (None: pdlint cannot tell)."""
    how = COMPOSITES.get(composite) if isinstance(composite, str) else None
    if how is None:
        return None
    own = sub.get("model_type")
    if how["follows"] and own is not None:
        return own if isinstance(own, str) else None
    return str(how["default"])

"""The defaults transformers' config classes give the config.json fields pdlint reads, as data for vllm/model_config.

    .venv/bin/pip install transformers==4.57.1     # the test extra has it
    python tools/config_defaults.py                # rewrite plugins/plugin_utils/pdlint/vllm/data/config_defaults.json

vLLM never reads config.json as a dict: AutoConfig builds the model type's config class, whose __init__ fills what
the file omits (LlamaConfig: 32 heads), and a composite (LlavaConfig, Gemma3Config, ...) builds its text_config
dict into a config class of its own choosing. pdlint must not import transformers, so this tool asks the classes
once and writes what they answer:
- "classes": model_type -> {field: default} for the fields vllm/model_config and vllm/model_layers read. A field
  whose value follows another field (LlamaConfig's num_key_value_heads = num_attention_heads, layer_types from
  num_hidden_layers) is left out: the derivation's own fallback is the same. "heads": false when the class has no
  num_attention_heads attribute at all (vLLM's get_hf_text_config refuses such a text config).
- "composites": model_type -> how its text config is built: the attribute get_text_config returns ("name"), the
  class a dict without model_type gets ("default"), whether a dict's own model_type is followed ("follows"), and
  whether the text config is built from the top-level fields when the file has none ("flat").
Model types vLLM registers config classes of its own for (_CONFIG_REGISTRY in any release's
vllm/transformers_utils/config.py, registered over transformers' from 0.20.0) are left out: their defaults are
vLLM's, release by release, and pdlint says "unknown" where it would need them.
"""
from __future__ import annotations

import ast
import inspect
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "plugins/plugin_utils/pdlint/vllm/data/config_defaults.json"
TRANSFORMERS = "4.57.1"
# The fields pdlint reads from a (text) config: vllm/model/config.py and vllm/model/layers.py.
FIELDS = ("num_attention_heads", "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
          "num_attention_groups", "num_hidden_layers", "kv_lora_rank", "head_dim", "sliding_window",
          "use_sliding_window", "sliding_window_pattern", "multi_query", "new_decoder_architecture",
          "num_nextn_predict_layers")
TEXT_CONFIG_NAMES = ("text_config", "decoder", "generator", "text_encoder")  # PretrainedConfig.get_text_config
# Other values for the fields others follow: a field that changes with them is derived, not a default.
# (the flags too: GPTBigCodeConfig's num_key_value_heads follows multi_query, Qwen2Config's window use_sliding_window)
_NUDGE = {"num_attention_heads": 5, "num_hidden_layers": 3, "hidden_size": 1000, "multi_query": False,
          "use_sliding_window": True, "new_decoder_architecture": True}


def vllm_registered(roots: list[Path]) -> set[str]:
    """Every model type some release's _CONFIG_REGISTRY (or _CONFIG_REGISTRY_OVERRIDE_HF) names."""
    found: set[str] = set()
    for root in roots:
        path = root / "vllm/transformers_utils/config.py"
        if not path.exists():
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(
                node, ast.Assign) else None
            if getattr(target, "id", "") not in ("_CONFIG_REGISTRY", "_CONFIG_REGISTRY_OVERRIDE_HF") or \
                    node.value is None:
                continue
            value = node.value
            if isinstance(value, ast.Dict):
                found.update(k.value for k in value.keys if isinstance(k, ast.Constant))
                found.update(k.value for d in value.values if isinstance(d, ast.Dict)  # **{...} spreads
                             for k in d.keys if isinstance(k, ast.Constant))
            elif isinstance(value, ast.Call):  # LazyConfigDict(name="Class", **{"odd-name": "Class"})
                for kw in value.keywords:
                    if kw.arg is not None:
                        found.add(kw.arg)
                    elif isinstance(kw.value, ast.Dict):
                        found.update(k.value for k in kw.value.keys if isinstance(k, ast.Constant))
    return found


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str)) or \
        isinstance(value, list) and all(isinstance(v, (int, str, type(None))) for v in value)


def class_facts(cls: type) -> dict[str, Any] | None:
    """The defaults cls gives FIELDS (None when it cannot be built without arguments)."""
    try:
        plain, nudged = cls(), cls(**{k: v for k, v in _NUDGE.items()
                                      if k in inspect.signature(cls.__init__).parameters})
    except Exception:  # noqa: BLE001 - a class that needs arguments has no defaults to give
        return None
    found: dict[str, Any] = {}
    for name in FIELDS:
        if name in _NUDGE and name in inspect.signature(cls.__init__).parameters:
            if hasattr(plain, name):
                found[name] = getattr(plain, name)
            continue
        if not hasattr(plain, name):
            continue
        value = getattr(plain, name)
        if _plain(value) and value == getattr(nudged, name, object()):
            found[name] = value
    found = {k: v for k, v in found.items() if _plain(v)}
    if not hasattr(plain, "num_attention_heads"):
        found["heads"] = False
    return found


def composite(cls: type, mapping: Any) -> dict[str, Any] | None:
    """How cls builds its text config (None: it has none, or it cannot be built to tell)."""
    try:
        plain = cls()
    except Exception:  # noqa: BLE001
        return None
    names = [n for n in TEXT_CONFIG_NAMES if getattr(plain, n, None) is not None]
    if len(names) != 1 or not hasattr(getattr(plain, names[0]), "model_type"):
        return None
    name = names[0]
    found: dict[str, Any] = {"name": name}
    try:
        # the class, not the instance: a class that ignores the dict's model_type still copies it as an attribute
        found["default"] = type(getattr(cls(**{name: {}}), name)).model_type
        other = "mistral" if found["default"] != "mistral" else "llama"
        found["follows"] = type(getattr(cls(**{name: {"model_type": other}}), name)) is mapping[other]
    except Exception:  # noqa: BLE001 - a dict text config it cannot take: it has no default to tell
        return None
    try:
        flat = cls(num_attention_heads=7)
        found["flat"] = getattr(getattr(flat, name), "num_attention_heads", None) == 7
    except Exception:  # noqa: BLE001
        found["flat"] = False
    if found["default"] not in mapping:
        return None
    return found


def generate(roots: list[Path]) -> dict[str, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"  # a class that would fetch a default backbone config (timm) fails fast
    import huggingface_hub.constants
    import transformers
    import transformers.utils.hub
    from transformers import CONFIG_MAPPING

    # transformers imported earlier (a test) read the variable already: offline all the same
    with mock.patch.object(huggingface_hub.constants, "HF_HUB_OFFLINE", True), \
            mock.patch.object(transformers.utils.hub, "_is_offline_mode", True):
        return _generate(roots, transformers.__version__, CONFIG_MAPPING)


def _generate(roots: list[Path], version: str, mapping: Any) -> dict[str, Any]:
    if version != TRANSFORMERS:
        raise SystemExit(f"transformers {TRANSFORMERS} is needed, {version} is installed")
    skip = vllm_registered(roots)
    classes: dict[str, Any] = {}
    composites: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type in sorted(mapping.keys()):
            if model_type in skip:
                continue
            cls = mapping[model_type]
            built = composite(cls, mapping)
            if built is not None:  # its own fields are not read: get_text_config returns the sub-config
                if built["default"] not in skip:
                    composites[model_type] = built
                continue
            facts = class_facts(cls)
            if facts is not None:
                classes[model_type] = facts
    return {"transformers": TRANSFORMERS, "classes": classes, "composites": composites}


def text(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def main() -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    import vllm_source

    from pdlint.vllm.releases import KNOWN

    TABLE.write_text(text(generate(list(vllm_source.roots(KNOWN).values()))), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

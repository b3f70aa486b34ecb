"""The JSON Schema of pdlint's config file (schemas/pdlint-config.schema.json; `pdlint schema config` prints it).

It documents the `models:` table key by key, from config/models.py's own key list, and the keys `variables:`
may map (config/variables.py NAMES), so an editor completes and checks them; the file's other keys are
described by the README and checked by pdlint itself (exit 2 on a wrong one).
"""
from __future__ import annotations

import json
from typing import Any

from ..config.models import FACT_KEYS, KEYS
from ..config.variables import NAMES

SCHEMA_ID = "https://pdlint.dev/schemas/pdlint-config.schema.json"
# each models: key -> (JSON Schema type, what it says); the inventory variable is vllm_model_<key>
_FACTS: dict[str, tuple[Any, str]] = {
    "num_attention_heads": ({"type": "integer", "minimum": 1}, "Attention heads (hf_text_config.num_attention_heads)."),
    "num_kv_heads": ({"type": "integer", "minimum": 1}, "Total KV heads, as vLLM's get_total_num_kv_heads gives them."),
    "is_mla": ({"type": "boolean"}, "Multi-head latent attention (DeepSeek-style: one latent KV per token)."),
    "has_ssm": ({"type": "boolean"}, "A hybrid model with Mamba/SSM or linear-attention layers beside attention."),
    "sliding_window": ({"type": ["integer", "null"], "minimum": 1}, "The sliding window in tokens; null: none."),
}
_CONFIG = ("The model's config.json (a file path, relative to this config file; ~ expands): its facts derived as the "
           "instance's vLLM release derives them. Facts written beside it override the file's.")


def document() -> dict[str, Any]:
    """The config file's schema: the `models:` table in full, the other keys open."""
    if set(_FACTS) != set(FACT_KEYS) or set(KEYS) != {*FACT_KEYS, "config"}:
        raise AssertionError("config/models.py's keys changed: describe them here")
    entry = {"type": "object", "additionalProperties": False,
             "description": "One model's facts, or the config.json that holds them.",
             "properties": {**{k: {**kind, "description": f"{text} Inventory variable: vllm_model_{k}.",
                                   "markdownDescription": f"**{k}**: {text} Inventory variable: `vllm_model_{k}`."}
                               for k, (kind, text) in _FACTS.items()},
                            "config": {"type": "string", "minLength": 1, "description": _CONFIG}}}
    models = {"type": "object", "additionalProperties": entry,
              "description": "Facts of models pdlint's table lacks, keyed by the vllm_model string (any case): they "
                             "come after the inventory's vllm_model_* variables and before config.json files and "
                             "pdlint's own table."}
    variables = {"type": "object", "propertyNames": {"enum": list(NAMES)},
                 "additionalProperties": {"type": ["string", "number", "boolean", "array", "object"]},
                 "description": "A role's own names mapped onto pdlint's: contract variable -> a Jinja expression over "
                                "the host's variables, group_names and inventory_hostname (rendered as Ansible renders "
                                "templates, lookups refused), or the value itself."}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "$id": SCHEMA_ID,
            "title": "pdlint's config file (.pdlint.yaml, or [tool.pdlint] of pyproject.toml)",
            "description": "The models: table is described key by key; the other keys are in the README's "
                           "Configuration section.",
            "type": "object",
            "properties": {"models": models, "variables": variables,
                           "playbook": {"type": "string", "minLength": 1,
                                        "description": "The playbook (site.yml) whose plays and roles say what each "
                                                       "host runs, relative to this config file; --playbook "
                                                       "replaces it."}}}


def dumps() -> str:
    return json.dumps(document(), indent=2) + "\n"

"""The config file's `models:` table: a model's facts, or the config.json that holds them.

    models:
      my-org/custom-70b: {num_attention_heads: 64, num_kv_heads: 8, is_mla: false}
      /models/finetune: {config: models/finetune-config.json}   # relative to the config file

The names are the `vllm_model` strings (any case); the fact keys are the inventory's `vllm_model_*` names
without the prefix. Facts written here override those of the named config.json.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError

# key in the table -> ModelFacts attribute; the inventory variable is vllm_model_<key>
FACT_KEYS = {"num_attention_heads": "heads", "num_kv_heads": "kv_heads", "is_mla": "mla", "has_ssm": "ssm",
             "sliding_window": "sliding_window"}
_BOOLS = ("is_mla", "has_ssm")
KEYS = (*FACT_KEYS, "config")


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    """One model of the table: its facts (ModelFacts attribute, value) and the config.json named, absolute."""

    name: str
    facts: tuple[tuple[str, Any], ...] = ()
    config: str | None = None
    source: str = ""  # the config file, for messages


def _fact(key: str, value: Any, where: str) -> Any:
    if key in _BOOLS:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if key == "sliding_window" and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a positive whole number, got {value!r}")
    return value


def _entry(name: str, value: Any, source: str, table: str, base: str | None) -> ModelEntry:
    where = f"{source}: {table}models.{name}"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(KEYS)}")
    unknown = [k for k in value if k not in KEYS]
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(KEYS)})")
    config = value.get("config")
    if config is not None:
        if not isinstance(config, str) or not config.strip():
            raise ConfigError(f"{where}.config: expected the path of a config.json, got {config!r}")
        config = os.path.expanduser(config)
        config = os.path.normpath(os.path.join(base, config)) if base and not os.path.isabs(config) else config
    facts = tuple((FACT_KEYS[k], _fact(k, v, f"{where}.{k}")) for k, v in value.items() if k in FACT_KEYS)
    if not facts and config is None:
        raise ConfigError(f"{where}: give the model's facts ({', '.join(FACT_KEYS)}) or config: PATH")
    # named absolute in messages, so the CLI, the play and the language server say the same from any directory
    return ModelEntry(name, facts, config, os.path.join(base, os.path.basename(source)) if base else source)


def parse(value: Any, source: str, table: str, base: str | None) -> dict[str, ModelEntry]:
    """The `models:` table, keyed by the lower-cased model name; `config:` paths made absolute against base."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: {table}models: expected a mapping of vllm_model names to their facts")
    entries: dict[str, ModelEntry] = {}
    for name, item in value.items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{source}: {table}models: expected model names, got {name!r}")
        entries[name.strip().lower()] = _entry(name.strip(), item, source, table, base)
    return entries

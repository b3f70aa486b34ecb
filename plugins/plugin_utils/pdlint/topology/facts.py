"""pdlint's table of known models (data/model-attention-facts.json, each entry with its source)."""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .types import ModelFacts

_TABLE = Path(__file__).with_name("data") / "model-attention-facts.json"


@functools.lru_cache(maxsize=1)
def table() -> dict[str, dict[str, Any]]:
    """Model name (and every alias), lower-cased -> entry."""
    raw: dict[str, dict[str, Any]] = json.loads(_TABLE.read_text(encoding="utf-8"))
    index: dict[str, dict[str, Any]] = {}
    for name, entry in raw.items():
        entry = dict(entry, name=name)
        for key in (name, *entry.get("aliases", ())):
            # Aliases may carry a note: "org/model (same architecture)".
            index[re.sub(r"\s*\(.*\)\s*$", "", key).lower()] = entry
    return index


def known(model: str | None) -> ModelFacts:
    """Facts of a known model, or empty facts."""
    if not model:
        return ModelFacts()
    entry = table().get(model.strip().lower())
    if entry is None:
        return ModelFacts()
    return ModelFacts(
        heads=entry.get("num_attention_heads"),
        kv_heads=entry.get("num_key_value_heads"),
        mla=bool(entry.get("mla")),
        ssm=bool(entry.get("hybrid_ssm", False)),
        sliding_window=entry.get("sliding_window"),
        layers=entry.get("num_layers"),
        layer_kinds=_kinds(entry.get("layer_kinds")),
        attention_chunk_size=entry.get("attention_chunk_size"),
        head_size=entry.get("head_size"), max_len=entry.get("max_model_len"), weight_bytes=entry.get("weight_bytes"),
        weight_source=f"pdlint model table: {entry['name']}: {entry['weight_source']}" if "weight_source" in entry
        else "",
        source=f"pdlint model table: {entry['name']}",
    )


def _kinds(text: Any) -> tuple[str, ...] | None:
    """The table's run-length layer kinds ("linear*3 full*1 ..."; vllm/model_layers.run_length writes them)."""
    if not isinstance(text, str):
        return None
    kinds: list[str] = []
    for run in text.split():
        kind, _star, count = run.partition("*")
        if not count.isdigit():
            return None  # not a run-length string: the layers stay unknown
        kinds.extend([kind] * int(count))
    return tuple(kinds)


FACTS = ("heads", "kv_heads", "mla", "ssm", "sliding_window")
# what the stage rules read besides (no vllm_model_* variable sets them: config.json or the table does)
LAYER_FACTS = ("layers", "layer_kinds")
# what the memory rules read besides (vllm/model/memory.py)
MEMORY_FACTS = ("head_size", "max_len", "weight_bytes", "weight_source")


def where(found: ModelFacts, source: str) -> tuple[tuple[str, str], ...]:
    """(attribute, source) for each fact found knows."""
    return tuple((name, source) for name in FACTS if getattr(found, name) is not None) if source else ()


def listing() -> list[tuple[str, ModelFacts, tuple[str, ...], str]]:
    """Every model of the table, sorted by name: (name, facts, aliases, the row's source: the config.json it was
    generated from by tools/model_table.py, or why it has none)."""
    raw: dict[str, dict[str, Any]] = json.loads(_TABLE.read_text(encoding="utf-8"))
    return [(name, known(name), tuple(entry.get("aliases", ())), str(entry.get("source", "")))
            for name, entry in sorted(raw.items())]


# The model's facts from anywhere but the inventory: (vllm_model, vllm_revision, vllm_version) -> facts. The engine
# passes one that also reads config.json files (engine/model_facts.py); without it, this table alone.
ModelLookup = Callable[[str | None, str | None, str], ModelFacts]
INVENTORY = "the inventory's vllm_model_* variables"
TABLE = "pdlint's model table"


def table_lookup(model: str | None, _revision: str | None, _version: str) -> ModelFacts:
    """The table's facts of model, each saying so."""
    found = known(model)
    return dataclasses.replace(found, looked=(TABLE,), where=where(found, found.source))


@functools.lru_cache(maxsize=256)  # a lookup answers every host of a model with one object: one copy for all
def _inventory_first(found: ModelFacts) -> ModelFacts:
    return dataclasses.replace(found, looked=(INVENTORY, *found.looked))


def with_inventory(model: str | None, revision: str | None, version: str, values: Mapping[str, Any],
                   lookup: ModelLookup) -> ModelFacts:
    """The inventory's vllm_model_* facts (values, by attribute) first; lookup's for those it does not set."""
    if all(n in values for n in FACTS):  # nothing left to look up: no file is read
        return ModelFacts(**values, source="inventory", where=tuple((n, "inventory") for n in FACTS),
                          looked=(INVENTORY,))
    found = _inventory_first(lookup(model, revision, version))
    if not values:
        return found
    sources = dict(found.where)
    sources.update((n, "inventory") for n in values)
    named = sorted(set(sources.values()))
    return dataclasses.replace(
        found, **values, where=tuple(sources.items()),
        source=named[0] if len(named) == 1 else "; ".join(
            f"{', '.join(n for n, s in sources.items() if s == src)}: {src}" for src in named))

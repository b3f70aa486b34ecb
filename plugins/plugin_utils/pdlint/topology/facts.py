"""pdlint's table of known models (data/model-attention-facts.json, each entry with its source)."""
from __future__ import annotations

import functools
import json
import re
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
        source=f"pdlint model table: {entry['name']}",
    )


def listing() -> list[tuple[str, ModelFacts, tuple[str, ...]]]:
    """Every model of the table, sorted by name: (name, facts, aliases)."""
    raw: dict[str, dict[str, Any]] = json.loads(_TABLE.read_text(encoding="utf-8"))
    return [(name, known(name), tuple(entry.get("aliases", ()))) for name, entry in sorted(raw.items())]

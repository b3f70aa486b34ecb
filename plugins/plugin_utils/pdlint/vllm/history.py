"""Which timelines decide each rule, for `pdlint rules ID` and docs/rules-provenance.md."""
from __future__ import annotations

from typing import Any, TypeVar

from .releases import Timeline

T = TypeVar("T")
HISTORY: dict[str, list[Timeline[Any]]] = {}  # rule id -> the timelines that decide it


def history(rule_id: str, timeline: Timeline[T]) -> Timeline[T]:
    """Declare that timeline decides (part of) rule_id, so the rule's docs show it span by span."""
    HISTORY.setdefault(rule_id, []).append(timeline)
    return timeline


def timelines(rule_id: str) -> list[Timeline[Any]]:
    """The timelines declared for rule_id (every module of the package has declared its own on import)."""
    return list(HISTORY.get(rule_id, ()))

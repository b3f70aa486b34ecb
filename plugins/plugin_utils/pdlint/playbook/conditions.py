"""A task's or a role's `when:` decided for one host with its merged variables, as ansible-core evaluates it
(Templar.evaluate_conditional; a list is every item true), where that can be done before the play runs.

A condition that reads what only the run knows (a variable a task registers, a fact: `ansible_*`), or one that
cannot be evaluated (an undefined variable, a lookup refused), is not decided: the task is taken as run, and the
caller says so (`unresolved`), never a silent guess.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..finding import Origin
from ..load.tagged import origin_of
from . import render


@dataclasses.dataclass(frozen=True)
class Undecided:
    condition: str
    reason: str
    origin: Origin | None


def decide(conditions: tuple[Any, ...], variables: Mapping[str, Any],
           registered: frozenset[str]) -> bool | Undecided:
    """False when one condition is false for the host; else Undecided when one cannot be decided; else True."""
    undecided: Undecided | None = None
    for written in conditions:
        for item in written if isinstance(written, list) else [written]:
            if item is None or item is True:
                continue
            if item is False:
                return False
            found = _one(item, variables, registered)
            if found is False:
                return False
            if isinstance(found, Undecided) and undecided is None:
                undecided = found
    return True if undecided is None else undecided


def _one(item: Any, variables: Mapping[str, Any], registered: frozenset[str]) -> bool | Undecided:
    from ansible.template import trust_as_template

    from ..load.reference.errors import message_of

    text = str(item).strip()
    origin = origin_of(item)
    late = sorted(n for n in render.names_read("{{ " + text + " }}") if n not in variables
                  and (n in registered or n.startswith("ansible_")))
    if late:
        return Undecided(text, f"it reads {', '.join(late)}, known only when the play runs", origin)
    try:
        return bool(render.templar(variables).evaluate_conditional(trust_as_template(text)))
    except Exception as exc:  # noqa: BLE001 - a condition that fails to evaluate is data, never a crash
        return Undecided(text, message_of(exc), origin)

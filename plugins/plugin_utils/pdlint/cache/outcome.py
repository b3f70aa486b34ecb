"""What the CLI takes from checking one inventory, and the stamps of the files outside the inventory it depends on:
apart from the cache (runs.py), so a run without one imports none of it."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from ..finding import Finding
from ..load.preflight import fingerprints
from ..load.preflight.fingerprints import Stat


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the CLI takes from checking one inventory."""

    findings: list[Finding]
    suppressed: list[Finding]
    hosts: int
    deployments: int
    assumed: bool  # some instance sets no vllm_version
    notes: list[str]  # the informational lines written to stderr
    watched: tuple[Any, ...] = ()  # stamp() of each config.json file the model facts came from or were looked for
    # What a later run after an edit reuses (incremental.py): stored beside the outcome, under units_key()
    state: Any = dataclasses.field(default=None, compare=False, repr=False)


def stamp(path: str | os.PathLike[str] | None) -> Stat | None:
    """A file a result depends on besides the inventory (ansible.cfg, a vault password file), by its stamp."""
    return None if path is None else fingerprints.stamp(path)


def watch(paths: Sequence[str]) -> tuple[Any, ...]:
    """The stamps of the model files a run depends on (outside the inventory, so not in its fingerprint)."""
    return tuple(stamp(path) for path in paths)


def unchanged(watched: Sequence[Any]) -> bool:
    """Every model file a stored result depends on is as it was."""
    return all(isinstance(w, (tuple, list)) and w and isinstance(w[0], str) and tuple(w) == stamp(w[0])
               for w in watched)

"""The value every rule produces and every reporter consumes."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

SEVERITIES = ("error", "warning", "info")


def _number(n: int | None) -> tuple[bool, int]:
    return (n is not None, n or 0)  # unknown first: a file-level finding before the lines of its file


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a value was written: file, 1-based line and column (None when unknown)."""

    file: str = ""
    line: int | None = None
    column: int | None = None

    def key(self) -> tuple[Any, ...]:
        return (self.file, _number(self.line), _number(self.column))

    def __lt__(self, other: Origin) -> bool:
        return self.key() < other.key()

    def __str__(self) -> str:
        parts = [self.file or "<inventory>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


UNKNOWN = Origin()


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem: sorted by origin first so output is stable and reads top to bottom."""

    origin: Origin
    rule: str
    severity: str
    message: str
    hint: str | None = None
    hosts: tuple[str, ...] = ()
    deployment: str | None = None

    def __lt__(self, other: Finding) -> bool:
        # as the fields' order, with what is unknown (no line, no hint) first instead of a TypeError
        return ((self.origin.key(), self.rule, self.severity, self.message, (self.hint is not None, self.hint or ""),
                 self.hosts, (self.deployment is not None, self.deployment or ""))
                < (other.origin.key(), other.rule, other.severity, other.message,
                   (other.hint is not None, other.hint or ""), other.hosts,
                   (other.deployment is not None, other.deployment or "")))

    def as_dict(self) -> dict[str, Any]:
        """The JSON output contract (README: "Usage", `--format json`): exactly these keys."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "hint": self.hint,
            "file": self.origin.file or None,
            "line": self.origin.line,
            "column": self.origin.column,
            "hosts": list(self.hosts),
            "deployment": self.deployment,
        }


def rehosted(found: list[Finding], first: str, host: str) -> list[Finding]:
    """found, made for host first, as host would have them: work done once for hosts that share their values
    (the loaders hand hosts of one profile one values dict) is reported for each of them at the same places."""
    return [dataclasses.replace(f, hosts=(host,)) if f.hosts == (first,) else f for f in found]

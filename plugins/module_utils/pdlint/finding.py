"""The value every rule produces and every reporter consumes."""
from __future__ import annotations

import dataclasses
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclasses.dataclass(frozen=True, order=True)
class Origin:
    """Where a value was written: file, 1-based line and column (None when unknown)."""

    file: str = ""
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file or "<inventory>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


UNKNOWN = Origin()


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    """One problem: sorted by origin first so output is stable and reads top to bottom."""

    origin: Origin
    rule: str
    severity: str
    message: str
    hint: str | None = None
    hosts: tuple[str, ...] = ()
    deployment: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON output contract (DESIGN.md section 5): exactly these keys."""
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

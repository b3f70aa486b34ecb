"""Why an inventory cannot be used at all (exit 2): the exception, and the one way a load-error finding is made."""
from __future__ import annotations

from ..finding import Finding, Origin


def load_error(origin: Origin, message: str, hint: str | None = None) -> Finding:
    """A load-error finding: always an error, whichever loader or check found it."""
    return Finding(origin, "load-error", "error", message, hint)


class LoadError(Exception):
    """An inventory that cannot be used at all (exit 2)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def no_hosts(sources: list[str]) -> Finding:
    """The load-error of an inventory without hosts (pdlint, explain and the language server say it alike)."""
    return load_error(Origin(", ".join(sources)), "the inventory has no hosts",
                      "name the inventory (or a file inside it) that defines the P/D hosts")

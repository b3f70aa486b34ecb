"""Why an inventory cannot be used at all (exit 2): the exception, and the one way a load-error finding is made."""
from __future__ import annotations

from ..finding import Finding


class LoadError(Exception):
    """An inventory that cannot be used at all (exit 2)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding

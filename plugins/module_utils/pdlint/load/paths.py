"""File paths as pdlint prints them (no ansible import: shared by both loaders)."""
from __future__ import annotations

import os


def display_path(path: str, base: str | None = None) -> str:
    """Relative to base (default: the working directory) when below it, as linters print."""
    base = base or os.getcwd()
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel

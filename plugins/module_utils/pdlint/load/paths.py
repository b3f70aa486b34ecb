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


class DisplayPaths:
    """display_path of normalized absolute paths, the relpath work done once per directory."""

    def __init__(self) -> None:
        self.directories: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        directory, name = os.path.split(path)
        shown = self.directories.get(directory)
        if shown is None:
            shown = self.directories[directory] = display_path(directory)
        return name if shown == "." else os.path.join(shown, name)

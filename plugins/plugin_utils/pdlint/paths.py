"""File paths as pdlint prints them: relative to the working directory for people, to the repository root for CI
systems (no ansible import: every layer may use it)."""
from __future__ import annotations

import os
from pathlib import Path


def git_root(start: Path) -> Path | None:
    """The nearest directory from start upwards that holds `.git` (a directory, or a worktree's file)."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def display(path: Path) -> str:
    """path relative to the working directory when below it, as messages print it."""
    rel = os.path.relpath(path.resolve(), Path.cwd())
    return str(path) if rel.startswith("..") else rel


def source_root(cwd: Path | None = None) -> Path:
    """What repo-relative paths are relative to: the git root of cwd, else cwd itself."""
    cwd = (cwd or Path.cwd()).resolve()
    return git_root(cwd) or cwd


def relative_uri(file: str, root: Path, cwd: Path | None = None) -> str | None:
    """file (relative to cwd, or absolute) relative to root with forward slashes; None outside root."""
    path = (cwd or Path.cwd()) / file
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    return rel.as_posix()


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

"""Where files are, as CI systems want them: relative to the repository root, forward slashes."""
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

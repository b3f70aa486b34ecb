"""Parse every YAML file of an inventory with libyaml first: Ansible's errors lose the line of a syntax error.

`compose` is the one place both loaders read a YAML file through, so limits on
hostile input apply to both.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..finding import Finding, Origin
from .paths import display_path

_YAML_EXT = (".yml", ".yaml", ".json")
_VARS_DIRS = ("group_vars", "host_vars")


class LoadError(Exception):
    """An inventory that cannot be used at all (exit 2)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _vars_files(base: Path) -> Iterator[Path]:
    for name in _VARS_DIRS:
        root = base / name
        if not root.is_dir():
            continue
        for dirpath, _dirs, files in os.walk(root):
            for f in sorted(files):
                if not f.startswith(".") and (f.endswith(_YAML_EXT) or "." not in f):
                    yield Path(dirpath) / f


def files(sources: Sequence[str]) -> Iterator[Path]:
    """The YAML files Ansible would read for these sources (inventory files and vars beside them)."""
    for source in sources:
        path = Path(source)
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_file() and child.suffix in _YAML_EXT:
                    yield child
            yield from _vars_files(path)
        elif path.is_file():
            if path.suffix in _YAML_EXT:
                yield path
            yield from _vars_files(path.parent)


def compose(path: Path) -> tuple[str, list[Any]]:
    """The text and libyaml node trees (one per document) of a YAML file. Raises LoadError."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(Finding(Origin(display_path(str(path))), "load-error", "error", f"cannot read file: {exc}"))
    try:
        return text, list(yaml.compose_all(text, Loader=loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        origin = Origin(display_path(str(path)), mark.line + 1 if mark else None, mark.column + 1 if mark else None)
        problem = exc.problem or exc.context or "invalid YAML"
        raise LoadError(Finding(origin, "load-error", "error", f"YAML syntax error: {problem}",
                                "fix the YAML syntax at this position")) from exc
    except yaml.YAMLError as exc:
        raise LoadError(Finding(Origin(display_path(str(path))), "load-error", "error", f"YAML error: {exc}")) from exc


def check(sources: Sequence[str]) -> Finding | None:
    """The first YAML syntax error, with the parser's line and column, or None."""
    for path in files(sources):
        try:
            compose(path)
        except LoadError as exc:
            return exc.finding
    return None

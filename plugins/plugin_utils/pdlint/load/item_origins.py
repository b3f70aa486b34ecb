"""Where the null and boolean items of a YAML list are, for the reference loader.

ansible-core tags a list with its origin but cannot tag None or a bool, so a null item of `vllm_instances` or
`pdlint_skip` would be reported at the list. The fast loader has every item's node (load/fast/variables/values.py); this
reads the file the list's tag names once more with libyaml and gives the same marks, so both loaders agree.
"""
from __future__ import annotations

import functools
from typing import Any

import yaml

from .preflight.fingerprints import Stat, stamp

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Mark = tuple[int, int]  # (line, column), 1-based as Origin has them


def items(path: str, line: int, column: int) -> list[Mark] | None:
    """The marks of the items of the sequence starting at line:column of the YAML file path (None: not found)."""
    return _sequences(stamp(path)).get((line, column))


@functools.lru_cache(maxsize=32)
def _sequences(file: Stat) -> dict[Mark, list[Mark]]:
    """The item marks of each sequence in the file as it is now (the stamp keys the memo: an edit reads it again)."""
    path = file[0]
    try:
        with open(path, encoding="utf-8") as stream:
            root = yaml.compose(stream, Loader=_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}  # a vaulted or unreadable file: the list's own origin stands
    found: dict[Mark, list[Mark]] = {}
    stack: list[Any] = [root] if root is not None else []
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:  # aliases share nodes
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            found[_mark(node)] = [_mark(item) for item in node.value]
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(value for _key, value in node.value)
    return found


def _mark(node: Any) -> Mark:
    return node.start_mark.line + 1, node.start_mark.column + 1

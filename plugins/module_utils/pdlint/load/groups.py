"""Group names Ansible accepts only with a warning (it prints it to stderr; pdlint makes it a finding)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..finding import Finding, Origin
from . import tagged

_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a Python identifier: usable in group_vars and templates


def _origin(name: str, group: Any, sources: Sequence[str]) -> Origin:
    """The group name's tagged origin (YAML), else the `[name]` header of an INI source."""
    found = tagged.origin_of(group.name)
    if found is not None:
        return found
    header = re.compile(r"^\s*\[" + re.escape(name) + r"(:\w+)?\]")
    for source in sources:
        files = [source] if os.path.isfile(source) else (
            [os.path.join(source, f) for f in sorted(os.listdir(source))] if os.path.isdir(source) else [])
        for path in files:
            if not os.path.isfile(path) or path.endswith((".yml", ".yaml", ".json")):
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                for number, line in enumerate(fh, 1):
                    if header.match(line):
                        return Origin(tagged.display_path(path), number, line.index("[") + 2)
    return Origin()


def invalid_names(inventory: Any, sources: Sequence[str]) -> Iterator[Finding]:
    """A warning for each group whose name is not a valid identifier."""
    for name, group in sorted(inventory.groups.items()):
        if not _VALID.match(name):
            yield Finding(_origin(name, group, sources), "inventory[group-name]", "warning",
                          f"group name {name!r} has characters Ansible warns about (use letters, digits, _)",
                          f"rename it to {re.sub(r'[^A-Za-z0-9_]', '_', name)!r}; patterns and group_vars "
                          "files must change with it")

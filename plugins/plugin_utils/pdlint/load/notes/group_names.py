"""Group names Ansible accepts only with a warning (it prints it to stderr; pdlint makes it a finding)."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ...finding import Finding, Origin
from ...paths import display_path

_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a Python identifier: usable in group_vars and templates


def _origin(name: Any, sources: Sequence[str], declared: Mapping[str, Origin]) -> Origin:
    """The group name's tagged origin (YAML), else the line that declares it: `[name]` in INI, `name:` in YAML."""
    if name in declared:  # the fast loader's record of the YAML key, as ansible-core tags it
        return declared[name]
    if "ansible" in sys.modules:  # names from ansible-core carry their origin; the fast loader's are plain
        from ..tagged import origin_of

        found = origin_of(name)
        if found is not None:
            return found
    # `[name]` in INI, `name:` in YAML, `"name":` in JSON (ansible-core tags no JSON key)
    quoted = re.escape(name)
    declaring = re.compile(r"^(\s*\[)" + quoted + r"(:\w+)?\]|^(\s+)" + quoted + r"\s*:|^(.*?)([\"'])" + quoted
                           + r"\5\s*:")
    for source in sources:
        files = [source] if os.path.isfile(source) else (
            [os.path.join(source, f) for f in sorted(os.listdir(source))] if os.path.isdir(source) else [])
        for path in files:
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                for number, line in enumerate(fh, 1):
                    match = declaring.match(line)
                    if match:
                        column = len(match.group(1) or match.group(3) or match.group(4) or "") + 1
                        return Origin(display_path(path), number, column)
    return Origin()


def invalid_names(names: Iterable[Any], sources: Sequence[str],
                  declared: Mapping[str, Origin] | None = None) -> Iterator[Finding]:
    """A warning for each group name that is not a valid identifier (the names may carry ansible-core's origin,
    or come with the origins the fast loader recorded in declared)."""
    for name in sorted(names, key=str):
        if not _VALID.match(str(name)):
            yield Finding(_origin(name, sources, declared or {}), "inventory[group-name]", "warning",
                          f"group name {str(name)!r} has characters Ansible warns about (use letters, digits, _)",
                          f"rename it to {re.sub(r'[^A-Za-z0-9_]', '_', str(name))!r}; patterns and group_vars "
                          "files must change with it")

"""Hosts named after Ansible's built-in groups, `all` and `ungrouped`: ansible-core cannot keep such a host.

Seen with ansible-core 2.19: a YAML host `ungrouped` fails the load ("can't add group to itself", an internal
error of InventoryData), a YAML host `all` fails it too ("creates a recursive dependency loop"), an INI host
`ungrouped` loses its variables, and an INI host `all` is kept beside the group with a warning. Neither loader can
say what Ansible will do with such a host at bring-up, so both refuse the inventory at the line that names it.
"""
from __future__ import annotations

import re
from typing import Any

import yaml

from ..preflight.guard import Refused, refuse

RESERVED = ("all", "ungrouped")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_HINT = "rename the host (its address can stay the same: set ansible_host)"


def _message(name: str) -> str:
    return (f"host {name!r} has the name of Ansible's built-in group {name!r}: ansible-core fails to load the "
            "inventory or drops the host's variables")


def _yaml_hosts(node: Any, depth: int = 0) -> Any:
    """The key nodes of every host a YAML inventory's group tree names."""
    if not isinstance(node, yaml.MappingNode) or depth > 64:
        return
    for _key, value in node.value:
        if not isinstance(value, yaml.MappingNode):
            continue
        for field, inner in value.value:
            if not isinstance(field, yaml.ScalarNode):
                continue
            if field.value == "hosts" and isinstance(inner, yaml.MappingNode):
                yield from (k for k, _unused in inner.value if isinstance(k, yaml.ScalarNode))
            elif field.value == "children":
                yield from _yaml_hosts(inner, depth + 1)


# A key `all` or `ungrouped` anywhere but the root group's own `all:` at column 0 (block or flow style, quoted or
# not): only then can a host carry the name, and only then is the file composed (a 10k-host hosts.yml takes 0.7 s).
_MAYBE = re.compile(r"""(?:^[ \t]+|[{,][ \t]*)["']?(?:all|ungrouped)["']?[ \t]*:""", re.M)


def check_yaml(path: str, text: str) -> None:
    """Refused at the first host of a YAML inventory named `all` or `ungrouped`."""
    if not _MAYBE.search(text):
        return
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        return  # not YAML after all: Ansible's INI plugin reads it (check_ini)
    for key in _yaml_hosts(root):
        if key.value in RESERVED:
            raise refuse(path, _message(key.value), _HINT, key.start_mark.line + 1, key.start_mark.column + 1)


def check_ini(path: str, text: str) -> None:
    """Refused at the first host line of an INI inventory named `all` or `ungrouped` (the INI plugin's sections)."""
    section_kind = "hosts"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith((";", "#")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section_kind = line[1:-1].partition(":")[2] or "hosts"
            continue
        if section_kind != "hosts":
            continue
        name = line.split(None, 1)[0]
        if name in RESERVED:
            raise refuse(path, _message(name), _HINT, number, raw.index(name) + 1)


__all__ = ["RESERVED", "Refused", "check_ini", "check_yaml"]

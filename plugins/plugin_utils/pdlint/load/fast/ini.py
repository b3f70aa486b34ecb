"""A static INI inventory file into the model, as ansible-core's `ini` inventory plugin reads it."""
from __future__ import annotations

import ast
import re
import shlex
import warnings
from typing import Any

from ...finding import Origin
from ...hostvars import KEY, is_relevant
from .inventory import Inventory, expand_hosts
from .variables.values import Origins, Unsupported, Var


class Rejected(Unsupported):
    """A line ansible-core's INI plugin refuses too: the file is not an INI inventory."""


_MAX_RANGES = 100  # ansible-core expands host ranges recursively, one level per range: beyond this, let it decide
_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:\#.*)?$")
_GROUPNAME = re.compile(r"^([^:\]\s]+)\s*(?:\#.*)?$")


def value(text: str, origin: Origin) -> Var:
    """ast.literal_eval when it parses, else the string; containers become lists and dicts (ini._parse_value)."""
    parsed: Any = text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    except Exception as exc:
        raise Unsupported(f"INI value {text!r}") from exc
    origins: Origins = {}
    result = _coerce(parsed, (), origin, origins)
    origins.setdefault((), origin)  # a null or boolean takes its key's origin, as in the reference loader
    origins[(KEY,)] = origin
    return result, origins


def _coerce(v: Any, path: tuple[Any, ...], origin: Origin, origins: Origins) -> Any:
    if isinstance(v, (list, tuple, set)):
        origins[path] = origin
        return [_coerce(x, (*path, i), origin, origins) for i, x in enumerate(v)]
    if isinstance(v, dict):
        origins[path] = origin
        return {str(k): _coerce(x, (*path, str(k)), origin, origins) for k, x in v.items()}
    if v is ...:
        v = "..."
    elif isinstance(v, complex):
        v = str(v)
    elif isinstance(v, bytes):
        try:
            v = v.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unsupported("INI bytes value") from exc
    if v is None or isinstance(v, bool):
        return v
    origins[path] = origin
    return v


def parse(inv: Inventory, text: str | list[str], file: str) -> None:
    """Add one INI file's groups, hosts and variables to inv. Raises Unsupported on what Ansible rejects."""
    pending: dict[str, dict[str, Any]] = {}
    group, state = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines() if isinstance(text, str) else text, 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = _SECTION.match(line)
        if m:
            group, state = inv.safe(m.group(1)), m.group(2) or "hosts"
            if state not in ("hosts", "children", "vars"):
                raise Rejected(f"INI section type {state}")
            if group not in inv.groups:
                if state == "vars" and group not in pending:
                    pending[group] = {"state": state}
                inv.add_group(group)
            if group in pending and state != "vars":
                if pending[group]["state"] == "children":
                    _add_pending(inv, group, pending)
                elif pending[group]["state"] == "vars":
                    del pending[group]
            continue
        if line.startswith("[") and line.endswith("]"):
            raise Rejected("invalid INI section")
        origin = Origin(file, number)
        if state == "hosts":
            _hosts(inv, line, group, origin)
        elif state == "vars":
            if "=" not in line:
                raise Rejected("INI vars line without =")
            k, v = (e.strip() for e in line.split("=", 1))
            _set(inv, group, k, v, origin)
        else:
            g = _GROUPNAME.match(line)
            if not g:
                raise Rejected("INI children line")
            child = g.group(1)
            if child in inv.groups:
                inv.add_child(group, child)
            elif child in pending:
                pending[child].setdefault("parents", []).append(group)
            else:
                pending[child] = {"state": "children", "parents": [group]}
    if pending:
        raise Rejected("INI section names an undefined group")


def _add_pending(inv: Inventory, group: str, pending: dict[str, dict[str, Any]]) -> None:
    """ini._add_pending_children, with a stack for its recursion (same order of add_child calls)."""
    stack = [(group, iter(pending[group].get("parents", [])))]
    while stack:
        current, parents = stack[-1]
        parent = next(parents, None)
        if parent is None:
            stack.pop()
            del pending[current]
            continue
        inv.add_child(parent, current)
        if parent in pending and pending[parent]["state"] == "children":
            stack.append((parent, iter(pending[parent].get("parents", []))))


def _set(inv: Inventory, entity: str, name: str, text: str, origin: Origin) -> None:
    if name == "ansible_group_priority":
        inv.set_variable(entity, name, (None, {}), value(text, origin)[0])
    elif is_relevant(name, inv.keep):
        inv.set_variable(entity, name, value(text, origin))


def _hosts(inv: Inventory, line: str, group: str, origin: Origin) -> None:
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError as exc:
        raise Rejected("INI host line") from exc
    if not tokens:
        raise Unsupported("INI host line")
    if tokens[0].strip().endswith(":") and not tokens[0].strip()[:-1].endswith("]"):
        raise Rejected(f"INI host pattern {tokens[0]!r} ends in ':'")
    if tokens[0].count("[") > _MAX_RANGES:
        raise Unsupported(f"INI host pattern with more than {_MAX_RANGES} ranges")
    pairs = []
    for token in tokens[1:]:
        if "=" not in token:
            raise Rejected("INI host variable without =")
        pairs.append(token.split("=", 1))
    hosts = expand_hosts(tokens[0])
    if any(host.strip() == "---" for host in hosts):
        raise Rejected("INI host pattern '---' (a YAML document marker)")
    for host in hosts:
        inv.add_host(host, group)
        for k, v in pairs:
            _set(inv, host, k, v, origin)

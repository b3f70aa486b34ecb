"""An inventory as ansible-core's InventoryData builds it, reduced to what pdlint reads."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from ...finding import Origin
from ...hostvars import is_relevant
from .variables.values import Unsupported, Var

_INVALID_GROUP_CHARS = re.compile(r"^[\d\W]|[^\w]")  # ansible.constants.INVALID_VARIABLE_NAMES
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # string.ascii_letters, without importing string


@dataclasses.dataclass
class Group:
    name: str
    vars: dict[str, Var] = dataclasses.field(default_factory=dict)
    children: list[str] = dataclasses.field(default_factory=list)
    parents: list[str] = dataclasses.field(default_factory=list)
    priority: int = 1


@dataclasses.dataclass
class Host:
    name: str
    vars: dict[str, Var] = dataclasses.field(default_factory=dict)
    groups: list[str] = dataclasses.field(default_factory=list)  # direct membership


class Inventory:
    """Groups and hosts with their inventory-file variables (only pdlint's, plus group priorities)."""

    def __init__(self, safe_group_names: bool = False, keep: frozenset[str] = frozenset()) -> None:
        self.keep = keep  # names kept beside pdlint's (hostvars.is_relevant): what the config's mapping reads
        self.groups: dict[str, Group] = {}
        self.hosts: dict[str, Host] = {}
        self.safe_group_names = safe_group_names  # force_valid_group_names: always / silently
        self.declared: dict[str, Origin] = {}  # where each group name was first given (YAML keys)
        self.add_group("all")
        self.add_group("ungrouped")
        self.add_child("all", "ungrouped")

    def add_group(self, name: Any, origin: Origin | None = None) -> str:
        """The group's name as ansible-core's Group keeps it (invalid characters replaced when configured)."""
        if not isinstance(name, str) or not name:
            raise Unsupported(f"group name {name!r}")
        name = self.safe(name)
        if name not in self.groups:
            self.groups[name] = Group(name)
            if origin is not None:
                self.declared[name] = origin
        return name

    def safe(self, name: str) -> str:
        """to_safe_group_name under the configured force_valid_group_names."""
        return _INVALID_GROUP_CHARS.sub("_", name) if self.safe_group_names else name

    def add_host(self, name: Any, group: str) -> None:
        if not isinstance(name, str) or not name:
            raise Unsupported(f"host name {name!r}")
        host = self.hosts.setdefault(name, Host(name))
        if group not in host.groups:
            host.groups.append(group)

    def add_child(self, parent: str, child: str) -> None:
        if child in self.groups:
            if child in self.groups[parent].children:
                return
            if parent == child or child in self.ancestors(parent):
                raise Unsupported("group loop")
            self.groups[parent].children.append(child)
            self.groups[child].parents.append(parent)
        elif child in self.hosts:
            self.add_host(child, parent)
        else:
            raise Unsupported(f"{child} is not a known host nor group")

    def set_variable(self, entity: str, name: Any, value: Var, raw: Any = None) -> None:
        """As InventoryData.set_variable: a name that is a group (even when given as a host) sets the group's."""
        if entity in self.groups:
            group = self.groups[entity]
            if name == "ansible_group_priority":
                try:  # Group.set_variable: int(value), and any failure fails the whole load
                    group.priority = int(raw)
                except Exception as exc:  # ansible-core reports it: its message is the load-error
                    raise Unsupported(f"ansible_group_priority {raw!r} of group {entity} is not a number") from exc
                return
            target = group.vars
        else:
            target = self.hosts[entity].vars
        if isinstance(name, str) and is_relevant(name, self.keep):
            target[name] = value

    def ancestors(self, name: str) -> set[str]:
        seen: set[str] = set()
        stack = list(self.groups[name].parents)
        while stack:
            g = stack.pop()
            if g not in seen:
                seen.add(g)
                stack.extend(self.groups[g].parents)
        return seen

    def reconcile(self) -> None:
        """Every group under `all`; hosts in no group but `all` go to `ungrouped` (InventoryData.reconcile_inventory)."""
        for name in list(self.groups):
            if name != "all" and not self.groups[name].parents:
                self.add_child("all", name)
        for host in self.hosts.values():
            others = set(host.groups) - {"all", "ungrouped"}
            if "ungrouped" in host.groups and others:
                host.groups.remove("ungrouped")
            elif not others and "ungrouped" not in host.groups:
                host.groups.append("ungrouped")

    def depths(self) -> dict[str, int]:
        """Longest path from `all`: the depth ansible-core's add_child maintains. Iterative (topological order):
        a chain of groups may be as long as the file is."""
        depth = {name: 0 for name in self.groups}
        waiting = {name: len(g.parents) for name, g in self.groups.items()}
        ready = [name for name, n in waiting.items() if n == 0]
        while ready:
            name = ready.pop()
            for child in self.groups[name].children:
                depth[child] = max(depth[child], depth[name] + 1)
                waiting[child] -= 1
                if waiting[child] == 0:
                    ready.append(child)
        return depth

    def host_groups(self, host: Host) -> set[str]:
        result = set(host.groups)
        for g in host.groups:
            result |= self.ancestors(g)
        return result


def expand_hosts(pattern: Any) -> list[str]:
    """Host names of a pattern with [a:b] / [a:b:step] ranges, as ansible's expand_hostname_range.

    One range at a time over the whole list (ansible-core recurses once per range; every name of one step has
    the same ranges left, so this keeps its order without recursing on the number of ranges)."""
    if not isinstance(pattern, str):
        raise Unsupported(f"host pattern {pattern!r}")
    outside = pattern.split("[")[0] + "".join(p.split("]", 1)[-1] for p in pattern.split("[")[1:])
    if ":" in outside or pattern.startswith("[") or pattern.endswith(":"):
        raise Unsupported(f"host pattern with a port or IPv6 address: {pattern}")
    names = [pattern]
    while "[" in names[0]:
        names = [name for ranged in names for name in _expand_first(ranged)]
        if not names:
            break
    return names


def _expand_first(pattern: str) -> list[str]:
    """The names of a pattern's first range (the rest left as they are)."""
    try:
        head, nrange, tail = pattern.replace("[", "|", 1).replace("]", "|", 1).split("|")
    except ValueError as exc:
        raise Unsupported(f"host range {pattern}") from exc
    bounds = nrange.split(":")
    if len(bounds) not in (2, 3) or not bounds[1]:
        raise Unsupported(f"host range {pattern}")
    beg, end = bounds[0] or "0", bounds[1]
    step = bounds[2] if len(bounds) == 3 else 1
    width = len(beg) if beg[0] == "0" and len(beg) > 1 else 0
    if width and width != len(end):
        raise Unsupported(f"host range {pattern}")
    try:
        if beg in _LETTERS and end in _LETTERS:
            i, j = _LETTERS.index(beg), _LETTERS.index(end)
            if i > j:
                raise Unsupported(f"host range {pattern}")
            seq: Any = _LETTERS[i:j + 1:int(step)]
        else:
            seq = range(int(beg), int(end) + 1, int(step))
    except ValueError as exc:
        raise Unsupported(f"host range {pattern}") from exc
    return [head + (str(item).zfill(width) if width else str(item)) + tail for item in seq]


def _var_data(var: Var) -> tuple[Any, dict[Any, tuple[str, int | None, int | None]]]:
    value, origins = var
    return value, {path: (o.file, o.line, o.column) for path, o in origins.items()}


def _var(data: Any) -> Var:
    value, origins = data
    return value, {path: Origin(*o) for path, o in origins.items()}


def dump(inv: Inventory) -> tuple[Any, ...]:
    """The inventory as plain data the run cache keeps (marshal: no code runs when it is read back)."""
    return (inv.safe_group_names,
            {n: ({k: _var_data(v) for k, v in g.vars.items()}, g.children, g.parents, g.priority)
             for n, g in inv.groups.items()},
            {n: ({k: _var_data(v) for k, v in h.vars.items()}, h.groups) for n, h in inv.hosts.items()},
            {n: (o.file, o.line, o.column) for n, o in inv.declared.items()}, frozenset(inv.keep))


def restore(data: Any) -> Inventory:
    """The inventory dump() gave (raises ValueError, TypeError on anything else)."""
    safe, groups, hosts, declared, keep = data
    inv = Inventory.__new__(Inventory)
    inv.safe_group_names = bool(safe)
    inv.keep = frozenset(str(name) for name in keep)  # templates read these names too (load/fast/variables/render.py)
    inv.groups = {n: Group(n, {k: _var(v) for k, v in gv.items()}, list(children), list(parents), int(priority))
                  for n, (gv, children, parents, priority) in groups.items()}
    inv.hosts = {n: Host(n, {k: _var(v) for k, v in hv.items()}, list(member)) for n, (hv, member) in hosts.items()}
    inv.declared = {n: Origin(*o) for n, o in declared.items()}
    return inv

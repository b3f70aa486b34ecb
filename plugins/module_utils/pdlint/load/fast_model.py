"""An inventory as ansible-core's InventoryData builds it, reduced to what pdlint reads."""
from __future__ import annotations

import dataclasses
import string
from typing import Any

from ..hostvars import is_relevant
from .fast_values import Unsupported, Var


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

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self.hosts: dict[str, Host] = {}
        self.add_group("all")
        self.add_group("ungrouped")
        self.add_child("all", "ungrouped")

    def add_group(self, name: Any) -> str:
        if not isinstance(name, str) or not name:
            raise Unsupported(f"group name {name!r}")
        self.groups.setdefault(name, Group(name))
        return name

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
                try:
                    group.priority = int(raw)
                except TypeError:
                    pass
                except ValueError as exc:
                    raise Unsupported("ansible_group_priority is not a number") from exc
                return
            target = group.vars
        else:
            target = self.hosts[entity].vars
        if isinstance(name, str) and is_relevant(name):
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
        """Longest path from `all`: the depth ansible-core's add_child maintains."""
        depth: dict[str, int] = {}

        def of(name: str) -> int:
            if name not in depth:
                parents = self.groups[name].parents
                depth[name] = max((of(p) + 1 for p in parents), default=0)
            return depth[name]

        for name in self.groups:
            of(name)
        return depth

    def host_groups(self, host: Host) -> set[str]:
        result = set(host.groups)
        for g in host.groups:
            result |= self.ancestors(g)
        return result


def expand_hosts(pattern: Any) -> list[str]:
    """Host names of a pattern with [a:b] / [a:b:step] ranges, as ansible's expand_hostname_range."""
    if not isinstance(pattern, str):
        raise Unsupported(f"host pattern {pattern!r}")
    outside = pattern.split("[")[0] + "".join(p.split("]", 1)[-1] for p in pattern.split("[")[1:])
    if ":" in outside or pattern.startswith("[") or pattern.endswith(":"):
        raise Unsupported(f"host pattern with a port or IPv6 address: {pattern}")
    if "[" not in pattern:
        return [pattern]
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
        if beg in string.ascii_letters and end in string.ascii_letters:
            i, j = string.ascii_letters.index(beg), string.ascii_letters.index(end)
            if i > j:
                raise Unsupported(f"host range {pattern}")
            seq: Any = string.ascii_letters[i:j + 1:int(step)]
        else:
            seq = range(int(beg), int(end) + 1, int(step))
    except ValueError as exc:
        raise Unsupported(f"host range {pattern}") from exc
    names: list[str] = []
    for item in seq:
        name = head + (str(item).zfill(width) if width else str(item)) + tail
        names.extend(expand_hosts(name) if "[" in name else [name])
    return names

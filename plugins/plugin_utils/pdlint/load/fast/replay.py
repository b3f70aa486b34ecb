"""An inventory file's effect on the fast loader's Inventory, as a list of calls that can be made again.

The language server re-checks an inventory on every edit; its YAML inventory file (hosts.yml, often the
largest file) rarely changes. fast_yaml.parse makes the same calls for the same document whatever the
Inventory holds already (add_group's answer depends only on force_valid_group_names), so the calls recorded
from one parse, made again on a fresh Inventory, build what parsing would: the file memo keeps them by content.
"""
from __future__ import annotations

from typing import Any

from .inventory import Inventory

Ops = tuple[tuple[str, tuple[Any, ...]], ...]


class Recorder:
    """Stands for an Inventory in fast_yaml.parse: each call is made on it and noted."""

    def __init__(self, inv: Inventory) -> None:
        self.inv = inv
        self.keep = inv.keep  # the parsers ask which names to keep (hostvars.is_relevant)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def add_group(self, *args: Any) -> str:
        self.calls.append(("add_group", args))
        return self.inv.add_group(*args)

    def add_host(self, *args: Any) -> None:
        self.calls.append(("add_host", args))
        self.inv.add_host(*args)

    def add_child(self, *args: Any) -> None:
        self.calls.append(("add_child", args))
        self.inv.add_child(*args)

    def set_variable(self, *args: Any) -> None:
        self.calls.append(("set_variable", args))
        self.inv.set_variable(*args)

    def ops(self) -> Ops:
        return tuple(self.calls)


def replay(inv: Inventory, ops: Ops) -> None:
    """Make the recorded calls on inv (raising what they raise, as parsing would)."""
    for name, args in ops:
        getattr(inv, name)(*args)

"""Which hosts a play's `hosts:` pattern selects: ansible-core's own InventoryManager.get_hosts.

pdlint's loaders give each host its group_names (every group it is in, through children too); an inventory of
those groups, each holding its hosts directly, answers a pattern (groups, `:&`, `:!`, wildcards, `~regex`, comma
lists, `all`, `ungrouped`) as the inventory it came from does: a pattern names groups and hosts, and a group
selects the same hosts whether it holds them or its children do. tests/playbook/test_playbook_patterns.py holds it equal
to ansible-core's get_hosts on the real inventory.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from ..hostvars import HostVars


def matcher(hosts: Sequence[HostVars]) -> Callable[[str], frozenset[str]]:
    """pattern -> the names of the hosts it selects."""
    from ansible._internal._display_utils import DeferredWarningContext
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    inventory = InventoryManager(loader=DataLoader(), sources=[])
    for hv in hosts:
        inventory.add_host(hv.host)
        for group in hv.groups:
            if group != "ungrouped":
                inventory.add_group(group)
                inventory.add_host(hv.host, group=group)
    inventory.reconcile_inventory()
    cache: dict[str, frozenset[str]] = {}

    def select(pattern: str) -> frozenset[str]:
        found = cache.get(pattern)
        if found is None:
            with DeferredWarningContext(variables={}):  # "could not match supplied host pattern": no host, no noise
                found = frozenset(h.name for h in inventory.get_hosts(pattern))
            cache[pattern] = found
        return found

    return select


def ordered(pattern: str) -> bool:
    """A pattern with a subscript (`webservers[0]`, `all[1:3]`): it selects by the inventory's order."""
    return any("[" in part and not part.lstrip("!&").startswith("~")
               for part in pattern.replace(",", ":").split(":"))

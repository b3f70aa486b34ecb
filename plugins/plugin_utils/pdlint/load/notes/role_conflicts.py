"""Hosts that two groups give different vllm_pd_role values: Ansible keeps one without a word."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ...finding import Finding, Origin
from ..preflight.layout import paths_only

ROLE = "vllm_pd_role"
# A group's own vllm_pd_role: (value, where it is set), from the inventory file or its group_vars file.
GroupRole = tuple[Any, Origin]


def conflicts(members: Mapping[str, Iterable[str]], roles: Mapping[str, GroupRole], ancestors: Mapping[str, set[str]],
              own: Iterable[str], winner: Mapping[str, Any]) -> Iterator[Finding]:
    """by_host()'s findings."""
    return (finding for _unused, finding in by_host(members, roles, ancestors, own, winner))


def by_host(members: Mapping[str, Iterable[str]], roles: Mapping[str, GroupRole], ancestors: Mapping[str, set[str]],
            own: Iterable[str], winner: Mapping[str, Any]) -> Iterator[tuple[str, Finding]]:
    """An error for each host (not setting the role itself) whose unrelated groups set different roles.

    members: host -> its groups (ancestors included); roles: group -> its own role; ancestors: group -> its
    ancestors (a child group overriding its parent's role is deliberate); own: hosts that set the role
    themselves (their value wins: no conflict); winner: host -> the role Ansible resolved.
    """
    explicit = set(own)
    for host in sorted(members):
        if host in explicit:
            continue
        setting = [g for g in members[host] if g in roles]
        overridden = {a for g in setting for a in ancestors.get(g, set())}
        given = {g: roles[g] for g in sorted(setting) if g not in overridden}
        if len({str(value) for value, _unused in given.values()}) < 2:
            continue
        parts = [f"{g} gives {value} ({origin})" for g, (value, origin) in given.items()]
        kept = winner.get(host)
        # where Ansible's winner is given, else the first group's (given holds two roles or more: the check above)
        origin = ([o for value, o in given.values() if value == kept] or [o for _value, o in given.values()])[0]
        yield host, Finding(origin, "deployment[role-conflict]", "error",
                            f"host {host} is in groups that give it different roles: {'; '.join(parts)}; "
                            f"Ansible keeps {kept}",
                            f"put {host} in one role group, or set {ROLE} in host_vars/{host}.yml")  # file-level, as group names


def from_ansible(inventory: Any, loader: Any, sources: list[str], winner: Mapping[str, Any]) -> list[Finding]:
    """conflicts() for an ansible-core InventoryManager (the reference loader, or the play's inventory)."""
    from ansible.vars.plugins import get_vars_from_inventory_sources

    from ..tagged import origin_of

    # Stage "task": with ansible-core's default RUN_VARS_PLUGINS=demand, the VariableManager reads group_vars
    # files then, not at the inventory stage.
    roles: dict[str, GroupRole] = {}
    for name, group in inventory.groups.items():
        if name == "all":
            continue
        files = get_vars_from_inventory_sources(loader, paths_only(sources), [group], "task")
        for layer in (group.get_vars(), files):  # group_vars files win over the inventory file's group vars
            if ROLE in layer:
                roles[name] = (layer[ROLE], origin_of(layer[ROLE]) or _key_origin(layer) or Origin())
    members = {h.name: [g.name for g in h.get_groups()] for h in inventory.hosts.values()}
    ancestors = {name: {a.name for a in group.get_ancestors()} for name, group in inventory.groups.items()}
    own = [h.name for h in inventory.hosts.values() if ROLE in h.get_vars()]
    own += [h.name for h in inventory.hosts.values()
            if ROLE in get_vars_from_inventory_sources(loader, paths_only(sources), [h], "task")]
    return list(conflicts(members, roles, ancestors, own, winner))


def _key_origin(layer: Mapping[Any, Any]) -> Origin | None:
    from ..tagged import origin_of

    return next((origin_of(k) for k in layer if k == ROLE), None)

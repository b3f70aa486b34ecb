"""Units: the parts of an inventory that no rule looks across, so each can be checked alone.

The schema and the model build work host by host; every rule compares instances of one deployment, of one
inventory host or node (ports, GPUs), or sharing an explicit engine_id. Hosts linked by any of these are one
unit, and the findings of checking the units one by one, merged, are those of checking them all together.
A run after an edit checks again only the units whose hosts read an edited file (incremental.py).
tests/cache/test_incremental.py holds every rule to this on the examples, the fixtures and random inventories.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..finding import Finding
from ..topology.types import Instance, Topology

Key = tuple[str, str]


def keys(inst: Instance) -> list[Key]:
    """What links an instance to others: its host, its node, its deployment, its explicit engine_id."""
    found = [("host", inst.host), ("node", str(inst.node))]
    if inst.deployment is not None:
        found.append(("deployment", str(inst.deployment)))
    if inst.engine_id:
        found.append(("engine_id", str(inst.engine_id)))
    return found


def partition(hosts: Sequence[str], topology: Topology) -> list[tuple[tuple[str, ...], frozenset[Key]]]:
    """The units of these hosts (every host in exactly one, a host without instances alone): each unit's hosts,
    sorted, and the keys that link them; units in the order of their first host."""
    parent = {h: h for h in hosts}

    def root(h: str) -> str:
        while parent[h] != h:
            parent[h] = parent[parent[h]]
            h = parent[h]
        return h

    owner: dict[Key, str] = {}

    def link(key: Key, host: str) -> None:
        other = owner.setdefault(key, host)
        a, b = root(other), root(host)
        if a != b:
            parent[max(a, b)] = min(a, b)

    for inst in topology.instances:
        for key in keys(inst):
            link(key, inst.host)
    # deployment[incomplete] looks at the hosts that may be a deployment's side: one of an unknown deployment
    # may be any deployment's
    for unsure in topology.undecided:
        named = [("deployment", unsure.deployment)] if unsure.deployment is not None else [
            k for k in list(owner) if k[0] == "deployment"]
        for key in named:
            link(key, unsure.host)
    members: dict[str, list[str]] = {}
    for h in sorted(hosts):
        members.setdefault(root(h), []).append(h)
    linked: dict[str, set[Key]] = {r: set() for r in members}
    for key, h in owner.items():
        linked[root(h)].add(key)
    return [(tuple(members[r]), frozenset(linked[r])) for r in members]


def split(findings: Iterable[Finding], unit_of: dict[str, int]) -> dict[int, list[Finding]] | None:
    """Each finding, cut to the hosts of each unit it concerns; None when one concerns no host (it could not be
    told which unit to check again)."""
    out: dict[int, list[Finding]] = {}
    for f in findings:
        if not f.hosts or any(h not in unit_of for h in f.hosts):
            return None
        parts: dict[int, list[str]] = {}
        for h in f.hosts:
            parts.setdefault(unit_of[h], []).append(h)
        for unit, on in parts.items():
            out.setdefault(unit, []).append(f if len(parts) == 1 else Finding(
                f.origin, f.rule, f.severity, f.message, f.hint, tuple(on), f.deployment))
    return out

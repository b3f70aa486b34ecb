"""The other locations a finding is about: the same setting on the other hosts it names (the other side of a pair)."""
from __future__ import annotations

from ..finding import Finding, Origin
from ..topology.types import Instance, Topology

_LIMIT = 8  # a finding over a whole deployment names many hosts; the first few locations are what helps


def field_at(topology: Topology, origin: Origin, hosts: tuple[str, ...]) -> tuple[str, list[Instance]] | None:
    """The contract field (without vllm_) written at origin for one of hosts' instances, and those instances."""
    named = set(hosts)
    for inst in topology.instances:
        if inst.host in named:
            for name, where in inst.origins.items():
                if where == origin and name not in ("pd_role", "pd_deployment"):
                    return name, [i for i in topology.instances if i.host in named]
    return None


def related(finding: Finding, topology: Topology | None) -> list[tuple[Origin, str]]:
    """(origin, label) of the finding's setting on its other hosts: the prefill TP line for a decode TP finding."""
    if topology is None or len(finding.hosts) < 2:
        return []
    found = field_at(topology, finding.origin, finding.hosts)
    if found is None:
        return []
    name, instances = found
    out: dict[Origin, str] = {}
    for inst in sorted(instances, key=lambda i: (i.role, i.host, i.index or 0)):
        where = inst.origins.get(name)
        if where is None or where == finding.origin or not where.file or where in out:
            continue
        out[where] = f"{name} of {inst.role} {inst.label}"
        if len(out) == _LIMIT:
            break
    return list(out.items())

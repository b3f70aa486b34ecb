"""Prefill/decode pairs of one connector family, the unit of the cross-instance rules."""
from __future__ import annotations

from collections.abc import Iterator

from .. import connectors
from ..model import Engine, Instance, Topology


def pairs(topo: Topology, kind: str, *needs: str) -> Iterator[tuple[Engine, Engine, Instance, Instance]]:
    """(prefill engine, decode engine, their leads) for pairs both on connector family kind."""
    for dep in topo.deployments:
        for p, d in dep.pairs():
            lp, ld = p.lead, d.lead
            if connectors.kind(lp) != kind or connectors.kind(ld) != kind:
                continue
            if connectors.canonical(lp.connector) != connectors.canonical(ld.connector):
                continue  # deployment[connector] reports it
            if lp.knows(*needs, "kv_connector") and ld.knows(*needs, "kv_connector"):
                yield p, d, lp, ld

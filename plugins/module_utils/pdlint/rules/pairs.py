"""Prefill/decode pairs of one connector family, the unit of the cross-instance rules."""
from __future__ import annotations

from collections.abc import Iterator

from .. import connectors
from ..model import Engine, Instance, Topology


def pairs(topo: Topology, kind: str | tuple[str, ...], *needs: str) -> Iterator[tuple[Engine, Engine, Instance, Instance]]:
    """(prefill engine, decode engine, their leads) for pairs both on one connector of family kind (or kinds)."""
    kinds = (kind,) if isinstance(kind, str) else kind

    def eligible(engines: tuple[Engine, ...]) -> list[tuple[Engine, Instance, str | None]]:
        # Filter each side once: the cross product below is the hot loop (P x D pairs per rule).
        return [(e, e.lead, connectors.canonical(e.lead.connector)) for e in engines
                if connectors.kind(e.lead) in kinds and e.lead.knows(*needs, "kv_connector")]

    for dep in topo.deployments:
        decode = eligible(dep.decode)
        for p, lp, pc in eligible(dep.prefill):
            for d, ld, dc in decode:
                if pc == dc:  # a different class is deployment[connector]'s to report
                    yield p, d, lp, ld

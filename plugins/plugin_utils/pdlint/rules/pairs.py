"""Prefill/decode pairs of one connector family, the unit of the cross-instance rules."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from ..finding import Origin
from ..topology.types import Engine, Instance, Topology, per_body
from ..vllm import composite, view
from ..vllm import pair as vpair
from ..vllm import registry as connectors
from .base import Hit, hit
from .hints import Link, Nodes, joint_hint, tp_hint

Pair = tuple[Engine, Engine, Instance, Instance]
_per_topology: tuple[Topology, dict[object, object]] | None = None


def _memo(topo: Topology) -> dict[object, object]:
    """What the pair rules computed for topo: kept for the last topology asked about (checks run one at a time)."""
    global _per_topology
    if _per_topology is None or _per_topology[0] is not topo:
        _per_topology = (topo, {})
    return _per_topology[1]


def pairs(topo: Topology, kind: str | tuple[str, ...], *needs: str) -> Iterator[Pair]:
    """(prefill engine, decode engine, their leads) for pairs both on one connector of family kind (or kinds)."""
    kinds = (kind,) if isinstance(kind, str) else kind
    memo = _memo(topo)
    found = memo.get((kinds, needs))
    if found is None:  # several rules ask for the same pairs
        found = memo[(kinds, needs)] = list(_pairs(topo, kinds, needs))
    return iter(found)  # type: ignore[call-overload]


class Block:
    """Every pair of one deployment's prefill x decode engines whose leads have one body each (per_body): a pair
    rule's verdict is one for all of them, so it is decided once and spread, not walked P x D times."""

    __slots__ = ("deployment", "prefill", "decode", "leads")  # one per pair when no two engines share a body

    def __init__(self, deployment: str, prefill: tuple[Engine, ...], decode: tuple[Engine, ...]) -> None:
        self.deployment = deployment
        self.prefill = prefill
        self.decode = decode
        self.leads = (prefill[0].lead, decode[0].lead)

    def each(self) -> Iterator[Pair]:
        """The block's pairs, as pairs() gives them: for a verdict that reads more than the two bodies."""
        for p in self.prefill:
            for d in self.decode:
                yield p, d, p.lead, d.lead

    def spread(self, side: str, fields: tuple[str, ...], say: Callable[[Engine], tuple[str, str | None]],
               deployment: str | None = None) -> Iterator[Hit]:
        """What hit(where, fields, *say(where), also=(p, d)) gives for every pair (p, d), where the side's engine,
        as one hit per (origin, message, hint, deployment) naming every host of those pairs: merge() makes the
        per-pair hits exactly that finding, so P x D hits are P + D of work."""
        where, other = (self.prefill, self.decode) if side == "prefill" else (self.decode, self.prefill)
        others = tuple(host for engine in other for host in engine.hosts)
        found: dict[tuple[Origin, str, str | None, str | None], list[str]] = {}
        for engine in where:
            lead = engine.lead
            key = (lead.at(*fields), *say(engine), deployment or lead.deployment)
            found.setdefault(key, []).extend(engine.hosts)
        for (origin, message, hint, dep), hosts in found.items():
            yield Hit(origin, message, hint, (*hosts, *others), dep)


def always(message: str, hint: str | None) -> Callable[[Engine], tuple[str, str | None]]:
    """Block.spread's say for a message and hint that name no engine."""
    said = (message, hint)
    return lambda engine: said


def _by_lead_body(engines: tuple[Engine, ...]) -> list[tuple[Engine, ...]]:
    groups: dict[int, list[Engine]] = {}
    for engine in engines:
        groups.setdefault(id(engine.lead.shared), []).append(engine)
    return [tuple(group) for group in groups.values()]


def blocks(topo: Topology) -> list[tuple[tuple[Instance, ...], tuple[Instance, ...], list[list[Block]]]]:
    """Each deployment's prefill x decode pairs as Blocks, once per topology: (the leads of its prefill bodies, of
    its decode bodies, the Block of prefill body i and decode body j at [i][j])."""
    memo = _memo(topo)
    if "blocks" not in memo:
        found = []
        for dep in topo.deployments:
            ps, ds = _by_lead_body(dep.prefill), _by_lead_body(dep.decode)
            found.append((tuple(p[0].lead for p in ps), tuple(d[0].lead for d in ds),
                          [[Block(dep.name, p, d) for d in ds] for p in ps]))
        memo["blocks"] = found
    return memo["blocks"]  # type: ignore[return-value]


def by_body(topo: Topology, kind: str | tuple[str, ...] | None, *needs: str) -> list[list[Block]]:
    """The Blocks of pairs() (kind None: of every pair), grouped by the bodies of their leads: a rule whose
    verdict reads the two leads' engine settings alone decides once per group and spreads the hit over its
    Blocks, at each engine's own lines and hosts."""
    memo = _memo(topo)
    key = ("by-body", kind, needs)
    found = memo.get(key)
    if found is None:
        kinds = (kind,) if isinstance(kind, str) else kind
        classes: dict[int, object] = {}  # pairs()'s test of one side, per body: its connector class, or _NO

        def pairing(lead: Instance) -> object:
            if kinds is None:
                return None
            got = classes.get(id(lead.shared), classes)
            if got is classes:
                got = classes[id(lead.shared)] = (
                    connectors.canonical(composite.effective(lead).connector)
                    if view.kind(lead) in kinds and lead.knows(*needs, "kv_connector") else _NO)
            return got

        groups: dict[tuple[int, int], list[Block]] = {}
        for prefill, decode, rows in blocks(topo):
            # each side tested once per deployment, the P x D loop below compares classes (the hot loop)
            ds = [(j, id(ld.shared), c) for j, ld in enumerate(decode) if (c := pairing(ld)) is not _NO]
            for i, lp in enumerate(prefill):
                c = pairing(lp)
                if c is _NO:
                    continue
                row, body = rows[i], id(lp.shared)
                for j, other, dc in ds:
                    if dc == c:
                        groups.setdefault((body, other), []).append(row[j])
        found = memo[key] = list(groups.values())
    return found  # type: ignore[return-value]


_NO = object()  # by_body: a side that pairs() leaves out


def _pairs(topo: Topology, kinds: tuple[str, ...], needs: tuple[str, ...]) -> Iterator[Pair]:
    def eligible(engines: tuple[Engine, ...]) -> list[tuple[Engine, Instance, str | None]]:
        # Filter each side once: the cross product below is the hot loop (P x D pairs per rule).
        # A composite pairs through its transfer child (vllm/composite.py): compare the child's class.
        return [(e, e.lead, connectors.canonical(composite.effective(e.lead).connector)) for e in engines
                if view.kind(e.lead) in kinds and e.lead.knows(*needs, "kv_connector")]

    for dep in topo.deployments:
        decode = eligible(dep.decode)
        for p, lp, pc in eligible(dep.prefill):
            for d, ld, dc in decode:
                if pc == dc:  # a different class is deployment[connector]'s to report
                    yield p, d, lp, ld


@per_body
def _side_of(inst: Instance) -> vpair.Side:
    return vpair.Side.of(inst)  # the engine alone: identical engines of many deployments ask once


_NEEDS = ("tensor_parallel_size", "pipeline_parallel_size", "block_size", "kv_connector_extra_config", "version")
_KINDS = ("nixl", "moriio", "mooncake", "p2p-nccl")
Checked = tuple[Engine, Engine, vpair.Side, vpair.Side, tuple[vpair.Problem, ...]]


def checked(topo: Topology) -> list[Checked]:
    """Every same-connector pair of topo with the vllm layer's problems (computed once per topology)."""
    memo = _memo(topo)
    if "checked" not in memo:
        # P x D pairs share few distinct engines: one Side per engine, equal Sides made one object, and the
        # problems of each pair of distinct Sides asked once (hashing a Side is the cost of an lru lookup).
        sides: dict[int, vpair.Side] = {}
        same: dict[vpair.Side, vpair.Side] = {}
        asked: dict[tuple[int, int], tuple[vpair.Problem, ...]] = {}

        def side(engine: Engine, lead: Instance) -> vpair.Side:
            found = sides.get(id(engine))
            if found is None:
                made = _side_of(lead)
                found = sides[id(engine)] = same.setdefault(made, made)
            return found

        found = []
        for p, d, lp, ld in pairs(topo, _KINDS, *_NEEDS):
            sp, sd = side(p, lp), side(d, ld)
            key = (id(sp), id(sd))
            problems = asked.get(key)
            if problems is None:
                problems = asked[key] = vpair.problems(sp, sd)
            found.append((p, d, sp, sd, problems))
        memo["checked"] = found
    return memo["checked"]  # type: ignore[return-value]


def _judged(topo: Topology) -> list[tuple[list[Block], vpair.Side, vpair.Side, tuple[vpair.Problem, ...]]]:
    """checked(), per group of Blocks: the problems of the leads' Sides (one Side per body, per_body)."""
    memo = _memo(topo)
    if "judged" not in memo:
        asked: dict[tuple[int, int], tuple[vpair.Problem, ...]] = {}
        found = []
        for group in by_body(topo, _KINDS, *_NEEDS):
            sp, sd = (_side_of(lead) for lead in group[0].leads)
            key = (id(sp), id(sd))
            if key not in asked:
                asked[key] = vpair.problems(sp, sd)
            found.append((group, sp, sd, asked[key]))
        memo["judged"] = found
    return memo["judged"]  # type: ignore[return-value]


def problem_hits(topo: Topology, rule_id: str) -> Iterator[Hit]:
    """The vllm layer's problems of every pair that rule_id reports, at the value to change, with a working hint."""
    for group, sp, sd, problems in _judged(topo):
        for problem in problems:
            if problem.rule != rule_id:
                continue
            if problem.hint is not None or not problem.tp_fix:
                for block in group:
                    yield from block.spread(problem.side, problem.fields, always(problem.message, problem.hint))
                continue
            for block in group:  # the TP hint reads each pair's nodes: pair by pair
                for p, d, _lp, _ld in block.each():
                    where = p if problem.side == "prefill" else d
                    yield hit(where, problem.fields, problem.message, tp_hint(nodes(topo), p, d, sp, sd),
                              also=(p, d))


def nodes(topo: Topology) -> Nodes:
    """Each node's GPUs and their use, for hints (once per topology)."""
    memo = _memo(topo)
    if "nodes" not in memo:
        memo["nodes"] = Nodes(topo)
    return memo["nodes"]  # type: ignore[return-value]


def tp_hint_for(topo: Topology, inst: Instance) -> str | None:
    """"use TP ..." for inst's engine: sizes that pass its own checks, its nodes and every pair it is in."""
    memo = _memo(topo)
    if "by-instance" not in memo:  # each instance's engine in every checked pair, indexed once per topology
        index: dict[int, tuple[Engine, vpair.Side, list[Link]]] = {}
        for p, d, sp, sd, _unused in checked(topo):
            for engine, side, partner, other in ((p, sp, d, sd), (d, sd, p, sp)):
                for i in engine.instances:  # by identity: Instance equality compares every field
                    index.setdefault(id(i), (engine, side, []))[2].append((side, partner, other))
        memo["by-instance"] = index
    found = memo["by-instance"].get(id(inst))  # type: ignore[attr-defined]
    if found is None:  # in no checked pair: the engine alone
        engine = next((e for e in topo.engines() if any(i is inst for i in e.instances)), Engine((inst,)))
        found = (engine, vpair.Side.of(engine.lead), [])
    return joint_hint(nodes(topo), *found)

"""The pair problems' hits with a working TP hint, and the TP hint of one engine over every pair it is in.

Both read rules/pair/pairs.py's Blocks: a hint is asked once per engine (its nodes) and per pair of classes (the
Sides), never once per prefill x decode engine pair, and a finding's hosts are gathered per hint.
"""
from __future__ import annotations

from collections.abc import Iterator

from ...finding import Origin
from ...topology.types import Engine, Instance, Topology
from ...vllm.connectors import pair as vpair
from ..base import Hit
from ..hints import Link, Nodes, joint_hint, own_ok, side_hint, tp_origin
from .pairs import Block, always, judged, memo_of


def problem_hits(topo: Topology, rule_id: str) -> Iterator[Hit]:
    """The vllm layer's problems of every pair that rule_id reports, at the value to change, with a working hint."""
    for group, sp, sd, problems in judged(topo):
        for problem in problems:
            if problem.rule != rule_id:
                continue
            for block in group:
                if problem.hint is not None or not problem.tp_fix:
                    yield from block.spread(problem.side, problem.fields, always(problem.message, problem.hint))
                else:
                    yield from _tp_hinted(nodes(topo), block, sp, sd, problem)


def _tp_hinted(found_nodes: Nodes, block: Block, sp: vpair.Side, sd: vpair.Side,
               problem: vpair.Problem) -> Iterator[Hit]:
    """What hit(where, fields, message, hints.tp_hint(nodes, p, d, sp, sd), also=(p, d)) gives for every pair of
    the block, merged as merge() merges it: a pair's hint is its decode engine's (side_hint), else its prefill
    engine's, so each engine's is asked once and the hosts of a finding are gathered per hint, not per pair."""
    decode = [(d, side_hint(found_nodes, d, sd, sp)) for d in block.decode]
    prefill = [(p, side_hint(found_nodes, p, sp, sd)) for p in block.prefill] if any(
        hint is None for _d, hint in decode) else []
    own_side = decode if problem.side == "decode" else prefill
    # key: (where's origin, hint, deployment) -> (where's hosts, the other side's host groups, by their hint)
    found: dict[tuple[Origin, str | None, str | None], tuple[list[str], dict[object, tuple[str, ...]]]] = {}

    def add(engine: Engine, hint: str | None, group: object, hosts: tuple[str, ...]) -> None:
        lead = engine.lead
        mine, others = found.setdefault((lead.at(*problem.fields), hint, lead.deployment), ([], {}))
        mine.extend(engine.hosts)
        others.setdefault(group, hosts)

    if problem.side == "decode":
        every_prefill = tuple(h for p in block.prefill for h in p.hosts)
        by_hint = _hosts_by(prefill)
        for d, hint in decode:
            if hint is not None:
                add(d, hint, "all", every_prefill)
            else:
                for own, hosts in by_hint.items():
                    add(d, own, own, hosts)
    else:
        fixed = _hosts_by([(d, hint) for d, hint in decode if hint is not None])
        rest = tuple(h for d, hint in decode if hint is None for h in d.hosts)
        for (p, own) in own_side:
            for hint, hosts in fixed.items():
                add(p, hint, hint, hosts)
            if rest:
                add(p, own, None, rest)
        if not own_side:  # every decode engine has a hint: prefill hints were not asked
            for p in block.prefill:
                for hint, hosts in fixed.items():
                    add(p, hint, hint, hosts)
    for (origin, hint, dep), (mine, others) in found.items():
        yield Hit(origin, problem.message, hint, (*mine, *(h for hosts in others.values() for h in hosts)), dep)


def _hosts_by(engines: list[tuple[Engine, str | None]]) -> dict[str | None, tuple[str, ...]]:
    """The hosts of engines, by their hint."""
    found: dict[str | None, list[str]] = {}
    for engine, hint in engines:
        found.setdefault(hint, []).extend(engine.hosts)
    return {hint: tuple(hosts) for hint, hosts in found.items()}


def nodes(topo: Topology) -> Nodes:
    """Each node's GPUs and their use, for hints (once per topology)."""
    memo = memo_of(topo)
    if "nodes" not in memo:
        memo["nodes"] = Nodes(topo)
    return memo["nodes"]  # type: ignore[return-value]


Place = tuple[Engine, int, list[tuple[Block, vpair.Side, tuple[Engine, ...], vpair.Side]]]


def _places(topo: Topology) -> dict[int, Place]:
    """Each instance's engine (by id), its position on its side of the deployment, and every judged Block it is in
    (its Side, the partner engines, their Side): once per topology, P + D entries, never P x D."""
    memo = memo_of(topo)
    if "places" not in memo:
        places: dict[int, Place] = {}
        for dep in topo.deployments:
            for engines in (dep.prefill, dep.decode):
                for position, engine in enumerate(engines):
                    place: Place = (engine, position, [])
                    for i in engine.instances:  # by identity: Instance equality compares every field
                        places[id(i)] = place
        for group, sp, sd, _unused in judged(topo):
            for block in group:
                for engine in block.prefill:
                    places[id(engine.lead)][2].append((block, sp, block.decode, sd))
                for engine in block.decode:
                    places[id(engine.lead)][2].append((block, sd, block.prefill, sp))
        memo["places"] = places
    return memo["places"]  # type: ignore[return-value]


def tp_hint_for(topo: Topology, inst: Instance) -> str | None:
    """"use TP ..." for inst's engine: sizes that pass its own checks, its nodes and every pair it is in; once per
    instance and topology (tp[heads] and tp[kv-heads] both ask it for an engine that fails both)."""
    memo = memo_of(topo)
    if "tp-hints" not in memo:
        memo["tp-hints"] = {}
    hints: dict[int, str | None] = memo["tp-hints"]  # type: ignore[assignment]
    if id(inst) not in hints:
        hints[id(inst)] = _tp_hint(topo, inst)
    return hints[id(inst)]


def _tp_hint(topo: Topology, inst: Instance) -> str | None:
    place = _places(topo).get(id(inst))
    if place is None or not place[2]:  # in no judged pair: the engine alone
        engine = place[0] if place is not None else Engine((inst,))
        return joint_hint(nodes(topo), engine, vpair.Side.of(engine.lead), [])
    engine, _position, found = place
    return joint_hint(nodes(topo), engine, found[0][1], _links(topo, engine, found))


def _links(topo: Topology, engine: Engine, found: list[tuple[Block, vpair.Side, tuple[Engine, ...], vpair.Side]]
           ) -> list[Link]:
    """The links joint_hint reads for engine, one per partner that may move or whose nodes matter: partners whose
    TP is written on engine's line, or at an invalid TP, each in the deployment's order; of the others (a valid TP
    of their own) the pair's verdict reads only the two Sides, so one partner stands for its Block."""
    origin = tp_origin(engine)
    places = _places(topo)
    one: list[Link] = []
    each: list[tuple[int, Link]] = []
    for _block, side, partners, other in found:
        shared = _by_tp_origin(topo, partners).get(origin, ()) if origin is not None else ()
        if not own_ok(partners[0], other, other.tp):  # own_ok reads the Side and the parallel shape: the class's
            each.extend((places[id(o.lead)][1], (side, o, other)) for o in partners)
            continue
        each.extend((places[id(o.lead)][1], (side, o, other)) for o in shared)
        if len(shared) < len(partners):
            mine = {id(o) for o in shared}
            one.append((side, next(o for o in partners if id(o) not in mine), other))
    return [*one, *(link for _position, link in sorted(each, key=_position_of))]


def _by_tp_origin(topo: Topology, engines: tuple[Engine, ...]) -> dict[Origin | None, tuple[Engine, ...]]:
    """engines by where their TP is written (hints.tp_origin), once per Block side."""
    memo = memo_of(topo)
    key = ("tp-origin", id(engines))
    found = memo.get(key)
    if found is None:
        groups: dict[Origin | None, list[Engine]] = {}
        for engine in engines:
            groups.setdefault(tp_origin(engine), []).append(engine)
        found = memo[key] = {origin: tuple(group) for origin, group in groups.items()}
    return found  # type: ignore[return-value]


def _position_of(item: tuple[int, Link]) -> int:
    return item[0]

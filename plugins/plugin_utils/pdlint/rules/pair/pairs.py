"""Prefill/decode pairs of one connector family, the unit of the cross-instance rules.

A pair verdict reads a few fields of each side (pair_key): a deployment's engines are grouped by them into
pair classes, each (prefill class, decode class) is one Block, judged once, and its findings name every host of
the Block. Nothing here walks the prefill x decode engine pairs: a 5,000 x 15,000 deployment whose hosts differ
only in where they listen (vllm_port, the side channel host and port, per-host vllm_env) is a few Blocks.
"""
from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Iterator

from ...finding import Origin
from ...topology.types import Engine, Instance, Topology, per_body
from ...vllm.connectors import composite, families, registry, view
from ...vllm.connectors import pair as vpair
from ..base import Hit

Pair = tuple[Engine, Engine, Instance, Instance]


def memo_of(topo: Topology) -> dict[object, object]:
    """What the pair rules computed for topo (its blocks, their verdicts): hung on the topology, so it lives and
    dies with the check that built it."""
    return topo.rule_memo


class Block:
    """Every pair of one deployment's prefill x decode engines whose leads are of one pair class each (pair_key): a
    pair rule's verdict is one for all of them, so it is decided once and spread, not walked P x D times."""

    __slots__ = ("deployment", "prefill", "decode", "leads")  # one per pair when no two engines share a body

    def __init__(self, deployment: str, prefill: tuple[Engine, ...], decode: tuple[Engine, ...]) -> None:
        self.deployment = deployment
        self.prefill = prefill
        self.decode = decode
        self.leads = (prefill[0].lead, decode[0].lead)

    def each(self) -> Iterator[Pair]:
        """The block's engine pairs, one by one: only where the output itself names both hosts of each pair
        (pd_mismatch_hashed._hma_hits' hint), never to decide a verdict."""
        for p in self.prefill:
            for d in self.decode:
                yield p, d, p.lead, d.lead

    def spread(self, side: str, fields: tuple[str, ...], say: Callable[[Engine], tuple[str, str | None]],
               deployment: str | None = None) -> Iterator[Hit]:
        """What hit(where, fields, *say(where), also=(p, d)) gives for every pair (p, d), where the side's engine,
        as one hit per (origin, message, hint, deployment) naming every host of those pairs: merge() makes the
        per-pair hits exactly that finding, so P x D hits are P + D of work. Where the side's engine writes none of
        fields (decode left PP unset, prefill wrote 2), the hit is at the other side's written value instead."""
        where, other = (self.prefill, self.decode) if side == "prefill" else (self.decode, self.prefill)
        others = tuple(host for engine in other for host in engine.hosts)
        found: dict[tuple[Origin, str, str | None, str | None], list[str]] = {}
        written = _written(other, fields)
        for engine in where:
            lead = engine.lead
            # a side that leaves every field unset has no bad value of its own: the one written is the other side's
            origin = lead.at(*fields) if written is None or any(f in lead.origins for f in fields) else written
            key = (origin, *say(engine), deployment or lead.deployment)
            found.setdefault(key, []).extend(engine.hosts)
        for (origin, message, hint, dep), hosts in found.items():
            yield Hit(origin, message, hint, (*hosts, *others), dep)


def _written(engines: Iterable[Engine], fields: tuple[str, ...]) -> Origin | None:
    """Where the first of engines writes one of fields, or None."""
    for engine in engines:
        for name in fields:
            found = engine.lead.origins.get(name)
            if found is not None:
                return found
    return None


def always(message: str, hint: str | None) -> Callable[[Engine], tuple[str, str | None]]:
    """Block.spread's say for a message and hint that name no engine."""
    said = (message, hint)
    return lambda engine: said


# What varies per host and no pair verdict reads: where the engine listens and every vllm_env variable but
# vllm/connectors/pair.py PAIR_ENV (rules/placement/network.py, rules/per_engine/env.py and the port rules read them, host by host). Every other
# field of the body (topology/types.py share_bodies) is in the pair class, so a field a pair rule comes to read is
# in it without a list to keep; tests/rules/pair/test_pair_classes.py holds every env name the rules read to PAIR_ENV or to
# the per-host list there.
_PER_HOST = frozenset(("port", "kv_port", "env"))
_NOT_CLASS = frozenset(("host", "instance_id", "node", "deployment", "origins", "memo", "shared")) | _PER_HOST
_CLASS = tuple(f.name for f in dataclasses.fields(Instance) if f.name not in _NOT_CLASS)
_class_fields = operator.attrgetter(*_CLASS)
_PAIR_NAMES = frozenset(f"env.{name}" for name in vpair.PAIR_ENV)


def _class_named(name: str) -> bool:
    """An origin name the pair class keeps (whether a field is set: parallel_config.shape_of asks)."""
    if name in _PER_HOST or name in ("node", "instance_id"):
        return False
    return not name.startswith("env.") or name in _PAIR_NAMES


@per_body
def pair_key(inst: Instance) -> str:
    """What the pair rules read of an engine: its body without the per-host fields (repr, as share_bodies keys)."""
    return repr((_class_fields(inst), tuple(vpair.pair_env(inst.env).items()),
                 tuple(name for name in inst.origins if _class_named(name))))


def _by_class(engines: tuple[Engine, ...]) -> list[tuple[Engine, ...]]:
    groups: dict[str, list[Engine]] = {}
    for engine in engines:
        groups.setdefault(pair_key(engine.lead), []).append(engine)
    return [tuple(group) for group in groups.values()]


def blocks(topo: Topology) -> list[tuple[tuple[Instance, ...], tuple[Instance, ...], list[list[Block]]]]:
    """Each deployment's prefill x decode pairs as Blocks, once per topology: (the leads of its prefill classes, of
    its decode classes, the Block of prefill class i and decode class j at [i][j])."""
    memo = memo_of(topo)
    if "blocks" not in memo:
        found = []
        for dep in topo.deployments:
            ps, ds = _by_class(dep.prefill), _by_class(dep.decode)
            found.append((tuple(p[0].lead for p in ps), tuple(d[0].lead for d in ds),
                          [[Block(dep.name, p, d) for d in ds] for p in ps]))
        memo["blocks"] = found
    return memo["blocks"]  # type: ignore[return-value]


def by_body(topo: Topology, kind: str | tuple[str, ...] | None, *needs: str) -> list[list[Block]]:
    """The Blocks whose two sides are on one connector class of family kind (or kinds; None: every Block), the
    leads knowing needs and kv_connector, grouped by the pair classes of their leads (across deployments): a rule
    whose verdict reads the two leads' engine settings alone decides once per group and spreads the hit over its
    Blocks, at each engine's own lines and hosts. A different class on each side is deployment[connector]'s."""
    memo = memo_of(topo)
    key = ("by-body", kind, needs)
    found = memo.get(key)
    if found is None:
        kinds = (kind,) if isinstance(kind, str) else kind
        classes: dict[int, object] = {}  # the test of one side, per body: its connector class, or _NO

        def pairing(lead: Instance) -> object:
            if kinds is None:
                return None
            got = classes.get(id(lead.shared), classes)
            if got is classes:
                got = classes[id(lead.shared)] = (
                    registry.canonical(composite.effective(lead).connector)
                    if view.kind(lead) in kinds and lead.knows(*needs, "kv_connector") else _NO)
            return got

        groups: dict[tuple[str, str], list[Block]] = {}
        for prefill, decode, rows in blocks(topo):
            # each side tested once per deployment, the loop below compares the classes' connectors
            ds = [(j, pair_key(ld), c) for j, ld in enumerate(decode) if (c := pairing(ld)) is not _NO]
            for i, lp in enumerate(prefill):
                c = pairing(lp)
                if c is _NO:
                    continue
                row, body = rows[i], pair_key(lp)
                for j, other, dc in ds:
                    if dc == c:
                        groups.setdefault((body, other), []).append(row[j])
        found = memo[key] = list(groups.values())
    return found  # type: ignore[return-value]


_NO = object()  # by_body: a side on none of the connector families asked


@per_body
def _side_of(inst: Instance) -> vpair.Side:
    return vpair.Side.of(inst)  # the engine alone: identical engines of many deployments ask once


_NEEDS = ("tensor_parallel_size", "pipeline_parallel_size", "block_size", "kv_connector_extra_config", "version")
_KINDS = ("nixl", "moriio", "mooncake", "p2p-nccl")
Judged = tuple[list[Block], vpair.Side, vpair.Side, tuple[vpair.Problem, ...]]


def judged(topo: Topology) -> list[Judged]:
    """Every same-connector Block, grouped by the pair classes of its leads, with the Sides of the two classes and
    the vllm layer's problems of that pair of Sides (computed once per topology; explain shows these)."""
    memo = memo_of(topo)
    if "judged" not in memo:
        asked: dict[tuple[int, int], tuple[vpair.Problem, ...]] = {}
        found = []
        for group in by_body(topo, _KINDS, *_NEEDS):
            sp, sd = (_side_of(lead) for lead in group[0].leads)
            key = (id(sp), id(sd))
            if key not in asked:
                asked[key] = families.problems(sp, sd)
            found.append((group, sp, sd, asked[key]))
        memo["judged"] = found
    return memo["judged"]  # type: ignore[return-value]

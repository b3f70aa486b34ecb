"""Hints that work: TP sizes found by asking the same checks the rules ask, never a formula of their own.

A size is offered only if, with it, the engine splits the model's heads (tp[heads], tp[kv-heads]), passes its
release's parallel-config checks (parallel[*]), fits its nodes beside the nodes' other engines
(gpu[oversubscribed]) and its CUDA_VISIBLE_DEVICES list (gpu[count]), and leaves every P/D pair it is in no
problem a TP size causes. When the other engine of a pair is itself at an invalid TP, sizes are searched for
both (rules/per_engine/tp.py); engines whose TP comes from one inventory line move together.
"""
from __future__ import annotations

import dataclasses
import functools

from ..finding import Origin
from ..topology.types import Engine, Instance, Topology
from ..vllm import parallel, parallel_config
from ..vllm.connectors import families
from ..vllm.connectors import pair as vpair
from ..vllm.connectors.registry import nearest
from .base import words

_LIMIT = 256  # the largest TP size a hint considers


class Nodes:
    """Each node's GPU count and what its instances use: the room a hint may give an engine."""

    def __init__(self, topo: Topology) -> None:
        self.count: dict[str, int] = {}
        self.used: dict[str, int] = {}
        for inst in topo.instances:
            if inst.gpu_count is not None:
                self.count[inst.node] = min(self.count.get(inst.node, inst.gpu_count), inst.gpu_count)
            self.used[inst.node] = self.used.get(inst.node, 0) + inst.gpus_per_node

    def fits(self, sizes: dict[int, tuple[Engine, int]]) -> bool:
        """Engines (by id) at new TP sizes fit every node they use, beside the nodes' other instances."""
        now: dict[str, int] = {}
        new: dict[str, int] = {}
        for engine, tp in sizes.values():
            for inst in engine.instances:
                now[inst.node] = now.get(inst.node, 0) + inst.gpus_per_node
                new[inst.node] = new.get(inst.node, 0) + _gpus(inst, tp)
                devices = parallel.visible_devices(inst.env) if inst.knows("env.CUDA_VISIBLE_DEVICES") else None
                if devices is not None and _gpus(inst, tp) > len(devices):
                    return False  # gpu[count]: the list would have to grow too
        return all(self.used[n] - now[n] + new[n] <= self.count[n] for n in new if n in self.count)


def _gpus(inst: Instance, tp: int) -> int:
    return tp * inst.pp * inst.dp_local // max(inst.nnodes, 1)


def own_ok(engine: Engine, side: vpair.Side, tp: int) -> bool:
    """The engine passes its own TP checks at tp: heads, KV-head split, its release's parallel config."""
    return _own_ok(side, tp, parallel_config.shape_of(engine.lead))


@functools.lru_cache(maxsize=16384)
def _own_ok(side: vpair.Side, tp: int, shape: parallel_config.Shape) -> bool:
    if not (parallel.heads_ok(tp, side.heads) and parallel.kv_split_ok(tp, side.kv_heads, side.mla)):
        return False
    moved = dataclasses.replace(shape, tp=tp)
    return not any("tensor_parallel_size" in v.fields for v in parallel_config.violations(side.release, moved))


def _solves(problems: tuple[vpair.Problem, ...], remaining: frozenset[str]) -> bool:
    """No problem left but those no TP size causes or fixes (a block-size mismatch, say)."""
    return all(not pr.tp_fix and pr.rule in remaining for pr in problems)


def pair_ok(side: vpair.Side, other: vpair.Side, tp: int, other_tp: int | None = None) -> bool:
    """The pair has no TP problem with side at tp (and other at other_tp)."""
    return _pair_ok(side, other, tp, other.tp if other_tp is None else other_tp)


@functools.lru_cache(maxsize=65536)
def _pair_ok(side: vpair.Side, other: vpair.Side, tp: int, other_tp: int) -> bool:
    order = (lambda a, b: (a, b)) if side.role == "prefill" else (lambda a, b: (b, a))
    remaining = frozenset(pr.rule for pr in families.problems(*order(side, other)) if not pr.tp_fix)
    moved = dataclasses.replace(side, tp=tp)
    partner = other if other_tp == other.tp else dataclasses.replace(other, tp=other_tp)
    return _solves(families.problems(*order(moved, partner)), remaining)


def candidates(nodes: Nodes, engine: Engine, side: vpair.Side, other: vpair.Side) -> frozenset[int]:
    """Every TP size for side that passes the engine's own checks and leaves the pair (other as is) no TP problem."""
    return frozenset(tp for tp in _pure(side, other, parallel_config.shape_of(engine.lead))
                     if nodes.fits({id(engine): (engine, tp)}))


@functools.lru_cache(maxsize=4096)
def _pure(side: vpair.Side, other: vpair.Side, shape: parallel_config.Shape) -> tuple[int, ...]:
    """The sizes the engine's own checks and the pair's allow: one answer per distinct pair of engine bodies (a
    fleet of identical pairs asks it once), the nodes' room checked per engine after."""
    return tuple(tp for tp in range(1, _LIMIT + 1) if _own_ok(side, tp, shape) and pair_ok(side, other, tp))


def valid_tp(nodes: Nodes, engine: Engine, side: vpair.Side, other: vpair.Side, near: int) -> list[int]:
    """TP sizes for side (near its current one) with which the pair has no TP problem in its release."""
    return nearest(sorted(candidates(nodes, engine, side, other)), near)


def tp_hint(nodes: Nodes, p: Engine, d: Engine, sp: vpair.Side, sd: vpair.Side) -> str | None:
    """"use decode TP 4 or 8", else a prefill TP, else None when no TP size fixes the pair."""
    return side_hint(nodes, d, sd, sp) or side_hint(nodes, p, sp, sd)


def side_hint(nodes: Nodes, engine: Engine, side: vpair.Side, other: vpair.Side) -> str | None:
    """tp_hint's half for one engine: "use decode TP 4 or 8" (its role), None when no size of its fixes the pair.
    It reads the engine and the two Sides only, so a pair's hint is its decode's, else its prefill's."""
    found = valid_tp(nodes, engine, side, other, side.tp)
    return f"use {side.role} TP {words(found)}" if found else None


def tp_origin(engine: Engine) -> Origin | None:
    """Where the engine's TP is written (None: not set, vLLM's default, or nowhere known)."""
    found = engine.lead.origins.get("tensor_parallel_size")
    return found if found is not None and found.file is not None and found.line is not None else None


Link = tuple[vpair.Side, Engine, vpair.Side]  # the engine's side, a partner engine, the partner's side


def joint_sizes(nodes: Nodes, engine: Engine, side: vpair.Side,
                links: list[Link]) -> list[tuple[int, tuple[tuple[Engine, int], ...]]]:
    """(TP for engine, the TP each partner at an invalid TP needs with it), nearest the current TP first.

    Partners whose TP is written on the same line as engine's take the same size; partners at a valid TP
    keep it; partners at an invalid TP get the size nearest theirs that pairs with engine's.
    """
    origin = tp_origin(engine)
    shared = [(o, so) for _unused, o, so in links if origin is not None and tp_origin(o) == origin]
    found: list[tuple[int, tuple[tuple[Engine, int], ...]]] = []
    if not shared and all(own_ok(partner, so, so.tp) for _own, partner, so in links):
        # every partner keeps its TP: the sizes the checks allow are the engine's Sides' and shape's alone, asked
        # once per distinct engine (a fleet whose hosts differ only in values no check reads asks it once); the
        # nodes' room, which is the engine's own, is checked after, nearest first, as the loop below does
        for tp in _sizes_alone(side, parallel_config.shape_of(engine.lead), tuple((own, so) for own, _p, so in links)):
            if nodes.fits({id(engine): (engine, tp)}):
                found.append((tp, ()))
                if len(found) == 2:
                    break
        return sorted(found, key=lambda f: f[0])
    for tp in _by_distance(side.tp):
        if not (own_ok(engine, side, tp) and all(own_ok(o, so, tp) for o, so in shared)):
            continue
        sizes = {id(engine): (engine, tp), **{id(o): (o, tp) for o, _unused in shared}}
        moved: list[tuple[Engine, int]] = []
        for own, partner, so in links:
            if id(partner) in sizes:
                ok = pair_ok(own, so, tp, sizes[id(partner)][1])
            elif own_ok(partner, so, so.tp):
                ok = pair_ok(own, so, tp)
            else:
                options = [n for n in _by_distance(so.tp)
                           if own_ok(partner, so, n) and pair_ok(own, so, tp, n)
                           and nodes.fits({**sizes, id(partner): (partner, n)})]
                ok = bool(options)
                if ok:
                    sizes[id(partner)] = (partner, options[0])
                    moved.append((partner, options[0]))
            if not ok:
                break
        else:
            if nodes.fits(sizes):
                found.append((tp, tuple(moved)))
                if len(found) == 2:
                    break
    return sorted(found, key=lambda f: f[0])


@functools.lru_cache(maxsize=4096)
def _sizes_alone(side: vpair.Side, shape: parallel_config.Shape,
                 links: tuple[tuple[vpair.Side, vpair.Side], ...]) -> tuple[int, ...]:
    """joint_sizes' sizes, nearest the current TP first, when no partner moves: the engine's own checks and each
    pair's at its partner's TP (the nodes not asked)."""
    return tuple(tp for tp in _by_distance(side.tp)
                 if _own_ok(side, tp, shape) and all(pair_ok(own, so, tp) for own, so in links))


@functools.lru_cache(maxsize=256)
def _by_distance(tp: int) -> tuple[int, ...]:
    """Every TP size a hint considers, nearest tp first (ties: the larger): asked once per engine, so kept."""
    return tuple(sorted(range(1, _LIMIT + 1), key=lambda n: (abs(n - tp), -n)))


def joint_hint(nodes: Nodes, engine: Engine, side: vpair.Side, links: list[Link]) -> str | None:
    """"use TP 4 or 8", naming the partners that must move too, or the line that sets them all."""
    found = joint_sizes(nodes, engine, side, links)
    if not found:
        return None
    origin = tp_origin(engine)
    shared = sorted({o.lead.label for _unused, o, _unused in links if origin is not None and tp_origin(o) == origin})
    every = ", ".join(sorted({engine.lead.label, *shared}))  # the same text from each of them: one finding
    if not any(moved for _unused, moved in found):
        sizes = words([tp for tp, _unused in found])
        if shared:
            return f"use TP {sizes} on this line, which sets the TP of {every}; it suits each of them"
        return f"use TP {sizes}"
    options = [f"TP {tp} with " + " and ".join(f"{o.lead.role} {o.lead.label} TP {n}" for o, n in moved)
               for tp, moved in found]
    partners = sorted({f"{o.lead.role} {o.lead.label}'s TP {o.lead.tp}" for _side, moved in found for o, _size in moved})
    return f"use {' or '.join(options)} ({', '.join(partners)} is invalid too)"

"""Topology + findings -> the explain model, asking the vllm layer what each release does (no rank math here)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from ..finding import Finding
from ..hostvars import HostVars
from ..rules.pair import deployment, pd_mismatch_hashed
from ..rules.pair.pairs import Block, blocks, judged
from ..topology.types import Deployment, Engine, Topology
from ..vllm import parallel, parallel_config
from ..vllm.connectors import moriio, nixl, ports, ranks, registry
from ..vllm.connectors import pair as vpair
from ..vllm.model import memory
from ..vllm.releases import DEFAULT, resolve
from .model import DeploymentView, EngineView, Explanation, Link, MemoryView, ModelView, PairView, Port, Worker
from .vaulted import MASK, RANK_MAP, SHAPE, WHY, Vault
from .why import why

# The pair rules outside the vllm layer's problems (rules/pair/deployment.py, rules/pair/pd_mismatch_hashed.py): a finding of
# theirs on both sides of a pair is the pair's, and rejects it as the lint does.
_PAIR_RULES = (deployment.connector.id, *pd_mismatch_hashed.PAIR_RULES)


def explain(topology: Topology, findings: Sequence[Finding], hosts: Sequence[HostVars] = (),
            all_pairs: bool = False) -> Explanation:
    """The explain model of topology, with each finding attached to the element it concerns; what would show
    a vault-decrypted value of hosts (the hosts checked) is <vaulted>. Pairs are shown by pair class (the rules'
    unit, rules/pair/pairs.py Block: one verdict for every pair of its engines); all_pairs: each engine pair."""
    vault = Vault(hosts)
    by_dep: dict[str | None, list[Finding]] = {}
    for f in findings:
        by_dep.setdefault(f.deployment, []).append(f)
    # The Blocks the rules judged, with their Sides and problems: explain shows what the rules judged.
    verdicts: Judged = {id(block): (sp, sd, problems) for group, sp, sd, problems in judged(topology)
                        for block in group}
    deployments = tuple(_deployment(dep, _of(dep, by_dep, vault), rows, verdicts, vault, all_pairs)
                        for dep, (_p, _d, rows) in zip(topology.deployments, blocks(topology)))
    loose = tuple(sorted(f for fs in by_dep.values() for f in fs))
    return vault.strings(Explanation(deployments, loose))


def _of(dep: Deployment, by_dep: dict[str | None, list[Finding]], vault: Vault) -> list[Finding]:
    """The findings of dep, taken from by_dep (a vaulted name is <vaulted> in findings: theirs are on dep's hosts)."""
    mine = by_dep.pop(dep.name, [])
    masked = vault.strings(dep.name)
    if masked != dep.name and masked in by_dep:
        hosts = {h for e in (*dep.prefill, *dep.decode) for h in e.hosts}
        mine += [f for f in by_dep[masked] if set(f.hosts) <= hosts]
        by_dep[masked] = [f for f in by_dep[masked] if not set(f.hosts) <= hosts]
    return mine


Judged = dict[int, tuple[vpair.Side, vpair.Side, tuple[vpair.Problem, ...]]]


def _deployment(dep: Deployment, findings: list[Finding], rows: list[list[Block]], verdicts: Judged, vault: Vault,
                all_pairs: bool) -> DeploymentView:
    engines = (*dep.prefill, *dep.decode)
    left = list(findings)
    pairs = []
    for block, ps, ds in _shown(dep, rows, all_pairs):
        found = verdicts.get(id(block))
        p, d = ps[0], ds[0]  # the Block's verdict is one for all its pairs: its first pair's engines stand for it
        # A pair the rules do not check (another class on each side, unknown values): shown, with no problems.
        sp, sd, problems = found if found else (vpair.Side.of(p.lead), vpair.Side.of(d.lead), ())
        rules = {pr.rule for pr in problems} | set(_PAIR_RULES)
        on_p, on_d = _hosts_of(ps), _hosts_of(ds)
        mine = _take(left, lambda f, rules=rules, on_p=on_p, on_d=on_d: f.rule in rules and bool(  # type: ignore[misc]
            on_p.intersection(f.hosts)) and bool(on_d.intersection(f.hosts)))
        view = _pair(p, d, sp, sd, mine)
        if found:  # judged: both sides on one connector class
            view = dataclasses.replace(view, why=why(p, d, sp, sd, problems, findings, mine))
        if len(ps) > 1 or len(ds) > 1:  # a class of pairs: every engine of each side named
            view = dataclasses.replace(view, prefill_engines=tuple(e.lead.instance_id for e in ps),
                                       decode_engines=tuple(e.lead.instance_id for e in ds))
        pairs.append(_masked_pair(view, ps, ds, vault))
    views = []
    sets = {id(f): frozenset(f.hosts) for f in left}  # each finding's hosts once, not once per engine
    for e in engines:
        own = frozenset(e.hosts)  # a finding of more hosts than the engine has is not its own
        mine = _take(left, lambda f, own=own, e=e: len(sets[id(f)]) <= len(own)  # type: ignore[misc]
                     and sets[id(f)] <= own and _only(f, e, engines))
        views.append(_engine(e, mine, vault))
    releases = tuple(sorted({v.release for v in views}))
    every = [i for e in engines for i in e.instances]
    return DeploymentView(vault.value(every, "pd_deployment", dep.name), releases, tuple(views), tuple(pairs),
                          tuple(sorted(left)), _models(engines, views, vault))


def _shown(dep: Deployment, rows: list[list[Block]],
           all_pairs: bool) -> list[tuple[Block, tuple[Engine, ...], tuple[Engine, ...]]]:
    """The pairs to show: each Block (a class of pairs), or each engine pair in the deployment's order, with the
    Block it belongs to (its verdict). Only all_pairs walks prefill x decode engines: the output is that long."""
    if not all_pairs:
        return [(block, block.prefill, block.decode) for row in rows for block in row]
    row_of = {id(e): i for i, row in enumerate(rows) for e in row[0].prefill}
    column_of = {id(e): j for j, block in enumerate(rows[0]) for e in block.decode} if rows else {}
    return [(rows[row_of[id(p)]][column_of[id(d)]], (p,), (d,)) for p in dep.prefill for d in dep.decode]


def _hosts_of(engines: tuple[Engine, ...]) -> set[str]:
    return {host for engine in engines for host in engine.hosts}


def _models(engines: Sequence[Engine], views: Sequence[EngineView], vault: Vault) -> tuple[ModelView, ...]:
    """One row per model and facts the deployment's engines use (the lead's, as the rules read them)."""
    rows: dict[ModelView, list[str]] = {}
    for e, view in zip(engines, views):
        lead, facts = e.lead, e.lead.facts
        hidden = vault.any(e.instances, "model")  # a config.json's path may name the model: masked too
        row = ModelView(MASK if hidden else lead.model, (), facts.heads, facts.kv_heads, facts.mla, facts.ssm,
                        facts.sliding_window, MASK if hidden else facts.source, () if hidden else facts.looked)
        rows.setdefault(row, []).append(str(view.name))
    return tuple(dataclasses.replace(row, engines=tuple(names)) for row, names in rows.items())


def _take(pool: list[Finding], wanted: Callable[[Finding], bool]) -> tuple[Finding, ...]:
    """The findings of pool that wanted picks, removed from pool (each finding is attached once)."""
    taken = [f for f in pool if wanted(f)]
    for f in taken:
        pool.remove(f)
    return tuple(sorted(taken))


def _touches(f: Finding, e: Engine) -> bool:
    return bool(set(f.hosts) & set(e.hosts))


def _only(f: Finding, e: Engine, engines: Iterable[Engine]) -> bool:
    """No other engine of the deployment shares all of f's hosts (vllm_instances on one host: the deployment's)."""
    return bool(f.hosts) and not any(o is not e and set(f.hosts) <= set(o.hosts) for o in engines)


def _release(text: str | None) -> str:
    return str(resolve(text).release or DEFAULT)


def _engine(e: Engine, findings: tuple[Finding, ...], vault: Vault) -> EngineView:
    lead, every = e.lead, e.instances
    workers = []
    for inst in () if vault.any(every, *SHAPE) else sorted(every, key=lambda i: (i.node_rank, i.host)):
        visible = parallel.visible_devices(inst.env) if inst.knows("env.CUDA_VISIBLE_DEVICES") else None
        start = parallel_config.dp_ranks(registry.release(inst), inst).start  # as vLLM numbers them
        hidden = vault.any((inst,), "env.CUDA_VISIBLE_DEVICES")
        for dp, pp, tp, gpu in parallel.rank_devices(inst.tp, inst.pp, inst.dp_local, inst.nnodes, inst.node_rank,
                                                     visible):
            if start + dp < lead.dp:  # a rank past the engine's DP is parallel[dp-rank]'s finding, not a worker
                workers.append(Worker(inst.host, vault.value((inst,), "node", inst.node), start + dp, pp, tp,
                                      MASK if hidden else gpu))
    binds = tuple(Port(inst.host, port, what, inst.label) for inst in every
                  for port, what in vault.ports(inst, ports.binds(inst)))
    connector = vault.value(every, "kv_transfer_config.kv_connector", registry.canonical(lead.connector))
    return EngineView(vault.value(every, "instance_id", lead.instance_id), lead.role,
                      vault.value(every, "version", _release(lead.version)), connector,
                      vault.value(every, "tensor_parallel_size", lead.tp),
                      vault.value(every, "pipeline_parallel_size", lead.pp),
                      vault.value(every, "data_parallel_size", lead.dp), vault.value(every, "nnodes", lead.nnodes),
                      e.hosts, tuple(workers), binds, findings, _memory(e, vault))


_SIZING = ("host_gpu_memory_gib", "host_gpu_type", "max_model_len", "gpu_memory_utilization", "kv_cache_memory_bytes",
           "cpu_offload_gb", "decode_context_parallel_size", "model", *SHAPE)


def _memory(e: Engine, vault: Vault) -> MemoryView | None:
    """The lead worker's figures; none where a value they read is vaulted."""
    found = memory.fit(e.lead)
    if found is None or found.gpu is None or found.budget is None or vault.any(e.instances, *_SIZING):
        return None
    room = found.available
    capacity = found.capacity()
    fits = found.longest(room, 1 << 24) if room is not None and found.layers else None
    return MemoryView(round(found.gpu / memory.GIB, 2), round(found.budget / memory.GIB, 2), found.utilization,
                      None if found.weights is None else round(found.weights / memory.GIB, 2), found.per_token,
                      capacity, found.max_model_len, fits)


def _masked_pair(view: PairView, ps: tuple[Engine, ...], ds: tuple[Engine, ...], vault: Vault) -> PairView:
    """The pair (or class of pairs) as shown: no rank map (nor acks) where it would show a vaulted TP or model;
    vaulted names masked."""
    if not vault:
        return view
    p, d = ps[0], ds[0]
    both = tuple(i for e in (*ps, *ds) for i in e.instances)
    hide = vault.any(both, *RANK_MAP, "kv_transfer_config")
    hide_why = vault.any(both, *WHY)
    note = "rank map not shown: it would show vault-encrypted values" if hide and view.links else view.note
    if hide_why and view.why:
        note = (f"{note}; " if note else "") + "why-block not shown: it would show vault-encrypted values"
    return dataclasses.replace(
        view, prefill=vault.value(p.instances, "instance_id", view.prefill),
        decode=vault.value(d.instances, "instance_id", view.decode),
        connector=vault.value(both, "kv_transfer_config.kv_connector", view.connector),
        release=vault.value(both, "version", view.release),
        links=() if hide else view.links, acks=None if hide else view.acks,
        why=() if hide_why else view.why,
        acks_what=None if hide else view.acks_what,
        note=note)


def _pair(p: Engine, d: Engine, sp: vpair.Side, sd: vpair.Side, findings: tuple[Finding, ...]) -> PairView:
    names = (p.lead.instance_id, d.lead.instance_id)
    kind = registry.kind_of(sp.connector)
    if sp.connector != sd.connector or kind is None:
        return PairView(*names, sp.connector, str(sd.release), "", "rejected" if findings else "ok", (), None, None,
                        "no rank map: prefill and decode use different (or no) KV connectors", findings)
    try:
        mode, release, links, acks, what = _rank_map(kind, sp, sd)
    except ValueError as exc:
        return PairView(*names, sp.connector, str(sd.release), "", "rejected", (), None, None,
                        f"vLLM cannot map the ranks: {exc}", findings)
    if mode == "":
        return PairView(*names, sp.connector, str(sd.release), "", "rejected" if _errors(findings) else "ok", (),
                        None, None, f"pdlint does not model the rank map of {sp.connector}", findings)
    stages = (f"the map holds for each of prefill's {sp.pp} PP stages (each holds its own layers)"
              if sp.pp > 1 and mode == "decode reads" else None)
    return PairView(*names, sp.connector, release, mode, "rejected" if _errors(findings) else "ok", links, acks,
                    what, stages, findings)


def _errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def _rank_map(kind: str, sp: vpair.Side, sd: vpair.Side) -> tuple[str, str, tuple[Link, ...], int | None, str | None]:
    """(mode, release that maps, links, acks per prefill rank, what the acks are) from the vllm layer."""
    P, D = sp.tp, sd.tp  # the names vLLM's docs use
    if kind == "nixl" and not nixl.is_push(sp):
        links = [(d, q) for d in range(D) for q in ranks.nixl_targets(d, D, P, sd.release)]
        return ("decode reads", str(sd.release), _links(links, sp, sd), ranks.nixl_notifications(P, D),
                "completion notification")
    if kind == "nixl":
        links = [(d, q) for q in range(P) for d in ranks.nixl_targets(q, P, D, sp.release)]
        return "prefill writes", str(sp.release), _links(links, sp, sd), None, None
    if kind == "moriio" and moriio.side_read(sp) and moriio.side_read(sd):
        links = [(d, q) for d in range(D) for q in ranks.remote_ranks(d, D, P, "moriio", sd.release)]
        acks = moriio.ack_count(P, D) if moriio.READ_TP.at(sd.release) == "rank-map" else None
        return "decode reads", str(sd.release), _links(links, sp, sd), acks, "MoRIIO release ack" if acks else None
    if kind == "moriio":
        links = [(d, q) for q in range(P)
                 for d in ranks.moriio_write_targets(q, P, D, sp.kv_heads, sp.mla, sp.ssm, sp.release)]
        return "prefill writes", str(sp.release), _links(links, sp, sd), None, None
    return "", str(sd.release), (), None, None


def _links(pairs: list[tuple[int, int]], sp: vpair.Side, sd: vpair.Side) -> tuple[Link, ...]:
    return tuple(_link(d, q, sp, sd) for d, q in sorted(pairs))


def _link(d: int, q: int, sp: vpair.Side, sd: vpair.Side) -> Link:
    """The KV heads both ranks hold: what moves between them."""
    if sp.mla:
        return Link(d, q, (), "mla", True)
    k = sp.kv_heads
    if not k:
        return Link(d, q, (), "unknown", False)
    shared = tuple(sorted(set(ranks.rank_heads(q, sp.tp, k)) & set(ranks.rank_heads(d, sd.tp, k))))
    return Link(d, q, shared, "heads", max(sp.tp, sd.tp) > k)


def mapped_lines(hosts: Sequence[HostVars]) -> tuple[str, ...]:
    """Where the config file's `variables:` mapping set each value: "p1: vllm_tensor_parallel_size mapped by
    .pdlint.yaml:4:30 from tp (group_vars/prefill.yml:1:5)"; hosts with the same notes are listed together."""
    by_note: dict[str, list[str]] = {}
    for hv in hosts:
        for path in sorted(hv.notes, key=lambda p: list(map(str, p))):
            by_note.setdefault(hv.notes[path], []).append(hv.host)
    return tuple(f"{', '.join(sorted(on))}: {note}" for note, on in sorted(by_note.items()))

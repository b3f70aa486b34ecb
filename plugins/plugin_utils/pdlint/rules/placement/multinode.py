"""multinode[*]: the hosts of one engine (one vllm_instance_id in a deployment) must make up one engine.

Each host runs its own `vllm serve`; vLLM never compares them. Node rank 0 (and DP rank 0) wait for the
ranks the other hosts bring (v1/executor/multiproc_executor.py MultiprocExecutor._init_executor, v1/engine
utils.py wait_for_engine_startup): a missing rank is waited for forever, and a mismatched world size makes
torch.distributed hang or assert.
"""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Engine, Instance, Topology
from ...vllm import parallel_config
from ...vllm.connectors import registry
from ..base import Hit, hit, rule

_SHAPE = {  # Instance attribute -> (contract variable, what the message calls it)
    "tp": ("tensor_parallel_size", "TP"), "pp": ("pipeline_parallel_size", "PP"),
    "dp": ("data_parallel_size", "DP"), "nnodes": ("nnodes", "nnodes"), "model": ("model", "model"),
    "version": ("version", "vLLM version"), "connector": ("kv_connector", "kv_connector"),
    "kv_role": ("kv_role", "kv_role"), "dtype": ("dtype", "dtype"),
    "kv_cache_dtype": ("kv_cache_dtype", "KV cache dtype"), "block_size": ("block_size", "block size"),
    "disable_hma": ("disable_hybrid_kv_cache_manager", "hybrid KV cache manager flag"),
}
_RANKS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "data_parallel_size_local",
          "data_parallel_start_rank", "nnodes", "node_rank", "version")


def _ordered(engine: Engine) -> list[Instance]:
    return sorted(engine.instances, key=lambda i: (i.node_rank, i.host, i.index or 0))


def _multi(topo: Topology, *needs: str) -> Iterator[tuple[Engine, list[Instance]]]:
    for engine in topo.engines():
        insts = _ordered(engine)
        if all(i.knows(*needs) for i in insts):
            yield engine, insts


@rule("multinode[shape]")
def shape(topo: Topology) -> Iterator[Hit]:
    """Hosts of one engine (same vllm_instance_id) disagree on TP, PP, DP, nnodes, model, version or KV settings.

    Every host of a multi-node engine runs the same engine: vLLM builds each
    host's process group from its own flags, so a host with another TP or
    nnodes joins a different world size and the engine never comes up.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_tensor_parallel_size: 8, vllm_nnodes: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_instance_id: p, vllm_node_rank: 1}
            d1: {vllm_pd_role: decode, vllm_nnodes: 1}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_nnodes: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p, vllm_tensor_parallel_size: 8}
            p2: {vllm_pd_role: prefill, vllm_instance_id: p, vllm_node_rank: 1, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_nnodes: 1}
    """
    for _engine, insts in _multi(topo):
        lead = insts[0]
        for inst in insts[1:]:
            for attr, (var, what) in _SHAPE.items():
                mine, theirs = getattr(inst, attr), getattr(lead, attr)
                if mine != theirs and inst.knows(var) and lead.knows(var):
                    yield hit(inst, (var,), f"{inst.label} runs engine {inst.instance_id!r} with {what} {mine}, "
                              f"but {lead.label} runs it with {theirs}: the hosts of one engine never form one "
                              "process group (vLLM waits or asserts at startup)",
                              f"give every host of engine {inst.instance_id!r} the same {what}", also=(lead,))


@rule("multinode[nodes]")
def nodes(topo: Topology) -> Iterator[Hit]:
    """A multi-node engine lacks a node rank 0 .. vllm_nnodes - 1, or two of its hosts run the same one.

    vLLM waits for every node's workers (MultiprocExecutor, 0.11.1 on, or the
    torch.distributed rendezvous): with a node rank missing, node rank 0 waits
    forever; two hosts of one node rank register the same ranks twice.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_tensor_parallel_size: 8, vllm_nnodes: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_instance_id: p, vllm_node_rank: 1}
            d1: {vllm_pd_role: decode, vllm_nnodes: 1}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_tensor_parallel_size: 8, vllm_nnodes: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            d1: {vllm_pd_role: decode, vllm_nnodes: 1}
    """
    for engine, insts in _multi(topo, *_RANKS):
        lead = insts[0]
        if any(i.nnodes != lead.nnodes for i in insts):
            continue  # multinode[shape]
        present = {i.node_rank for i in insts}
        missing = [r for r in range(lead.nnodes) if r not in present]
        if missing:
            yield hit(lead, ("nnodes", "node_rank", "instance_id"),
                      f"engine {lead.instance_id!r} has vllm_nnodes {lead.nnodes} but no host of node rank "
                      f"{', '.join(map(str, missing))}: vLLM's node rank 0 waits forever for the missing node's "
                      "workers", f"add a host with vllm_instance_id {lead.instance_id!r} and vllm_node_rank "
                      f"{missing[0]}, or set vllm_nnodes to {len(present)}", also=(engine,))
        if lead.dp > 1:
            continue  # hosts of one node rank with other DP ranks: multinode[dp-ranks]
        seen: dict[int, Instance] = {}
        for inst in insts:
            first = seen.setdefault(inst.node_rank, inst)
            if first is not inst:
                yield hit(inst, ("node_rank", "instance_id"),
                          f"{inst.label} and {first.label} are both node rank {inst.node_rank} of engine "
                          f"{inst.instance_id!r}: vLLM gets the same ranks twice and the engine never comes up",
                          f"give each host of engine {inst.instance_id!r} its own vllm_node_rank "
                          f"(0 .. {max(lead.nnodes, len(insts)) - 1}), or its own vllm_instance_id", also=(first,))


@rule("multinode[dp-ranks]")
def dp_ranks(topo: Topology) -> Iterator[Hit]:
    """The hosts of a DP engine leave a DP rank unserved, or two of them run the same DP rank.

    Each host runs DP ranks start rank .. start rank + local DP - 1 (as its
    release computes them). DP rank 0's front end handshakes with every rank
    0 .. DP - 1 (v1/engine/utils.py launch_core_engines,
    wait_for_engine_startup) and waits forever for a missing one; two engine
    cores of one DP rank break the DP group.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_data_parallel_size: 4, vllm_data_parallel_size_local: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_instance_id: p, vllm_data_parallel_start_rank: 2}
            d1: {vllm_pd_role: decode, vllm_data_parallel_size: 1, vllm_data_parallel_size_local: 1}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_data_parallel_size: 4, vllm_data_parallel_size_local: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_instance_id: p}
            d1: {vllm_pd_role: decode, vllm_data_parallel_size: 1, vllm_data_parallel_size_local: 1}
    """
    for engine, insts in _multi(topo, *_RANKS):
        lead = insts[0]
        if lead.dp <= 1 or any(i.dp != lead.dp for i in insts):
            continue  # multinode[shape] reports a DP mismatch
        owners: dict[tuple[int, int], Instance] = {}
        served: set[int] = set()
        for inst in insts:
            # Ranks outside 0 .. DP - 1 are parallel[dp-rank]'s to report.
            ranks = [r for r in parallel_config.dp_ranks(registry.release(inst), inst) if 0 <= r < lead.dp]
            served.update(ranks)
            clash = sorted(r for r in ranks if owners.get((inst.node_rank, r), inst) is not inst)
            if clash:
                other = owners[(inst.node_rank, clash[0])]
                yield hit(inst, ("data_parallel_start_rank", "data_parallel_size_local", "instance_id"),
                          f"{inst.label} and {other.label} both run DP rank {', '.join(map(str, clash))} of engine "
                          f"{inst.instance_id!r}: two engine cores of one DP rank never form the DP group",
                          "give each host its own vllm_data_parallel_start_rank (the previous host's start rank "
                          "plus its vllm_data_parallel_size_local)", also=(other,))
            for r in ranks:
                owners.setdefault((inst.node_rank, r), inst)
        missing = [r for r in range(lead.dp) if r not in served]
        if missing:
            yield hit(lead, ("data_parallel_size", "data_parallel_size_local", "instance_id"),
                      f"no host of engine {lead.instance_id!r} runs DP rank {', '.join(map(str, missing))} of "
                      f"DP {lead.dp}: DP rank 0 waits forever for the missing engine cores",
                      "add hosts for the missing DP ranks (vllm_data_parallel_start_rank, "
                      "vllm_data_parallel_size_local), or lower vllm_data_parallel_size", also=(engine,))

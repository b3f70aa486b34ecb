"""gpu[*]: engines must fit the node's GPUs and not share them."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology
from ...vllm import parallel
from ..base import Hit, hit, rule

_CVD = "env.CUDA_VISIBLE_DEVICES"


def _devices(inst: Instance) -> list[str] | None:
    if not inst.knows(_CVD):
        return None
    return parallel.visible_devices(inst.env)


def _by_node(topo: Topology) -> dict[str, list[Instance]]:
    nodes: dict[str, list[Instance]] = {}
    for inst in topo.instances:
        nodes.setdefault(inst.node, []).append(inst)
    return nodes


@rule("gpu[oversubscribed]")
def oversubscribed(topo: Topology) -> Iterator[Hit]:
    """A node's engines need more GPUs than vllm_host_gpu_count.

    Each instance uses TP x PP x local DP GPUs, split over vllm_nnodes hosts.
    vLLM fails to start (or blocks waiting for memory) when they do not fit.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_host_gpu_count: 8}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 8}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_host_gpu_count: 8}
          hosts:
            gpu1:
              vllm_instances:
                - {pd_role: prefill, tensor_parallel_size: 4, port: 8100}
                - {pd_role: decode, tensor_parallel_size: 8, port: 8200}
    """
    for node, insts in sorted(_by_node(topo).items()):
        counts = [i.gpu_count for i in insts if i.gpu_count is not None]
        if not counts or not all(i.knows("tensor_parallel_size", "pipeline_parallel_size",
                                         "data_parallel_size_local", "nnodes") for i in insts):
            continue
        have = min(counts)
        need = sum(i.gpus_per_node for i in insts)
        if need > have:
            parts = " + ".join(f"{i.label} {i.gpus_per_node}" for i in insts)
            last = max(insts, key=lambda i: (i.host, i.index or 0))
            yield hit(last, ("tensor_parallel_size", "host_gpu_count"),
                      f"node {node} has {have} GPUs but its instances need {need} ({parts})",
                      "lower TP/PP/DP, or move an instance to another node", also=insts)


@rule("gpu[overlap]")
def overlap(topo: Topology) -> Iterator[Hit]:
    """Two instances on one node list the same GPU in CUDA_VISIBLE_DEVICES.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            gpu1:
              vllm_instances:
                - {pd_role: prefill, port: 8100, env: {CUDA_VISIBLE_DEVICES: "0"}}
                - {pd_role: decode, port: 8200, env: {CUDA_VISIBLE_DEVICES: "1"}}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            gpu1:
              vllm_instances:
                - {pd_role: prefill, port: 8100, env: {CUDA_VISIBLE_DEVICES: "0"}}
                - {pd_role: decode, port: 8200, env: {CUDA_VISIBLE_DEVICES: "0"}}
    """
    for _node, insts in sorted(_by_node(topo).items()):
        owners: dict[str, Instance] = {}
        for inst in sorted(insts, key=lambda i: (i.host, i.index or 0)):
            devices = _devices(inst) or []
            shared = sorted({d for d in devices if d in owners and owners[d] is not inst})
            if shared:
                others = sorted({owners[d].label for d in shared})
                yield hit(inst, (_CVD,), f"GPU {', '.join(shared)} also used by {', '.join(others)}",
                          "give each instance its own GPUs in CUDA_VISIBLE_DEVICES",
                          also=[owners[d] for d in shared])
            for d in devices:
                owners.setdefault(d, inst)


def _device_counts(topo: Topology) -> Iterator[tuple[Instance, int]]:
    """(instance, GPUs its CUDA_VISIBLE_DEVICES lists) where that list and the instance's size are known."""
    for inst in topo.instances:
        devices = _devices(inst)
        if devices is not None and inst.knows("tensor_parallel_size", "pipeline_parallel_size",
                                              "data_parallel_size_local", "nnodes"):
            yield inst, len(devices)


def _uses(inst: Instance) -> str:
    return (f"{inst.gpus_per_node} (TP {inst.tp} x PP {inst.pp} x local DP {inst.dp_local}"
            + (f" / {inst.nnodes} nodes)" if inst.nnodes > 1 else ")"))


@rule("gpu[count]")
def count(topo: Topology) -> Iterator[Hit]:
    """CUDA_VISIBLE_DEVICES lists fewer GPUs than the instance uses (TP x PP x local DP / nnodes).

    Worker rank r of local DP engine i takes visible device i x (TP x PP) + r (v1/worker/gpu_worker.py
    Worker.init_device, v1/engine/utils.py get_physical_gpu_ids_for_local_dp_rank, every release pdlint
    knows): a rank past the end of the list has no device and the engine fails at startup. A longer list
    is gpu[unused] (a warning): vLLM starts and leaves the extra GPUs idle.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}
    """
    for inst, listed in _device_counts(topo):
        if listed < inst.gpus_per_node:
            yield hit(inst, (_CVD,), f"CUDA_VISIBLE_DEVICES lists {listed} GPUs but the instance uses {_uses(inst)}",
                      f"list at least {inst.gpus_per_node} GPUs")


@rule("gpu[unused]", "warning")
def unused(topo: Topology) -> Iterator[Hit]:
    """CUDA_VISIBLE_DEVICES lists more GPUs than the instance uses: vLLM starts and leaves the rest idle.

    Workers take the first TP x PP x local DP / nnodes visible devices (v1/worker/gpu_worker.py
    Worker.init_device uses cuda:local_rank); the others stay unused by this engine, which is legal
    but usually a copy-paste slip (another engine on the node may have been meant to get them).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1,2,3"}}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}}
    """
    for inst, listed in _device_counts(topo):
        if listed > inst.gpus_per_node:
            yield hit(inst, (_CVD,), f"CUDA_VISIBLE_DEVICES lists {listed} GPUs but the instance uses only "
                      f"{_uses(inst)}; {listed - inst.gpus_per_node} stay idle",
                      f"list exactly {inst.gpus_per_node} GPUs, or raise TP/PP/DP to use them")

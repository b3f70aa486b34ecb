"""parallel[*]: one `vllm serve`'s DP and node flags, as the release's EngineArgs and ParallelConfig check them."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology, per_body
from ...vllm import parallel_config
from ...vllm.connectors import registry
from ..base import Hit, hit, rule

_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "data_parallel_size_local",
           "data_parallel_start_rank", "nnodes", "node_rank", "version")


@per_body
def _violations(inst: Instance) -> tuple[parallel_config.Violation, ...]:
    """What the release refuses about the instance's shape, asked once for the four rules below."""
    return parallel_config.violations(registry.release(inst), parallel_config.shape_of(inst))


def _hits(topo: Topology, rule_id: str, hint: str) -> Iterator[Hit]:
    for inst in topo.instances:
        if not inst.knows(*_FIELDS):
            continue
        release = registry.release(inst)
        for found in _violations(inst):
            if found.rule == rule_id:
                yield hit(inst, found.fields, f"{found.message}: vLLM {release} refuses to start "
                          f"({found.source})", hint)


@rule("parallel[dp-local]")
def dp_local(topo: Topology) -> Iterator[Hit]:
    """vllm_data_parallel_size_local is more than vllm_data_parallel_size (or the release has no such flag).

    vLLM 0.9.0 on: ParallelConfig.__post_init__ (config.py; config/parallel.py
    `_validate_parallel_config` from 0.11.1) raises "data_parallel_size_local
    must be <= data_parallel_size". 0.8.5 has no --data-parallel-size-local.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_data_parallel_size: 4, vllm_data_parallel_size_local: 2}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_data_parallel_size: 2, vllm_data_parallel_size_local: 4}
            d1: {vllm_pd_role: decode}
    """
    yield from _hits(topo, "parallel[dp-local]", "set vllm_data_parallel_size_local to at most "
                     "vllm_data_parallel_size (the DP ranks this host runs)")


@rule("parallel[dp-rank]")
def dp_rank(topo: Topology) -> Iterator[Hit]:
    """The host's DP ranks (start rank .. start rank + local DP - 1) are not all ranks of the engine.

    vLLM 0.9.2 on: ParallelConfig.__post_init__ raises "data_parallel_rank
    must be in the range [0, DP)" for a start rank >= DP, and each local engine
    core asserts `dp_rank < dp_size` (v1/engine/core.py
    DPEngineCoreProc._init_data_parallel) when start rank + local DP > DP.
    The start rank counts only with vllm_data_parallel_size_local (0.10.0 on,
    EngineArgs.create_engine_config); before 0.28.0 a start rank of 0 means
    "infer it from the node rank".

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_data_parallel_size: 4, vllm_data_parallel_size_local: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_data_parallel_start_rank: 2}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_data_parallel_size: 4, vllm_data_parallel_size_local: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_data_parallel_start_rank: 3}
            d1: {vllm_pd_role: decode}
    """
    yield from _hits(topo, "parallel[dp-rank]", "the start rank plus the local DP size must not pass "
                     "vllm_data_parallel_size: lower vllm_data_parallel_start_rank or vllm_data_parallel_size_local")


@rule("parallel[nnodes]")
def nnodes(topo: Topology) -> Iterator[Hit]:
    """vllm_nnodes does not fit the engine: it must divide DP x TP x PP, and the release must have --nnodes.

    vLLM 0.11.1 on: EngineArgs.create_engine_config (engine/arg_utils.py)
    asserts (0.27.0 on: raises) that --nnodes divides the world size; 0.11.1 -
    0.11.2 also refuse nnodes > 1 with TP x PP = 1 (the uni executor), and
    0.31.0 on ParallelConfig.nnodes_within_dp needs nnodes to be a multiple of
    DP / local DP. Releases before 0.11.1 have no --nnodes.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 8, vllm_nnodes: 2, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 8, vllm_nnodes: 2, vllm_node_rank: 1,
                 vllm_instance_id: p}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 3, vllm_nnodes: 2, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 3, vllm_nnodes: 2, vllm_node_rank: 1,
                 vllm_instance_id: p}
            d1: {vllm_pd_role: decode}
    """
    yield from _hits(topo, "parallel[nnodes]", "make vllm_nnodes divide DP x TP x PP (each node runs an equal "
                     "share), or set vllm_version to a release with --nnodes")


@rule("parallel[node-rank]")
def node_rank(topo: Topology) -> Iterator[Hit]:
    """vllm_node_rank is not below vllm_nnodes.

    vLLM 0.11.1 on: EngineArgs.create_engine_config asserts (0.27.0 on:
    raises) "--node-rank must be between 0 and nnodes - 1".

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_tensor_parallel_size: 8, vllm_nnodes: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_node_rank: 1, vllm_instance_id: p}
            d1: {vllm_pd_role: decode, vllm_instance_id: d}
            d2: {vllm_pd_role: decode, vllm_node_rank: 1, vllm_instance_id: d}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_tensor_parallel_size: 8, vllm_nnodes: 2}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_instance_id: p}
            p2: {vllm_pd_role: prefill, vllm_node_rank: 2, vllm_instance_id: p}
            d1: {vllm_pd_role: decode, vllm_instance_id: d}
            d2: {vllm_pd_role: decode, vllm_node_rank: 1, vllm_instance_id: d}
    """
    yield from _hits(topo, "parallel[node-rank]", "number the hosts of a multi-node engine 0 .. vllm_nnodes - 1")

"""The rule registry: every rule pdlint runs, listed explicitly (no discovery)."""
from __future__ import annotations

from .base import Rule
from .pair import deployment, kv_heads, memory_pair, pd_mismatch_hashed, pd_mismatch_layout, tp_ratio
from .per_engine import connector, connector_keys, env, kv_role, memory, parallel, tp, version
from .placement import gpu, multinode, network
from .reported import command_line, skip, stages

# Stage rules (reported by the loader, builder, schema and suppression) run outside the rule loop.
STAGES: tuple[Rule, ...] = (stages.schema, stages.load_error, stages.unresolved, stages.key_duplicates,
                            stages.group_name, stages.unmatched_vars, stages.no_pd_hosts, stages.role_conflict,
                            command_line.invalid, command_line.conflict,
                            skip.unused, skip.unknown)

CHECKS: tuple[Rule, ...] = (
    version.unknown, version.pre_release,
    deployment.incomplete, deployment.connector,
    connector.unknown, connector.config, connector.out_of_tree, connector_keys.extra_key,
    kv_role.missing, kv_role.invalid, kv_role.side, kv_role.moriio_explicit,
    tp.heads, tp.kv_heads, tp.model_facts,
    tp_ratio.moriio_ratio, tp_ratio.moriio_write, tp_ratio.nixl, tp_ratio.mooncake, tp_ratio.p2p_nccl,
    kv_heads.moriio_replicated, kv_heads.nixl_prefill_replicated,
    pd_mismatch_hashed.model, pd_mismatch_hashed.dtype, pd_mismatch_hashed.kv_cache_dtype,
    pd_mismatch_hashed.vllm_version, pd_mismatch_hashed.hma, pd_mismatch_layout.block_size,
    pd_mismatch_layout.kv_cache_layout,
    network.engine_id, network.collision, network.http_mismatch, network.side_channel_host,
    parallel.dp_local, parallel.dp_rank, parallel.nnodes, parallel.node_rank,
    multinode.nodes, multinode.shape, multinode.dp_ranks,
    gpu.oversubscribed, gpu.overlap, gpu.count, gpu.unused,
    env.ignored, env.invalid,
    memory.gpu_type, memory.weights, memory.kv_cache, memory.margin, memory_pair.max_len, memory_pair.kv_capacity,
)

REGISTRY: dict[str, Rule] = {r.id: r for r in (*STAGES, *CHECKS)}

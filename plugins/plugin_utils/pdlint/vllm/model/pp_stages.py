"""The KV layers each PP stage registers with NIXL, and which stages the pulling decode's handshake compares.

A stage registers one region set per KV-holding layer it owns (NixlConnectorWorker.register_kv_caches, v1/nixl/
worker.py 0.20.0 - 0.22.1, v1/nixl/base_worker.py 0.24.0 -: one entry of block_len_per_layer per distinct
base address of the stage's kv_caches). "none" layers (MLP/MoE-only, no-op attention) hold no KV cache. Both sides
run the same model with the same layout, so K/V split regions scale both counts alike and the layer count decides
the assert. The count is unknown (None: the rules keep their stage-blind verdict) when:
- the model has Mamba/SSM or linear-attention layers (their (ssm, conv) regions, and 0.26.0+ skips the assert:
  `elif not self._has_mamba`), or
- the hybrid KV cache manager runs on a model with sliding-window or chunked local layers: HMA pools one tensor per
  group slot across groups, so `seen_base_addresses` counts group slots, not layers (with HMA off,
  unify_hybrid_kv_cache_specs makes sliding and chunked local layers full attention, each with its own tensor).
The stage split is get_pp_indices (vllm/distributed/utils.py, with VLLM_PP_LAYER_PARTITION; vllm/model/layers.py).
Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..history import history
from ..releases import Release, Timeline
from .layers import stages

_CORE = "v1/engine/core.py EngineCore.__init__"
# The prefill stages whose metadata a pulling decode checks against its own stage.
CHECKED: Timeline[str] = history("tp-ratio[nixl]", Timeline(
    "NIXL prefill PP stages the decode's handshake checks",
    ("0.9.0", "own", "v1/nixl_connector.py NixlConnectorWorker._nixl_handshake_listener (base_port + tp_rank)",
     "each worker serves its own metadata (no layer-count check)"),
    ("0.11.1", "last", (f"v1/worker/gpu_worker.py Worker.get_kv_connector_handshake_metadata ({{tp_rank: metadata}}); "
                        f"{_CORE} (content.update over the workers' replies in rank order, PP-major: the last "
                        "stage's metadata wins for every TP rank)"),
     "the decode's every stage is checked against the prefill's last stage"),
    ("0.23.0", "all", "kv_connector/v1/base.py KVConnectorBase_V1.set_xfer_handshake_metadata_pp_aware",
     "(PP > 1 raises ValueError at engine start)"),
    ("0.26.0", "first", ("v1/nixl/base_scheduler.py request_finished (no pp_size in kv_transfer_params: "
                         "NixlBaseConnectorWorker._nixl_handshake loops range(remote_pp_size=1))"),
     "the decode checks the prefill's stage 0 only"),
    ("0.29.0", "all", ("v1/nixl/pull_scheduler.py (kv_transfer_params pp_size=pipeline_parallel_size; "
                       "_nixl_handshake asks every (remote_pp_rank, tp_rank))"),
     "the decode checks every prefill stage against its own layers"),
))


def kv_counts(kinds: Sequence[str] | None, pp: int, env: Mapping[str, str], hma_on: bool) -> tuple[int, ...] | None:
    """The KV-holding layers each of pp stages registers (see the module docstring); None when unknown."""
    if not kinds or {"mamba", "linear"} & set(kinds) or hma_on and {"sliding", "chunked"} & set(kinds):
        return None
    held = stages(kinds, pp, env)  # None: get_pp_indices raises (pp_error reports that)
    return None if held is None else tuple(sum(1 for kind in stage if kind != "none") for stage in held)


def checked(release: Release, pp: int) -> tuple[int, ...]:
    """The prefill stages (of pp) whose registered layers the decode's handshake compares in release."""
    which = CHECKED.at(release)
    if which in ("last", "own"):  # "own": no merged metadata and no assert (nixl_pp.LAYERS); never compared
        return (pp - 1,)
    if which == "first":
        return (0,)
    return tuple(range(pp))


def mismatch(prefill: tuple[int, ...], decode: tuple[int, ...],
             stages: Sequence[int]) -> tuple[int, int, int, int] | None:
    """(decode stage, its layers, prefill stage, its layers) of the first pair the assert fails on; None: all equal."""
    for d_rank, d_count in enumerate(decode):
        for p_rank in stages:
            if prefill[p_rank] != d_count:
                return d_rank, d_count, p_rank, prefill[p_rank]
    return None

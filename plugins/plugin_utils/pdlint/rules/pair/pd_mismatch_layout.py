"""pd-mismatch[block-size], [kv-cache-layout]: how prefill and decode lay the KV cache out in memory must pair.

The vllm layer decides per release (vllm/connectors/nixl/__init__.py BLOCKS, vllm/connectors/nixl/layout.py; MoRIIO and Mooncake blocks).
"""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Topology
from ..base import Hit, rule
from .pair_hints import problem_hits


@rule("pd-mismatch[block-size]")
def block_size(topo: Topology) -> Iterator[Hit]:
    """Prefill and decode block sizes the connector cannot pair.

    NIXL by release (pull; push mirrors it): equal before 0.11.1 (unchecked
    in 0.9.0); decode block % prefill block == 0 from 0.11.1
    (block_size_ratio); also equal when prefill TP > decode TP (non-MLA) from
    0.14.0, and with HMA on a hybrid (Mamba/SSM) model in 0.18.0 - 0.26.0.
    MoRIIO and Mooncake pair blocks one to one, so they must be equal. Only
    explicit block sizes are compared (the default depends on platform and
    attention backend).

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_block_size: 16}
            d1: {vllm_pd_role: decode, vllm_block_size: 64}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_block_size: 64}
            d1: {vllm_pd_role: decode, vllm_block_size: 16}
    """
    yield from problem_hits(topo, "pd-mismatch[block-size]")


@rule("pd-mismatch[kv-cache-layout]")
def kv_cache_layout(topo: Topology) -> Iterator[Hit]:
    """NIXL prefill and decode set VLLM_KV_CACHE_LAYOUT values the handshake rejects.

    The handshaking side (decode in pull mode) compares the remote
    kv_cache_layout with its own: from 0.10.1 when decode TP > prefill TP
    and the KV heads are split (non-MLA, prefill TP < K; a bare
    AssertionError), from 0.11.1 for every TP ("Heterogeneous TP expects
    same kv_cache_layout", non-MLA). From 0.20.0 a TP that differs also
    needs its own layout to keep heads contiguous (HND; from 0.29.0 any
    block-contiguous layout: LBHNC, BLHNC) unless prefill's KV heads are
    replicated. NHD and LBNHC, HND and LBHNC are the same layout (0.29.0
    aliases). Not checked: a side without VLLM_KV_CACHE_LAYOUT in vllm_env
    (the attention backend and the connector choose its layout), a host
    buffer (kv_buffer_device cpu), and a remote HND into a local NHD cache
    (enable_permute_local_kv may allow it). Before 0.29.0 an attention
    backend that requires one layout overrides the variable; the message
    says so.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.1-8B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {VLLM_KV_CACHE_LAYOUT: HND}}
            d1: {vllm_pd_role: decode, vllm_env: {VLLM_KV_CACHE_LAYOUT: LBHNC}}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.1-8B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {VLLM_KV_CACHE_LAYOUT: NHD}}
            d1: {vllm_pd_role: decode, vllm_env: {VLLM_KV_CACHE_LAYOUT: HND}}
    """
    yield from problem_hits(topo, "pd-mismatch[kv-cache-layout]")

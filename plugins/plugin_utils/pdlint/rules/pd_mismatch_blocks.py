"""pd-mismatch[block-size]: prefill and decode block sizes the connector cannot pair (vllm/nixl.py BLOCKS, per family)."""
from __future__ import annotations

from collections.abc import Iterator

from ..topology.types import Topology
from .base import Hit, rule
from .pairs import problem_hits


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

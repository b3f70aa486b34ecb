"""kv-heads[*]: heterogeneous TP needs the KV heads laid out the way the connector reads them."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Topology
from ..base import Hit, rule
from .pair_hints import problem_hits


@rule("kv-heads[moriio-replicated]")
def moriio_replicated(topo: Topology) -> Iterator[Hit]:
    """MoRIIO read mode, heterogeneous TP, and the smaller TP does not replicate every KV head.

    vLLM 0.25.0 and later (moriio_connector.py
    validate_moriio_heterogeneous_tp_kv_heads) raise NotImplementedError
    "MoRIIO heterogeneous TP requires replicated KV heads on both prefill and
    decode" unless the model is MLA or min(prefill TP, decode TP) >= K. Before
    0.25.0 read mode needs equal TP anyway (tp-ratio[moriio]); write mode never
    runs this check (tp-ratio[moriio-write] covers it).

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: Qwen/Qwen3-235B-A22B
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 4
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 8
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.3-70B-Instruct
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 4
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 8
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
    """
    yield from problem_hits(topo, "kv-heads[moriio-replicated]")


@rule("kv-heads[nixl-prefill-replicated]")
def nixl_prefill_replicated(topo: Topology) -> Iterator[Hit]:
    """NIXL: prefill TP > decode TP and prefill TP > K, so prefill's KV heads are replicated and decode cannot split them.

    _validate_remote_agent_handshake asserts `not (tp_ratio < 0 and
    is_kv_replicated(remote))` (a bare AssertionError), by release: 0.14.0 -
    0.19.1 with prefill TP >= K and no exemption (MLA included); 0.20.0 -
    0.20.2 prefill TP > K, Mamba/SSM exempt; from 0.21.0 MLA is exempt too.
    Before 0.14.0 prefill TP > decode TP is a tp-ratio[nixl] error. With
    NixlPushConnector the writer is prefill, so the mirror applies: decode TP
    > prefill TP and decode TP > K.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.3-70B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 8}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.3-70B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 16}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}
    """
    yield from problem_hits(topo, "kv-heads[nixl-prefill-replicated]")

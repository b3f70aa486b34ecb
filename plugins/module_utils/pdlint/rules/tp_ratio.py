"""tp-ratio[*]: prefill and decode TP sizes each connector can pair."""
from __future__ import annotations

from collections.abc import Iterator

from ..model import Topology
from .base import Hit, rule
from .pairs import problem_hits

@rule("tp-ratio[moriio]")
def moriio_ratio(topo: Topology) -> Iterator[Hit]:
    """MoRIIO: the larger TP is not a multiple of the smaller.

    vLLM 0.32.0 moriio_connector.py get_moriio_remote_tp_rank raises "local
    tp_size 6 must be a multiple of remote tp_size 4 for heterogeneous-TP P/D"
    on decode, and get_moriio_expected_ack_count raises on prefill when decode
    TP is not a whole multiple (the ack count D/P must be whole).

    PASS:

        all:
          vars:
            vllm_pd_deployment: r1
            vllm_model: deepseek-ai/DeepSeek-V3
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
            vllm_pd_deployment: r1
            vllm_model: deepseek-ai/DeepSeek-V3
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
              vllm_tensor_parallel_size: 6
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
    """
    yield from problem_hits(topo, "tp-ratio[moriio]")


@rule("tp-ratio[moriio-write]")
def moriio_write(topo: Topology) -> Iterator[Hit]:
    """MoRIIO write mode with prefill TP different from decode TP.

    vLLM 0.32.0 does not reject this, but in WRITE mode the decode scheduler
    notifies prefill ranks `range(decode TP)` and the producer sends write_done
    to the decode rank equal to its own TP rank (moriio_connector.py
    MoRIIOConnectorScheduler.update_state_after_alloc / moriio_engine.py
    MoRIIOWriter._execute_write_task), so ranks only line up
    when the TP sizes are equal: the transfer hangs. Use read mode for
    heterogeneous TP.

    PASS:

        all:
          vars: {vllm_pd_deployment: r1, vllm_model: deepseek-ai/DeepSeek-V3}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 8
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8000}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 8
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000}

    FAIL:

        all:
          vars: {vllm_pd_deployment: r1, vllm_model: deepseek-ai/DeepSeek-V3}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 4
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8000}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 8
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000}
    """
    yield from problem_hits(topo, "tp-ratio[moriio-write]")


@rule("tp-ratio[nixl]")
def nixl(topo: Topology) -> Iterator[Hit]:
    """NIXL: the larger TP is not a multiple of the smaller.

    vLLM 0.32.0 kv_connector/utils.py TransferTopology.tp_ratio asserts
    "Local tensor parallel size X is not divisible by remote tensor parallel
    size Y" (either direction is allowed when the ratio is whole).

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.3-70B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 2}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 8}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.3-70B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 6}
    """
    yield from problem_hits(topo, "tp-ratio[nixl]")


@rule("tp-ratio[mooncake]")
def mooncake(topo: Topology) -> Iterator[Hit]:
    """Mooncake: prefill and decode TP (or PP) the release cannot pair.

    0.13.0 - 0.15.x pair decode rank r with prefill rank r only and check
    nothing: unequal TP hangs or moves the wrong KV, and PP > 1 binds one
    sender port per TP rank for every stage (reported as errors vLLM does not
    detect). 0.16.0 - 0.18.x raise "Mooncake: Heterogeneous TP is not
    supported yet." and reject PP > 1 (until 0.23.0). From 0.19.0
    _get_tp_ratio allows either direction when the larger TP is a multiple of
    the smaller; but until 0.29.0 a GQA decode TP above the KV-head count,
    with prefill TP below decode TP and not replicating its KV (0.19.x: TP <
    K, 0.20.0+: TP <= K), fails every transfer in
    _validate_asymmetric_region_lengths (0.30.0 clamps both TPs to K).

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: Qwen/Qwen3-32B
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 4
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 2
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_consumer}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: Qwen/Qwen3-32B
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 4
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 6
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_consumer}
    """
    yield from problem_hits(topo, "tp-ratio[mooncake]")


@rule("tp-ratio[p2p-nccl]")
def p2p_nccl(topo: Topology) -> Iterator[Hit]:
    """P2pNccl: prefill and decode TP, or PP, differ.

    P2pNcclConnector (vLLM 0.9.2 - 0.23.0) sends from world rank r to the
    peer's kv_port + r, so the ranks line up only when TP and PP are equal
    (kv_connector/v1/p2p/p2p_nccl_connector.py). vLLM has no startup check:
    unequal shards raise NotImplementedError ("Currently, only symmetric TP is
    supported") at the first transfer, equal shards hang or move the wrong KV.
    From 0.24.0 the name is not registered (connector[unknown]) unless
    kv_connector_module_path loads it.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: Qwen/Qwen3-8B}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 2
              vllm_kv_transfer_config: {kv_connector: P2pNcclConnector, kv_role: kv_producer,
                                        kv_connector_module_path: my_connectors.p2p}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 2
              vllm_kv_transfer_config: {kv_connector: P2pNcclConnector, kv_role: kv_consumer,
                                        kv_connector_module_path: my_connectors.p2p}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: Qwen/Qwen3-8B}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: 2
              vllm_kv_transfer_config: {kv_connector: P2pNcclConnector, kv_role: kv_producer,
                                        kv_connector_module_path: my_connectors.p2p}
            d1:
              vllm_pd_role: decode
              vllm_tensor_parallel_size: 4
              vllm_kv_transfer_config: {kv_connector: P2pNcclConnector, kv_role: kv_consumer,
                                        kv_connector_module_path: my_connectors.p2p}
    """
    yield from problem_hits(topo, "tp-ratio[p2p-nccl]")

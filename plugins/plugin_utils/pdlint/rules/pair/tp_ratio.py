"""tp-ratio[*]: prefill and decode TP sizes each connector can pair."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Topology
from ..base import Hit, rule
from .pair_hints import problem_hits


@rule("tp-ratio[moriio]")
def moriio_ratio(topo: Topology) -> Iterator[Hit]:
    """MoRIIO read mode: the TP sizes do not pair.

    vLLM 0.25.0 and later (moriio_connector.py) map ranks on decode with
    get_moriio_remote_tp_rank ("local tp_size 6 must be a multiple of remote
    tp_size 4 for heterogeneous-TP P/D") and count release acks on prefill with
    get_moriio_expected_ack_count (decode TP / prefill TP must be whole).
    Before 0.25.0 there is no rank map: decode rank r reads prefill rank r, so
    any unequal TP is reported (vLLM does not check it; the transfer reads the
    wrong KV or hangs). Also reported: hybrid Mamba/KDA models with unequal TP
    (0.31.0+), and in 0.27.x prefill DP > 1 with TP > 1, whose handshake decode
    dials at a port the prefill rank does not listen on. The mode comes from
    VLLM_MORIIO_CONNECTOR_READ_MODE before 0.23.0, from
    kv_connector_extra_config.read_mode after.

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
    """MoRIIO write mode (the default): the TP sizes do not pair.

    Before vLLM 0.33.0 write mode only works with equal TP: a prefill rank
    writes its whole KV shard without mapping heads and sends write_done to
    the decode rank with its own TP rank (moriio_engine.py MoRIIOWriter).
    vLLM does not check this, except that from 0.27.0 the prefill handshake
    (get_moriio_remote_tp_rank) rejects TP sizes that are not multiples of each
    other. In 0.25.0 - 0.26.0 the handshake maps every prefill rank
    to decode rank 0 when the request carries no tp_size (write requests carry
    none: "rank collapse", reported for any prefill TP > 1). vLLM 0.33.0 maps
    ranks both ways
    (moriio_tp_mapping.py validate_write_tp_topology): one TP must be a
    multiple of the other and each must divide K or be a multiple of K (MLA
    exempt). Hybrid Mamba/KDA models cannot use write mode in 0.31.0 - 0.32.0.

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
              vllm_tensor_parallel_size: 6
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000}
    """
    yield from problem_hits(topo, "tp-ratio[moriio-write]")


@rule("tp-ratio[nixl]")
def nixl(topo: Topology) -> Iterator[Hit]:
    """NIXL: prefill and decode TP (or PP) sizes the release cannot pair.

    Checked with the release of the side that runs the handshake (decode in
    pull mode, prefill with NixlPushConnector):
    0.9.0 pairs rank r with rank r (unchecked: TP must be equal); 0.9.1 -
    0.13.0 only let decode read from a prefill TP that divides it (D < P is a
    ZeroDivisionError in 0.9.2 - 0.11.0, a divisibility assert otherwise);
    from 0.14.0 either side may be larger, by a whole ratio
    (TpKVTopology / TransferTopology.tp_ratio). Also reported: a GQA model with
    decode TP > K and a prefill TP whose KV is split (prefill TP < K, <= K in
    0.20.0 - 0.23.0; 0.9.1: any decode TP > K) fails the block-length assert
    until 0.24.0; Mamba/SSM models need equal TP in 0.18.0 - 0.19.1; PP > 1
    is unsupported before 0.26.0 (unchecked), and from 0.26.0 a decode with
    PP > 1 fails (NotImplementedError for kv_consumer; prefill PP > 1 needs
    NixlPushConnector until 0.29.0); from 0.31.0 a push prefill with PP > 1
    that routes by layer region (HMA on with sliding-window layers, or a
    block-outermost VLLM_KV_CACHE_LAYOUT) refuses a larger decode TP
    (NotImplementedError, MLA exempt). docs/rules-provenance.md lists the spans.

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
    PP from 0.24.0: the prefill matches its stage's layers by name in the
    asking decode stage (_align_transfer_regions), so until 0.29.0 a decode
    PP > 1 that differs from prefill PP fails every transfer (vLLM does not
    check it at start); 0.30.0 allows partial layers.

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

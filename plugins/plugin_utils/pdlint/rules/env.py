"""env[ignored]: environment variables the pinned release no longer reads."""
from __future__ import annotations

from collections.abc import Iterator

from ..topology.types import Topology
from ..vllm import moriio_config, registry, view
from .base import Hit, hit, rule


@rule("env[ignored]", "warning")
def ignored(topo: Topology) -> Iterator[Hit]:
    """vllm_env sets a variable the pinned vLLM release ignores.

    MoRIIO: vLLM 0.14.0 - 0.22.1 read VLLM_MORIIO_CONNECTOR_READ_MODE,
    VLLM_MORIIO_QP_PER_TRANSFER, VLLM_MORIIO_POST_BATCH_SIZE and
    VLLM_MORIIO_NUM_WORKERS; from 0.23.0 they are "deprecated and ignored"
    (moriio_common.py _warn_deprecated_env_vars) and the settings live in
    kv_connector_extra_config (read_mode, qp_per_transfer, post_batch_size,
    num_workers).

    PASS:

        all:
          vars: {vllm_pd_deployment: r1}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}

    FAIL:

        all:
          vars: {vllm_pd_deployment: r1}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_env: {VLLM_MORIIO_CONNECTOR_READ_MODE: "1"}
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8000}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000}
    """
    for inst in topo.instances:
        if view.kind(inst) not in ("moriio", None):
            continue
        release = registry.release(inst)
        for name, key in moriio_config.ignored_env(inst.env, release):
            yield hit(inst, (f"env.{name}",), f"{name} is ignored by vLLM {release} (read until 0.22.1)",
                      f"set kv_connector_extra_config.{key} instead")

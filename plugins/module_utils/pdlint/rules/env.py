"""env[ignored]: environment variables the pinned release no longer reads."""
from __future__ import annotations

from collections.abc import Iterator

from ..vllm import moriio
from ..vllm import registry as connectors
from ..model import Topology
from .base import Hit, hit, rule

_MOVED = {"VLLM_MORIIO_CONNECTOR_READ_MODE": "read_mode", "VLLM_MORIIO_QP_PER_TRANSFER": "qp_per_transfer",
          "VLLM_MORIIO_POST_BATCH_SIZE": "post_batch_size", "VLLM_MORIIO_NUM_WORKERS": "num_workers"}


@rule("env[ignored]", "warning")
def ignored(topo: Topology) -> Iterator[Hit]:
    """vllm_env sets a variable the pinned vLLM release ignores.

    vLLM 0.32.0 moriio_common.py _warn_deprecated_env_vars: the MoRIIO
    read-mode and queue-pair variables are "deprecated and ignored"; their
    settings moved into kv_connector_extra_config.

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
        for name in moriio.IGNORED_ENV:
            if name in inst.env and connectors.kind(inst) in ("moriio", None):
                yield hit(inst, (f"env.{name}",), f"{name} is ignored by vLLM {inst.version}",
                          f"set kv_connector_extra_config.{_MOVED[name]} instead")

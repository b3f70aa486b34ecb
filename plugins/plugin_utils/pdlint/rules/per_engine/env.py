"""env[ignored], env[invalid]: environment variables the pinned release no longer reads, or cannot read."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology
from ...vllm import env_values
from ...vllm.connectors import composite, registry, view
from ...vllm.connectors.moriio import config as moriio_config
from ..base import Hit, each_body, hit, rule


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
    for inst, (name, message, fix) in each_body(topo, _ignored):  # the engine's own settings: once per body
        yield hit(inst, (f"env.{name}",), message, fix)


def _ignored(inst: Instance) -> Iterator[tuple[str, str, str]]:
    if view.kind(inst) not in ("moriio", None):
        return
    release = registry.release(inst)
    for name, key in moriio_config.ignored_env(inst.env, release):
        yield (name, f"{name} is ignored by vLLM {release} (read until 0.22.1)",
               f"set kv_connector_extra_config.{key} instead")


@rule("env[invalid]")
def invalid(topo: Topology) -> Iterator[Hit]:
    """vllm_env sets a number vLLM reads with int() to a value it cannot read, or a port it cannot bind.

    vllm/envs.py reads VLLM_NIXL_SIDE_CHANNEL_PORT (NIXL, 0.9.0+),
    VLLM_MOONCAKE_BOOTSTRAP_PORT (Mooncake, 0.13.0+), VLLM_USE_V1 (every
    engine, 0.8.5 - 0.11.0) and the MoRIIO QP_PER_TRANSFER, POST_BATCH_SIZE and
    NUM_WORKERS variables (0.14.0 - 0.22.1) with `int(os.getenv(...))` when
    the connector first asks: "5600-5607" or "5600.0" raise ValueError and the
    engine does not start; a port outside 1 - 65535 cannot be bound. Only the
    variables the instance's connector (or a MultiConnector child) reads in
    the pinned release count.

    PASS:

        all:
          vars: {vllm_pd_deployment: r1, vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {VLLM_NIXL_SIDE_CHANNEL_PORT: "5600"}}
            d1: {vllm_pd_role: decode, vllm_env: {VLLM_NIXL_SIDE_CHANNEL_PORT: 5610}}

    FAIL:

        all:
          vars: {vllm_pd_deployment: r1, vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {VLLM_NIXL_SIDE_CHANNEL_PORT: "5600-5607"}}
            d1: {vllm_pd_role: decode}
    """
    for inst, (name, message, fix) in each_body(topo, _invalid):  # the engine's own settings: once per body
        yield hit(inst, (f"env.{name}",), message, fix)


def _invalid(inst: Instance) -> Iterator[tuple[str, str, str]]:
    if not inst.env:
        return iter(())
    kinds = frozenset(registry.kind_of(v.connector) for v in composite.views(inst))
    return iter(env_values.problems(inst.env, kinds, registry.release(inst)))

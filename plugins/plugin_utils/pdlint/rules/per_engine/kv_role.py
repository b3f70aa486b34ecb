"""kv-role[*]: kv_role must be set, valid, and match the side for connectors that act on it."""
from __future__ import annotations

from collections.abc import Iterator

from ...contract import KV_ROLES
from ...topology.types import Instance, Topology
from ...vllm.connectors import composite, kvconfig, registry, view
from ...vllm.releases import Release
from ...yaml_text import yaml_text
from ..base import Hit, each_body, hit, rule

_WRONG = {"prefill": "kv_consumer", "decode": "kv_producer"}
_RIGHT = {"prefill": "kv_producer", "decode": "kv_consumer"}


@rule("kv-role[missing]")
def missing(topo: Topology) -> Iterator[Hit]:
    """kv_connector is set without kv_role.

    Every release refuses to start: KVTransferConfig.__post_init__ raises
    "Please specify kv_disagg_role when kv_connector is set" (0.8.5 - 0.11.0)
    or "Please specify kv_role when kv_connector is set" (0.11.1+).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}
    """
    for inst, release in each_body(topo, _unset):  # the engine's own settings: once per body
        # kv_role: null is written somewhere: point at it; left out, at the connector it is missing from
        yield hit(inst, ("kv_role", "kv_connector", "kv_transfer_config"), "kv_connector is set but kv_role is not: "
                  f"vLLM {release} refuses to start (\"{kvconfig.ROLE_REQUIRED.at(release)}\")",
                  f"add kv_role: {_RIGHT[inst.role]} to vllm_kv_transfer_config")


def _unset(inst: Instance) -> tuple[Release, ...]:
    if inst.connector and inst.kv_role is None and inst.knows("kv_role", "kv_connector", "version"):
        return (registry.release(inst),)
    return ()


@rule("kv-role[invalid]")
def invalid(topo: Topology) -> Iterator[Hit]:
    """kv_role is not kv_producer, kv_consumer or kv_both.

    The three values are the same in every release. 0.8.5 - 0.9.0.1 raise
    "Unsupported kv_role" in KVTransferConfig's post-init; from 0.9.1 the CLI
    validates the KVRole Literal first (pydantic literal_error).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_producter}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}
    """
    for inst, release in each_body(topo, _not_a_role):  # the engine's own settings: once per body
        yield hit(inst, ("kv_role",), f"kv_role {yaml_text(inst.kv_role)} is not one of {', '.join(KV_ROLES)}: "
                  f"vLLM {release} refuses to start ({kvconfig.ROLE_INVALID.at(release)})",
                  f"use kv_role: {_RIGHT[inst.role]}")


@rule("kv-role[side]")
def side(topo: Topology) -> Iterator[Hit]:
    """Prefill is kv_consumer or decode is kv_producer, for a connector that acts on kv_role.

    MoRIIO, Mooncake, P2pNccl and LMCache act on kv_role in every release
    that has them: Mooncake's scheduler asserts the decode path is not a
    kv_producer and a kv_consumer never starts its sender (0.13.0 - 0.15.x
    `kv_role != "kv_consumer"`, 0.16.0+ `is_kv_consumer`); P2pNccl sends only
    as a producer. NIXL decides each request's direction from
    kv_transfer_params and ignores kv_role here.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_consumer}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_consumer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_consumer}
    """
    for found, _unused in each_body(topo, _wrong_side):  # the engine's own settings: once per body
        inst = composite.effective(found)  # a composite's transfer child acts on its own kv_role
        yield hit(inst, ("kv_role",), f"{inst.role} instance has kv_role {inst.kv_role}, but "
                  f"{inst.connector} acts on kv_role", f"use kv_role: {_RIGHT[inst.role]}")


@rule("kv-role[moriio-explicit]")
def moriio_explicit(topo: Topology) -> Iterator[Hit]:
    """MoRIIO with kv_role kv_both.

    In every release with MoRIIO (0.14.0 - 0.33.0) its scheduler treats
    kv_both as a consumer (`kv_role == "kv_producer"`) while its worker treats
    it as a producer (`is_kv_producer`), through one process-wide role
    (moriio_connector.py, MoRIIOConnectorScheduler.__init__ and
    MoRIIOConnectorWorker.__init__).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
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

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_both
                kv_connector_extra_config: {http_port: 8000}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000}
    """
    for found, _unused in each_body(topo, _moriio_both):  # the engine's own settings: once per body
        inst = composite.effective(found)
        yield hit(inst, ("kv_role",), "MoRIIO with kv_role kv_both: its scheduler acts as consumer and its "
                  "worker as producer", f"use kv_role: {_RIGHT[inst.role]}")


def _not_a_role(inst: Instance) -> tuple[Release, ...]:
    return (registry.release(inst),) if inst.kv_role is not None and inst.kv_role not in KV_ROLES else ()


def _wrong_side(inst: Instance) -> tuple[bool, ...]:
    view_of = composite.effective(inst)
    return (True,) if view.kind(view_of) in registry.ROLE_AWARE and view_of.kv_role == _WRONG[view_of.role] else ()


def _moriio_both(inst: Instance) -> tuple[bool, ...]:
    view_of = composite.effective(inst)
    return (True,) if view.kind(view_of) == "moriio" and view_of.kv_role == "kv_both" else ()

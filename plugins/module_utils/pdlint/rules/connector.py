"""connector[*]: the connector must exist in the release and get the settings it reads."""
from __future__ import annotations

from collections.abc import Iterator

from ..vllm import moriio_config
from ..vllm import registry as connectors
from ..vllm.releases import DEFAULT, resolve
from ..model import Instance, Topology
from .base import Hit, hit, rule, words

_MORIIO_INTS = ("http_port", "handshake_port", "notify_port", "proxy_ping_port",
                "qp_per_transfer", "post_batch_size", "num_workers")
_MORIIO_TIMEOUTS = ("transfer_timeout", "defer_timeout", "recv_abort_timeout")
# extra_config keys whose bad values connector[config] reports (with vLLM's reason), so the schema rule leaves them.
CHECKED_EXTRA = frozenset((*_MORIIO_INTS, *_MORIIO_TIMEOUTS, "backend", "read_mode", "enforce_handshake_compat",
                           "bootstrap_server_address"))


@rule("connector[unknown]")
def unknown(topo: Topology) -> Iterator[Hit]:
    """kv_connector is not registered in the pinned vLLM release and no kv_connector_module_path is given.

    vLLM 0.32.0 raises `ValueError: Unsupported connector type: NAME`
    (kv_connector/factory.py, KVConnectorFactory.get_connector_class). Names are
    case-sensitive; P2pNcclConnector is gone from 0.32.0.

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
              vllm_kv_transfer_config: {kv_connector: NIXLConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NIXLConnector, kv_role: kv_consumer}
    """
    for inst in topo.instances:
        name = inst.connector
        if not name or not isinstance(name, str) or inst.module_path or connectors.registered(name):
            continue
        close = connectors.suggest(name)
        yield hit(inst, ("kv_connector",), f"kv_connector {name!r} is not registered in vLLM {inst.version}",
                  f"did you mean {words(close)}?" if close else
                  "use a registered connector, or set kv_connector_module_path to the module that defines it")


def _moriio_problems(inst: Instance) -> Iterator[tuple[str, str, str]]:
    """(extra key, message, hint) for each setting MoRIIOConnector of the instance's release cannot use."""
    release = resolve(inst.version).release or DEFAULT
    return moriio_config.config_problems(inst.extra, release, inst.port)


def _other_problems(inst: Instance) -> Iterator[tuple[str, str, str]]:
    kind = connectors.kind(inst)
    extra = inst.extra
    if inst.module_path == "":
        yield ("kv_connector_module_path", "kv_connector_module_path cannot be an empty string",
               "remove kv_connector_module_path or name the module")
    if kind == "nixl" and "enforce_handshake_compat" in extra and not isinstance(extra["enforce_handshake_compat"], bool):
        value = extra["enforce_handshake_compat"]
        yield ("extra.enforce_handshake_compat",
               f"NIXL enforce_handshake_compat {value!r} is not a boolean; vLLM tests its truthiness, so "
               f"{value!r} means {bool(value)}", "write enforce_handshake_compat: true or false (unquoted)")
    if kind == "mooncake" and extra.get("bootstrap_server_address") is not None:
        address = str(extra["bootstrap_server_address"])
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            yield ("extra.bootstrap_server_address",
                   f"Mooncake bootstrap_server_address {address!r} must specify a host and port",
                   "write it as host:port")


@rule("connector[config]")
def config(topo: Topology) -> Iterator[Hit]:
    """A kv_connector_extra_config setting the connector reads is missing or unusable.

    MoRIIO (moriio_common.py MoRIIOConfig.from_vllm_config) reads `http_port`
    unconditionally in every release, and `proxy_ip` and `proxy_ping_port` too
    until 0.27.1 (KeyError); it int()-converts its port and count settings;
    `backend` must be rdma or xgmi (0.22.0+); timeouts must be numbers
    (0.23.0+) and finite and positive (0.31.0+). Mooncake's bootstrap_server_address
    must be host:port; NIXL tests enforce_handshake_compat for truthiness (the
    string "false" enforces it).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
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
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {read_mode: "true"}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_consumer
                kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
    """
    for inst in topo.instances:
        if not inst.knows("kv_connector", "kv_connector_extra_config"):
            continue
        problems = _moriio_problems(inst) if connectors.kind(inst) == "moriio" else iter(())
        for where, message, fix in (*problems, *_other_problems(inst)):
            yield hit(inst, (where, "kv_connector_extra_config", "kv_connector"), message, fix)

"""The kv_connector_extra_config keys each connector reads, with type and default, as the schema describes them.

Read from the `kv_connector_extra_config.get(...)` / `get_from_extra_config(...)` / `[...]` calls of
vLLM 0.32.0 (P2pNccl: 0.23.0, its last release; it is gone since 0.24.0). docs/rules-provenance.md
cites the files.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ...contract import INT_STRING, PORT, int_schema


@dataclasses.dataclass(frozen=True)
class Key:
    """One extra_config key: its JSON Schema, vLLM's default and what it does."""

    name: str
    schema: dict[str, Any]
    default: Any
    description: str


@dataclasses.dataclass(frozen=True)
class ConnectorKeys:
    """The keys one connector family reads; closed: vLLM reads no other key, so any other is a typo."""

    label: str
    classes: tuple[str, ...]
    source: str
    keys: tuple[Key, ...]
    closed: bool = True
    required: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()  # key patterns passed on wholesale (LMCache's "lmcache.*")


_INT = {"anyOf": [{"type": "integer"}, {"title": "an integer written as a string", "type": "string", "pattern": r"^\s*-?[0-9]+\s*$"}]}  # vLLM int()s these
_DIGITS = {"title": "digits, as a string", "type": "string", "pattern": INT_STRING}  # used as a string (concatenated, put in os.environ)
_NUMBER = {"anyOf": [{"type": "number"}, {"title": "a number written as a string", "type": "string", "pattern": r"^\s*[0-9.eE+-]+\s*$"}]}
_POSITIVE = {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {
    "title": "a positive number written as a string", "type": "string", "pattern": r"^\s*[0-9.eE+]+\s*$"}]}
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_READ_MODE = {"anyOf": [{"type": "boolean"}, {"enum": [0, 1]},
                        {"title": "'true', 'false', '1' or '0' (any case)", "type": "string",
                         "pattern": r"^\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[01])\s*$"}]}

MORIIO = ConnectorKeys("MoRIIO", ("MoRIIOConnector",), "v1/moriio/moriio_common.py MoRIIOConfig.from_vllm_config", (
    Key("http_port", PORT, None, "Port the proxy reaches this instance's API on; must equal vllm_port. Required "
        "(KeyError at worker start)."),
    Key("handshake_port", PORT, "6301", "Handshake listener base port; each worker adds its offset."),
    Key("notify_port", PORT, "61005", "Notify listener base port; each worker adds its offset."),
    Key("read_mode", _READ_MODE, "false", "READ mode when 'true' or '1' (any case); anything else is WRITE."),
    Key("backend", {"title": "rdma or xgmi (any case)", "type": "string", "pattern": "^([Rr][Dd][Mm][Aa]|[Xx][Gg][Mm][Ii])$"}, "rdma",
        "Transfer backend: rdma or xgmi (any case)."),
    Key("host_ip", _STR, "the host's IP", "IP advertised to the peer."),
    Key("proxy_ip", _STR, "", "IP of the routing proxy."),
    Key("proxy_ping_port", int_schema(0, 65535), 0, "Port of the proxy's heartbeat listener."),
    Key("transfer_timeout", _POSITIVE, 30.0, "Seconds before a transfer is failed (finite, > 0)."),
    Key("defer_timeout", _POSITIVE, 60.0, "Seconds a deferred request waits (finite, > 0)."),
    Key("recv_abort_timeout", _POSITIVE, 120.0, "Seconds before a receive is aborted (finite, > 0)."),
    Key("qp_per_transfer", _INT, 1, "RDMA queue pairs per transfer."),
    Key("post_batch_size", _INT, -1, "Work requests posted per batch (-1: all)."),
    Key("num_workers", _INT, 1, "Transfer worker threads."),
), required=("http_port",))

NIXL = ConnectorKeys("NIXL", ("NixlConnector", "NixlPullConnector", "NixlPushConnector"),
                     "v1/nixl/base_worker.py, base_scheduler.py, push_scheduler.py, connector.py", (
    Key("backends", {"type": "array", "items": _STR}, ["UCX"], "NIXL backends, e.g. [UCX] or [LIBFABRIC]."),
    Key("enforce_handshake_compat", _BOOL, True, "Compare the compatibility hash at handshake (tested for "
        "truthiness: the string 'false' still enforces)."),
    Key("num_threads", _INT, 4, "NIXL transfer threads."),
    Key("kv_lease_duration", _INT, 30, "Seconds a prefill keeps blocks leased for decode."),
    Key("bidirectional_kv_xfer", _BOOL, False, "Transfer KV both ways."),
    Key("decoder_kv_blocks_ttl", _INT, 480, "Seconds decode keeps received blocks."),
    Key("kv_recompute_threshold", _INT, 64, "Tokens below which decode recomputes instead of transferring."),
    Key("engine_ttl", _NUMBER, 3600.0, "Seconds a remote engine's metadata is cached."),
    Key("push_registration_timeout", _NUMBER, "decoder_kv_blocks_ttl", "NixlPushConnector registration timeout."),
))

MOONCAKE = ConnectorKeys("Mooncake", ("MooncakeConnector",), "v1/mooncake/mooncake_connector.py", (
    Key("num_workers", _INT, 10, "Sender worker threads."),
    Key("mooncake_protocol", _STR, "rdma", "Mooncake transfer engine protocol (rdma, tcp, ...)."),
    Key("device_name", _STR, "", "RDMA device name(s)."),
    Key("bootstrap_server_address", {"title": "host:port", "type": "string", "pattern": r"^.+:[0-9]+$"}, None,
        "host:port of an external bootstrap server (else prefill starts its own on VLLM_MOONCAKE_BOOTSTRAP_PORT)."),
))

P2P_NCCL = ConnectorKeys("P2pNccl (vLLM <= 0.23)", ("P2pNcclConnector",),
                         "0.23.0 v1/p2p/p2p_nccl_engine.py P2pNcclEngine.__init__ (gone since 0.24.0)", (
    Key("http_port", PORT, None, "Port the proxy reaches this instance's API on; must equal vllm_port. Required when "
        "proxy_ip and proxy_port are set."),
    Key("proxy_ip", _STR, "", "IP of the proxy."),
    Key("proxy_port", _DIGITS, "", "Port of the proxy, as a string (vLLM concatenates it)."),
    Key("send_type", {"enum": ["PUT", "GET", "PUT_ASYNC"]}, "PUT_ASYNC", "How prefill sends KV."),
    Key("nccl_num_channels", _DIGITS, "8", "NCCL_MAX_NCHANNELS for the KV communicators, as a string (put in os.environ)."),
    Key("mem_pool_size_gb", _NUMBER, 32, "GiB of the receive tensor memory pool."),
))

LMCACHE = ConnectorKeys("LMCache", ("LMCacheConnectorV1", "LMCacheMPConnector"),
                        "v1/lmcache_connector.py, lmcache_mp_connector.py, lmcache_integration/vllm_v1_adapter.py", (
    Key("use_native", _BOOL, False, "Use vLLM's in-tree LMCache adapter instead of the lmcache package's."),
    Key("use_layerwise", _BOOL, False, "Layer-wise transfer (needs piecewise CUDA graphs)."),
    Key("skip_last_n_tokens", _INT, 0, "Tokens at the end of a prompt that are not stored."),
    Key("discard_partial_chunks", _BOOL, False, "Drop a trailing partial chunk."),
    Key("lmcache.mp.host", _STR, "tcp://localhost", "LMCacheMPConnector: server host."),
    Key("lmcache.mp.port", PORT, 5555, "LMCacheMPConnector: server port."),
    Key("lmcache.mp.mq_timeout", _NUMBER, 300.0, "LMCacheMPConnector: message queue timeout (s)."),
    Key("lmcache.mp.heartbeat_interval", _NUMBER, 10.0, "LMCacheMPConnector: heartbeat interval (s)."),
), closed=False, patterns=(r"^lmcache\.",))  # the lmcache package reads keys vLLM does not list

CONNECTORS: tuple[ConnectorKeys, ...] = (MORIIO, NIXL, MOONCAKE, P2P_NCCL, LMCACHE)


MORIIO_INTS = ("http_port", "handshake_port", "notify_port", "proxy_ping_port",
               "qp_per_transfer", "post_batch_size", "num_workers")
MORIIO_TIMEOUTS = ("transfer_timeout", "defer_timeout", "recv_abort_timeout")
# extra_config keys whose bad values connector[config] reports (with vLLM's reason), so the schema rule leaves them.
CHECKED_EXTRA = frozenset((*MORIIO_INTS, *MORIIO_TIMEOUTS, "backend", "read_mode", "enforce_handshake_compat",
                           "bootstrap_server_address"))

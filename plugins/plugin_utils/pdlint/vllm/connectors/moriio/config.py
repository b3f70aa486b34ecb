"""MoRIIO settings and listeners, release by release: extra-config keys, env variables, port offsets.

Source: vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_common.py
(MoRIIOConfig.from_vllm_config, get_moriio_mode, _warn_deprecated_env_vars,
get_port_offset, fold_local_rank) and moriio_connector.py
(MoRIIOConnector._set_port_defaults, MoRIIOConnectorWorker.__init__).
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from ...history import history
from ...releases import Release, Timeline
from . import MODE, port_offset

_COMMON = "kv_connector/v1/moriio/moriio_common.py"
_FROM = f"{_COMMON} MoRIIOConfig.from_vllm_config"

DEFAULT_HANDSHAKE_PORT = 6301  # MoRIIOConstants.DEFAULT_HANDSHAKE_PORT, the same in every release
DEFAULT_NOTIFY_PORT = 61005
# moriio_common._DEPRECATED_ENV_VARS (0.23.0+): the variable and the extra_config key that replaced it.
MOVED_ENV = {"VLLM_MORIIO_CONNECTOR_READ_MODE": "read_mode", "VLLM_MORIIO_QP_PER_TRANSFER": "qp_per_transfer",
             "VLLM_MORIIO_POST_BATCH_SIZE": "post_batch_size", "VLLM_MORIIO_NUM_WORKERS": "num_workers"}
IGNORED_ENV = tuple(MOVED_ENV)

ENV_IGNORED = history("env[ignored]", Timeline(
    "MoRIIO environment variables",
    ("0.14.0", (), "vllm/envs.py VLLM_MORIIO_*; moriio_common.py get_moriio_mode",
     "VLLM_MORIIO_CONNECTOR_READ_MODE, _QP_PER_TRANSFER, _POST_BATCH_SIZE, _NUM_WORKERS are read"),
    ("0.23.0", IGNORED_ENV, f"{_COMMON} _warn_deprecated_env_vars",
     "those four are \"deprecated and ignored\": kv_connector_extra_config read_mode, qp_per_transfer, "
     "post_batch_size and num_workers replace them"),
))
REQUIRED = history("connector[config]", Timeline(
    "MoRIIO required kv_connector_extra_config keys",
    ("0.14.0", ("proxy_ip", "proxy_ping_port", "http_port"), _FROM,
     "proxy_ip, proxy_ping_port and http_port are read with [] (KeyError at worker start)"),
    ("0.28.0", ("http_port",), _FROM, "http_port only; proxy_ip defaults to \"\" and proxy_ping_port to 0"),
))
# Keys the release reads from kv_connector_extra_config besides the required ones and the two port bases.
_READS = Timeline(
    "MoRIIO optional kv_connector_extra_config keys",
    ("0.14.0", (), _FROM, "no optional keys"),
    ("0.22.0", ("backend",), _FROM, "+ backend (rdma or xgmi)"),
    ("0.23.0", ("backend", "read_mode", "qp_per_transfer", "post_batch_size", "num_workers", "transfer_timeout",
                "defer_timeout"), _FROM, "+ read_mode, qp_per_transfer, post_batch_size, num_workers, timeouts"),
    ("0.24.0", ("backend", "read_mode", "qp_per_transfer", "post_batch_size", "num_workers", "transfer_timeout",
                "defer_timeout", "host_ip"), f"{_COMMON} resolve_host_ip", "+ host_ip"),
    ("0.31.0", ("backend", "read_mode", "qp_per_transfer", "post_batch_size", "num_workers", "transfer_timeout",
                "defer_timeout", "host_ip", "recv_abort_timeout"), _FROM, "+ recv_abort_timeout"),
)
POSITIVE_TIMEOUTS = history("connector[config]", Timeline(
    "MoRIIO timeout validation",
    ("0.14.0", False, _FROM, "timeouts are float()-converted only (from 0.23.0)"),
    ("0.31.0", True, f"{_COMMON} _positive_finite_timeout", "timeouts must be finite and greater than zero"),
))
LISTEN_DP = history("port[collision]", Timeline(
    "MoRIIO listener DP rank (offset: DP rank + TP rank, tp_size never passed)",
    ("0.14.0", "global", f"{_FROM} get_port_offset(data_parallel_rank, tp_rank)",
     "handshake and notify listeners bind base + global DP rank + TP rank"),
    ("0.28.0", "local", f"{_FROM} fold_local_rank(data_parallel_rank, data_parallel_size_local)",
     "listeners bind base + pod-local DP rank + TP rank"),
))
# Two workers of one engine on one port: the second's listener thread fails its ZMQ bind, and register_kv_caches
# waits on an event only that thread sets (moriio_connector.py MoRIIOConnectorWorker.register_kv_caches,
# `ready_event.wait()`; _moriio_handshake_listener, `ready_event.set()` after the bind), 0.14.0 - 0.33.0.
SELF_COLLISION = history("port[collision]", Timeline(
    "MoRIIO workers of one engine on one listener port",
    ("0.14.0", ("vLLM does not detect it: the second worker's listener thread fails its ZMQ bind; on the "
                "handshake port its register_kv_caches then waits forever on ready_event (a start-up hang)"),
     "moriio_connector.py MoRIIOConnectorWorker.register_kv_caches (ready_event.wait()), _moriio_handshake_listener",
     "start-up hang, no error"),
))
_INTS = ("http_port", "handshake_port", "notify_port", "proxy_ping_port", "qp_per_transfer", "post_batch_size",
         "num_workers")
_TIMEOUTS = ("transfer_timeout", "defer_timeout", "recv_abort_timeout")


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def reads(release: Release) -> frozenset[str]:
    """Every kv_connector_extra_config key MoRIIO reads in release."""
    return frozenset((*_READS.at(release), *REQUIRED.at(release), "handshake_port", "notify_port", "proxy_ip",
                      "proxy_ping_port"))


def config_problems(extra: Mapping[str, Any], release: Release, api_port: int | None) -> Iterator[tuple[str, str, str]]:
    """(extra key, message, hint) for each kv_connector_extra_config setting release cannot use."""
    read = reads(release)
    for key in REQUIRED.at(release):
        if key not in extra:
            api = f"the instance's API port ({api_port})" if api_port is not None else "the port the proxy reaches"
            fix = f"set http_port to {api}" if key == "http_port" else \
                f"set {key} (vLLM {release} requires it; optional from 0.28.0)"
            yield ("kv_connector_extra_config", f"MoRIIO in vLLM {release} reads kv_connector_extra_config"
                   f"['{key}'] unconditionally (KeyError at worker start)", fix)
    for key in _INTS:
        if key in read and key in extra and extra[key] not in (None, "") and _as_int(extra[key]) is None:
            yield (f"extra.{key}", f"MoRIIO {key} {extra[key]!r} is not an integer (vLLM {release} calls int() on it)",
                   f"write {key} as a number")
    backend = extra.get("backend")
    if "backend" in read and backend is not None and str(backend).lower() not in ("rdma", "xgmi"):
        yield ("extra.backend", f"MoRIIO backend {backend!r} must be 'rdma' or 'xgmi'", "use backend: rdma")
    for key in _TIMEOUTS:
        if key in read and key in extra and not _timeout_ok(extra[key], POSITIVE_TIMEOUTS.at(release)):
            need = "finite and greater than zero" if POSITIVE_TIMEOUTS.at(release) else "a number"
            yield (f"extra.{key}", f"MoRIIO {key} {extra[key]!r} must be {need} (vLLM {release})",
                   f"set {key} to a positive number of seconds")
    mode = extra.get("read_mode")
    known = ("true", "1", "false", "0")
    if mode is not None and MODE.at(release) == "extra" and str(mode).lower().strip() not in known:
        yield ("extra.read_mode", f"MoRIIO read_mode {mode!r} is neither true nor 1, so vLLM runs WRITE mode",
               "write read_mode: true (READ) or false (WRITE)")


def _timeout_ok(value: Any, positive: bool) -> bool:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(number) and number > 0 if positive else True


def ignored_env(env: Mapping[str, Any], release: Release) -> Iterator[tuple[str, str]]:
    """(variable, the extra_config key that replaced it) for each MoRIIO variable release ignores."""
    for name in ENV_IGNORED.at(release):
        if name in env:
            yield name, MOVED_ENV[name]


def listeners(release: Release, dp_start: int, dp_local: int, tp: int) -> Iterator[tuple[int, int, int]]:
    """(port offset, DP rank, TP rank) of each worker's handshake/notify listener on one host."""
    for i in range(dp_local):
        dp = dp_start + i if LISTEN_DP.at(release) == "global" else (dp_start + i) % dp_local  # fold_local_rank
        for tp_rank in range(tp):
            yield port_offset(dp, tp_rank), dp, tp_rank

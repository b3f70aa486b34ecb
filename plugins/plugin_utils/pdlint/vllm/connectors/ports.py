"""The ports each instance binds on its host, per connector and release (see docs/rules-provenance.md)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ...topology.types import Instance
from . import composite, mooncake, registry
from .moriio import config as moriio_config
from .nixl import channel as nixl_channel


@dataclasses.dataclass(frozen=True)
class Bind:
    port: int
    what: str
    field: str  # the variable that sets it, for the finding's origin
    kind: str = ""  # the connector family whose listener it is (registry.kind_of), "dynamo"; "" for the API port


def _as_port(value: object, default: int) -> int | None:
    if value in (None, "", 0):  # MoRIIO _set_port_defaults replaces any falsy value
        return default
    try:
        return int(str(value))
    except ValueError:
        return None


def api_port(inst: Instance) -> int | None:
    """The port vLLM's HTTP API server binds, None for an engine without one: `vllm_port: null` (a headless
    worker), or a Dynamo worker: `python -m dynamo.vllm` builds the engine alone (ai-dynamo/dynamo
    components/src/dynamo/vllm/main.py; args.py parse_args has only AsyncEngineArgs.add_cli_args, no --port), the
    HTTP ingress being the separate `python -m dynamo.frontend`, so a Dynamo worker's vllm_port binds nothing."""
    return None if inst.launcher == "dynamo" else inst.port


def dynamo_system_port(inst: Instance) -> int | None:
    """The port of a Dynamo worker's system status server (/health, /metrics), None when it binds none.

    ai-dynamo/dynamo lib/runtime/src/config.rs RuntimeConfig: system_port from DYN_SYSTEM_PORT, default -1;
    system_server_enabled() is `system_port >= 0`, and 0 binds a random free port (never a fixed collision), so
    only a positive DYN_SYSTEM_PORT is a listener pdlint can place (on DYN_SYSTEM_HOST, default 0.0.0.0)."""
    if inst.launcher != "dynamo":
        return None
    port = registry.env_int(inst, "DYN_SYSTEM_PORT", -1)
    return port if port is not None and port > 0 else None


def binds(inst: Instance) -> Iterator[Bind]:
    """Every TCP port the instance listens on (one entry per listener, repeats kept)."""
    if inst.node_rank != 0:
        return  # the API server and the engine-core listeners live on the engine's first node
    port = api_port(inst)
    if port is not None:
        yield Bind(port, "API port", "port")
    system = dynamo_system_port(inst)
    if system is not None:
        yield Bind(system, "Dynamo system status server", "env.DYN_SYSTEM_PORT", "dynamo")
    for view in composite.views(inst):  # a composite binds the ports of every child
        yield from _connector(view)


def _connector(inst: Instance) -> Iterator[Bind]:
    """The listeners of the one connector inst runs."""
    kind = registry.registry_kind(inst)
    if kind == "nixl":
        # Per release (nixl_channel.SIDE_CHANNEL): per worker before 0.11.1, then one listener per engine core.
        release = registry.release(inst)
        base = registry.env_int(inst, "VLLM_NIXL_SIDE_CHANNEL_PORT", nixl_channel.default_side_channel_port(release))
        if base is not None:
            for port, what in nixl_channel.side_channel_ports(release, base, inst.dp_start, inst.dp_local, inst.tp):
                yield Bind(port, what, "env.VLLM_NIXL_SIDE_CHANNEL_PORT", "nixl")
    elif kind == "moriio":
        # moriio_config.listeners: base + DP rank + TP rank (global DP rank before 0.28.0, pod-local after);
        # MoRIIO ignores PP, so every PP stage binds the same ports.
        release = registry.release(inst)
        for key, default in (("handshake_port", moriio_config.DEFAULT_HANDSHAKE_PORT),
                             ("notify_port", moriio_config.DEFAULT_NOTIFY_PORT)):
            base = _as_port(inst.extra.get(key), default)
            if base is None:
                continue
            for stage in range(inst.pp):
                for offset, dp, tp_rank in moriio_config.listeners(release, inst.dp_start, inst.dp_local, inst.tp):
                    yield Bind(base + offset, f"MoRIIO {key.split('_', maxsplit=1)[0]} (DP {dp}, TP {tp_rank}, PP {stage})",
                               f"extra.{key}", "moriio")
    elif kind == "mooncake":
        yield from _mooncake(inst)
    elif kind == "p2p-nccl":
        # p2p_nccl_engine.py P2pNcclEngine.__init__ (0.9.2 - 0.23.0): kv_port + world rank, on every rank.
        base = inst.kv_port if inst.kv_port is not None else registry.P2P_KV_PORT
        for rank in range(inst.tp * inst.pp * inst.dp_local):
            yield Bind(base + rank, f"P2pNccl kv_port (rank {rank})", "kv_port", "p2p-nccl")


def _mooncake(inst: Instance) -> Iterator[Bind]:
    """Mooncake's listeners on a prefill (non-consumer) engine: per worker before 0.16.0, one bootstrap server after."""
    if inst.kv_role == "kv_consumer":
        return  # `if not self.is_kv_consumer` (kv_role != "kv_consumer" in 0.13.0 - 0.15.x): kv_both binds too
    release = registry.release(inst)
    port = registry.env_int(inst, "VLLM_MOONCAKE_BOOTSTRAP_PORT", registry.MOONCAKE_BOOTSTRAP_PORT)
    if port is None:
        return
    if not mooncake.launches_bootstrap(release):
        # 0.13.0 - 0.15.x mooncake_connector.py get_mooncake_side_channel_port + tp_rank: a ZMQ sender per worker;
        # PP stages share the TP rank's port.
        dp = range(inst.dp_start, inst.dp_start + inst.dp_local)
        for stage in range(inst.pp):
            for number, dp_index, rank in mooncake.worker_ports(port, inst.tp, dp):
                yield Bind(number, f"Mooncake sender (DP {dp_index}, TP {rank}, PP {stage})",
                           "env.VLLM_MOONCAKE_BOOTSTRAP_PORT", "mooncake")
        return
    # 0.16.0+ should_launch_bootstrap_server: TP0/PP0 of DP index 0; 0.32.0+ not with bootstrap_server_address.
    if mooncake.reads_bootstrap_address(release) and inst.extra.get("bootstrap_server_address") is not None:
        return
    if inst.dp_start == 0:
        yield Bind(port, "Mooncake bootstrap server", "env.VLLM_MOONCAKE_BOOTSTRAP_PORT", "mooncake")


_NAMES = {"dynamo": "Dynamo", "nixl": "NIXL", "moriio": "MoRIIO", "mooncake": "Mooncake", "p2p-nccl": "P2pNccl"}


def setting(field: str) -> str:
    """The inventory spelling of a Bind's field."""
    for prefix, spelled in (("env.", "vllm_env."), ("extra.", "kv_connector_extra_config.")):
        if field.startswith(prefix):
            return spelled + field[len(prefix):]
    return {"port": "vllm_port", "kv_port": "kv_transfer_config.kv_port"}.get(field, field)


def self_collision_hint(inst: Instance, first: Bind, second: Bind) -> str:
    """How to fix one instance whose own listeners first and second share a port, naming the connector whose
    listener it is (never another connector's layout)."""
    if not first.kind or not second.kind:  # the API port on one of the connector's listeners
        listener = first if first.kind else second
        return f"move vllm_port off {_NAMES[listener.kind]}'s ports, or set {setting(listener.field)} to another base"
    if first.kind != second.kind:  # two children of a composite connector
        return (f"give {_NAMES[first.kind]} and {_NAMES[second.kind]} different ports: set "
                f"{setting(second.field)} to another base")
    name = _NAMES[first.kind]
    if first.field != second.field:  # e.g. MoRIIO's handshake range running into its notify range
        return f"{name}'s {setting(first.field)} and {setting(second.field)} ranges overlap: move one base away"
    release = registry.release(inst)
    if first.kind == "moriio":
        # moriio_config.listeners: base + DP rank + TP rank (tp_size never passed), the same for every PP stage
        fixes = (["one DP rank per instance (or TP 1)"] if inst.dp_local > 1 and inst.tp > 1 else []) + (
            ["PP 1"] if inst.pp > 1 else [])
        return (f"MoRIIO (vLLM {release}) offsets its ports by DP rank + TP rank, the same on every PP stage: run "
                + (" and ".join(fixes) or "one DP rank per instance"))
    if first.kind == "nixl":
        # nixl_channel.SIDE_CHANNEL 0.9.0: PORT + tp_rank whatever the DP rank
        return f"NIXL (vLLM {release}) binds every DP rank's side channel at the same ports: run one DP rank per instance"
    if first.kind == "mooncake":
        # 0.13.0 - 0.15.x get_mooncake_side_channel_port + tp_rank: PP stages share the TP rank's port
        return f"Mooncake (vLLM {release}) gives every PP stage the same sender ports: run PP 1 per instance"
    return f"give {name}'s listeners distinct ports ({setting(first.field)})"

"""engine-id, port and nixl rules: what instances claim on the network must not clash."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Deployment, Engine, Instance, Topology
from ...vllm.connectors import composite, registry, view
from ...vllm.connectors.moriio import config as moriio_config
from ...vllm.connectors.ports import Bind, api_port, binds, self_collision_hint
from ..base import Hit, hit, rule


@rule("engine-id[duplicate]")
def engine_id(topo: Topology) -> Iterator[Hit]:
    """Two engines share an explicit kv_transfer_config engine_id.

    Connectors key their peers by engine_id (NIXL's remote agents, MoRIIO's
    handshake table), so two engines with one id overwrite each other. Leave it
    unset and vLLM picks a uuid4 (KVTransferConfig.__post_init__).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both, engine_id: p1}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both, engine_id: d1}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both, engine_id: shared}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    seen: dict[str, Instance] = {}
    for inst in sorted(topo.instances, key=lambda i: (i.host, i.index or 0)):
        if not inst.engine_id or not inst.knows("engine_id") or view.kind(inst) == "moriio":
            continue  # MoRIIO ignores engine_id: it uses host_ip:handshake_port
        first = seen.setdefault(str(inst.engine_id), inst)
        if first is not inst and (first.deployment, first.instance_id) != (inst.deployment, inst.instance_id):
            yield hit(inst, ("engine_id",), f"engine_id {inst.engine_id!r} is also used by {first.label}",
                      "give every engine its own engine_id, or leave it unset", also=(first,))


def _label(inst: Instance, bind: Bind) -> str:
    return f"{inst.label} {bind.what}"


@rule("port[collision]")
def collision(topo: Topology) -> Iterator[Hit]:
    """Two listeners on one host claim the same port: API ports and each connector's ports.

    vLLM 0.32.0 ports: NIXL binds VLLM_NIXL_SIDE_CHANNEL_PORT (5600) + DP index
    per engine core; MoRIIO binds handshake_port (6301) and notify_port (61005)
    + DP-local rank + TP rank per worker, so one engine with local DP > 1 and
    TP > 1, or PP > 1, collides with itself (the second worker's listener
    fails its bind and register_kv_caches waits forever: a start-up hang vLLM
    does not report); Mooncake's prefill binds
    VLLM_MOONCAKE_BOOTSTRAP_PORT (8998). A composite connector (MultiConnector,
    Dynamo's PdConnector) binds the ports of every child in
    kv_connector_extra_config.connectors.

    `vllm_port: null` (or `port: null` on a vllm_instances item) is an engine
    without an API server (a headless worker, a --headless node): it binds no
    API port and no API-port rule applies to it, but its connector ports still
    count. Leaving vllm_port unset means vLLM's default 8000. A Dynamo worker
    (`python -m dynamo.vllm`, vllm_launcher: dynamo) serves no HTTP API (the
    ingress is `python -m dynamo.frontend`), so it binds no API port whatever
    vllm_port says; it binds its connector's ports and, with a positive
    DYN_SYSTEM_PORT in its env, Dynamo's system status server.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            gpu1:
              vllm_instances:
                - {pd_role: prefill, port: 8100, env: {VLLM_NIXL_SIDE_CHANNEL_PORT: 5600}}
                - {pd_role: decode, port: 8200, env: {VLLM_NIXL_SIDE_CHANNEL_PORT: 5610}}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            gpu1:
              vllm_instances:
                - {pd_role: prefill, port: 8100}
                - {pd_role: decode, port: 8200}
    """
    by_host: dict[str, list[Instance]] = {}
    for inst in topo.instances:
        by_host.setdefault(inst.host, []).append(inst)
    for host, insts in sorted(by_host.items()):
        claimed: dict[int, tuple[Instance, Bind]] = {}
        for inst in sorted(insts, key=lambda i: i.index or 0):
            if not inst.knows("port", "kv_connector_extra_config", "kv_transfer_config"):
                continue
            reported: set[tuple[int, str]] = set()
            for bind in binds(inst):
                owner = claimed.get(bind.port)
                if owner is None:
                    claimed[bind.port] = (inst, bind)
                    continue
                first, first_bind = owner
                key = (id(first), first_bind.field)
                if key in reported:
                    continue
                reported.add(key)
                where = "itself" if first is inst else first.label
                # MoRIIO's own workers on one port hang at start (moriio_config.SELF_COLLISION)
                why = f" ({moriio_config.SELF_COLLISION.at(registry.release(inst))})" \
                    if where == "itself" and bind.kind == first_bind.kind == "moriio" else ""
                yield hit(inst, (bind.field, "port"),
                          f"{_label(inst, bind)} uses port {bind.port}, already taken on {host} by "
                          f"{_label(first, first_bind) if first is not inst else 'the same instance'}{why}",
                          "give each instance on a host its own port range" if where != "itself" else
                          self_collision_hint(inst, first_bind, bind),
                          also=(first,))


@rule("port[http-mismatch]")
def http_mismatch(topo: Topology) -> Iterator[Hit]:
    """MoRIIO/P2pNccl kv_connector_extra_config.http_port differs from the instance's API port.

    The connector advertises http_port to the proxy as the instance's HTTP
    address (MoRIIO: request_address in the heartbeat); vLLM never checks it
    against --port, so the proxy sends requests to a port nothing serves.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_port: 8100
              vllm_kv_transfer_config:
                kv_connector: MoRIIOConnector
                kv_role: kv_producer
                kv_connector_extra_config: {http_port: 8100}
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
              vllm_port: 8100
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
        port = api_port(inst)  # a Dynamo worker serves no API: its http_port is the frontend's business
        if view.kind(inst) not in ("moriio", "p2p-nccl") or port is None or not inst.knows("port"):
            continue
        value = composite.effective(inst).extra.get("http_port")
        if value is None or not str(value).strip().isdigit():
            continue
        if int(str(value)) != port:
            yield hit(inst, ("extra.http_port",), f"http_port {value} differs from the instance's API port {port}",
                      f"set http_port: {port}, or vllm_port: {value}")


def _side_channel_host(inst: Instance) -> str:
    return inst.env.get("VLLM_NIXL_SIDE_CHANNEL_HOST", "localhost").strip()


@rule("nixl[side-channel-host]")
def side_channel_host(topo: Topology) -> Iterator[Hit]:
    """NIXL prefill and decode on different hosts, and the side channel host is unset or loopback.

    envs.VLLM_NIXL_SIDE_CHANNEL_HOST defaults to "localhost": the handshake
    listener binds loopback only and prefill advertises it to decode
    (nixl/base_scheduler.py), so a decode on another host cannot connect.
    Loopback is any address of 127.0.0.0/8 (Debian's 127.0.1.1 hostname
    entry included), ::1, and localhost in any case; the unspecified
    0.0.0.0 and :: are reported too (the peer would dial itself).

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: 10.0.0.1}}
            d1: {vllm_pd_role: decode, vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: 10.0.0.2}}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for dep in topo.deployments:
        yield from _unreachable(dep)


def _loopback(inst: Instance) -> bool:
    return inst.knows("env.VLLM_NIXL_SIDE_CHANNEL_HOST") and registry.is_loopback(_side_channel_host(inst))


def _unreachable(dep: Deployment) -> Iterator[Hit]:
    """The pair walk of one deployment, in its order (prefill, then decode), with each engine reported once, at
    the first pair on two hosts that dials it: P + D steps for a deployment of P x D pairs, not P x D."""
    decode = [(d, d.lead) for d in dep.decode if view.kind(d.lead) == "nixl"]
    waiting = [(d, ld) for d, ld in decode if _loopback(ld)]  # push: decode engines not yet reported
    for p in dep.prefill:
        lp = p.lead
        if view.kind(lp) != "nixl":
            continue
        first = next((ld for _d, ld in decode if ld.host != lp.host), None)
        if first is None:
            continue
        if _loopback(lp):  # pull: decode dials prefill's advertised host; push: both sides dial each other
            yield _advertised(p, lp, first)
        if not view.is_push(lp):
            continue
        later = []
        for d, ld in waiting:
            if ld.host == lp.host:
                later.append((d, ld))
            else:
                yield _advertised(d, ld, lp)
        waiting = later


def _advertised(engine: Engine, inst: Instance, peer: Instance) -> Hit:
    return hit(engine, ("env.VLLM_NIXL_SIDE_CHANNEL_HOST", "kv_connector"),
               f"{inst.role} {inst.label} advertises NIXL side channel host "
               f"{_side_channel_host(inst) or 'localhost'!r}, unreachable from {peer.label}",
               "set vllm_env.VLLM_NIXL_SIDE_CHANNEL_HOST to the host's routable IP address")

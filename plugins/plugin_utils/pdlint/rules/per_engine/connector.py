"""connector[*]: the connector must exist in the release and get the settings it reads."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology, per_body
from ...vllm.connectors import composite, external, mooncake, p2p, registry, view
from ...vllm.connectors.moriio import config as moriio_config
from ...vllm.connectors.moriio import hybrid
from ...vllm.connectors.ports import api_port
from ...vllm.model import chunked, hma, stage_specs
from ...vllm.releases import Release
from ..base import Hit, each_body, hit, rule, words


@rule("connector[unknown]")
def unknown(topo: Topology) -> Iterator[Hit]:
    """kv_connector is not registered in the pinned vLLM release and no kv_connector_module_path is given.

    The registry differs by release (kv_connector/factory.py): P2pNcclConnector
    exists 0.9.2 - 0.23.0, NixlConnector from 0.9.0, MooncakeConnector (V1)
    from 0.13.0, MoRIIOConnector from 0.14.0, NixlPullConnector and
    NixlPushConnector from 0.24.0; SharedStorageConnector was renamed
    ExampleConnector in 0.13.0. An unregistered name is a KeyError in 0.8.5
    and `ValueError: Unsupported connector type` from 0.9.0, unless
    kv_connector_module_path names the module (0.8.5 has no such key). The V0
    connectors of 0.8.5 - 0.10.0 (PyNcclConnector, MooncakeConnector,
    LMCacheConnector, MooncakeStoreConnector) fail V1's
    `assert issubclass(connector_cls, KVConnectorBase_V1)` unless VLLM_USE_V1=0.
    Names are case-sensitive.

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
    for inst, (message, fix) in each_body(topo, _unknown_problems):  # the engine's own settings: once per body
        yield hit(inst, ("kv_connector",), message, fix)


def _unknown_problems(inst: Instance) -> Iterator[tuple[str, str]]:
    """(message, hint) when inst's kv_connector is no class its release's factory knows."""
    name = inst.connector
    if not name or not isinstance(name, str) or not inst.knows("kv_connector", "version", "env.VLLM_USE_V1"):
        return
    release = registry.release(inst)
    use_v1 = str(inst.env.get("VLLM_USE_V1", "1")).strip() != "0"
    if registry.usable(name, release, use_v1):
        return
    v0 = registry.is_v0(name, release)
    if inst.module_path and registry.module_path_honoured(release) and not v0:
        return  # the factory imports the class from kv_connector_module_path
    message = registry.story(name, release)
    if not v0:
        message += f": vLLM {release} raises {registry.UNKNOWN_NAME.at(release).format(name=name)} at start"
    yield message, _unknown_hint(inst, name, release, v0)


@rule("connector[out-of-tree]", "info")
def out_of_tree(topo: Topology) -> Iterator[Hit]:
    """kv_connector is imported from kv_connector_module_path and pdlint does not know the class.

    vLLM imports an out-of-tree connector from kv_connector_module_path
    (factory.py get_connector_class: from 0.20.0 the module path wins over the
    registry; before, only for a name the registry lacks). pdlint knows the
    widely used ones from their public source (Dynamo's PdConnector, which
    composes like MultiConnector and pairs through its NixlConnector child,
    and DynamoConnector from kvbm.vllm_integration.connector; LMCache's
    LMCacheConnectorV1Dynamic and LMCacheMPConnector); for any other class the
    pairing rules (tp-ratio, kv-heads, block size, HMA, connector ports) cannot
    be checked, while the rules that do not depend on the connector still run.
    A composite's out-of-tree children are reported too.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config:
              kv_connector: PdConnector
              kv_connector_module_path: kvbm.vllm_integration.connector
              kv_role: kv_both
              kv_connector_extra_config:
                connectors:
                  - kv_connector: DynamoConnector
                    kv_connector_module_path: kvbm.vllm_integration.connector
                    kv_role: kv_both
                  - {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_disable_hybrid_kv_cache_manager: true}
            d1: {vllm_pd_role: decode, vllm_disable_hybrid_kv_cache_manager: true}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config:
              kv_connector: AcmeConnector
              kv_connector_module_path: acme.vllm.connector
              kv_role: kv_both
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, (fields, message) in each_body(topo, _out_of_tree):  # the engine's own settings: once per body
        yield hit(inst, fields, message,
                  "check the pairing against the connector's own documentation; pdlint_skip: "
                  "[connector[out-of-tree]] silences this note")


def _out_of_tree(inst: Instance) -> Iterator[tuple[tuple[str, ...], str]]:
    """(where, message) for each of inst's connector classes (its own, a composite's children) imported out of
    tree: where is the fields to point at, the child's own module path first for a child."""
    if not inst.knows("kv_connector", "kv_connector_module_path", "kv_connector_extra_config", "version"):
        return
    release = registry.release(inst)
    own = [(inst.connector, inst.module_path, "kv_connector", ("kv_connector_module_path", "kv_connector"))]
    kids = [(c.connector, c.module_path, f"child {c.index} of {inst.connector}",
             (f"extra.connectors.{c.index}.kv_connector_module_path", f"extra.connectors.{c.index}",
              "extra.connectors", "kv_connector")) for c in composite.children(inst)]
    for name, module, what, fields in (*own, *kids):
        if not isinstance(name, str) or not isinstance(module, str):
            continue
        if external.loaded_from_module(name, module, release) and external.lookup(name, module) is None:
            yield fields, (f"{what} {name} is imported from {module} (out of tree): pdlint does not know how it "
                           "pairs prefill with decode, so the pairing rules (TP ratio, KV heads, block size, HMA, "
                           "its ports) are not checked for it")


def _unknown_hint(inst: Instance, name: str, release: Release, v0: bool) -> str:
    renamed = registry.RENAMED.get(name)
    if v0:
        return "set VLLM_USE_V1=0 in vllm_env to run the V0 engine, or use a V1 connector"
    if renamed:
        return f"use kv_connector {renamed[0]}"
    if registry.ever_registered(name):
        return (f"pin a vllm_version that registers {name}, use a connector vLLM {release} registers, or set "
                "kv_connector_module_path to a module that defines it")
    close = registry.suggest(name, release)
    if close:
        return f"did you mean {words(close)}?"
    if inst.module_path:
        return f"vLLM {release} has no kv_connector_module_path (it ignores the key): use a registered connector"
    return "use a registered connector, or set kv_connector_module_path to the module that defines it"


def _moriio_problems(inst: Instance) -> Iterator[tuple[str, str, str]]:
    """(extra key, message, hint) for each setting MoRIIOConnector of the instance's release cannot use."""
    release = registry.release(inst)
    return moriio_config.config_problems(composite.effective(inst).extra, release, api_port(inst))


@per_body
def _config_problems(inst: Instance) -> tuple[tuple[str, str, str], ...]:
    """(field, message, hint) of the instance's connector settings: the engine's alone, asked once per body."""
    problems = _moriio_problems(inst) if view.kind(inst) == "moriio" else iter(())
    return (*problems, *_other_problems(inst))


def _other_problems(inst: Instance) -> Iterator[tuple[str, str, str]]:
    kind = view.kind(inst)
    extra = composite.effective(inst).extra  # a composite's settings that matter are its transfer child's
    release = registry.release(inst)
    if inst.module_path == "" and inst.connector:
        empty = registry.empty_module_path(inst.connector, release)
        if empty:
            yield ("kv_connector_module_path", empty, "remove kv_connector_module_path or name the module")
    if kind == "nixl" and "enforce_handshake_compat" in extra and not isinstance(extra["enforce_handshake_compat"], bool):
        value = extra["enforce_handshake_compat"]
        yield ("extra.enforce_handshake_compat",
               (f"NIXL enforce_handshake_compat {value!r} is not a boolean; vLLM tests its truthiness, so "
                f"{value!r} means {bool(value)}"), "write enforce_handshake_compat: true or false (unquoted)")
    if kind == "mooncake" and extra.get("bootstrap_server_address") is not None and \
            mooncake.reads_bootstrap_address(release):
        address = str(extra["bootstrap_server_address"])
        host, _unused, port = address.rpartition(":")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            yield ("extra.bootstrap_server_address",
                   f"Mooncake bootstrap_server_address {address!r} must specify a host and port",
                   "write it as host:port")
    if kind == "p2p-nccl" and p2p.registered(release):
        missing = p2p.http_port_missing(release, dict(extra))
        if missing:
            api = f"the instance's API port ({api_port(inst)})" if api_port(inst) is not None else "the port the proxy reaches"
            yield ("kv_connector_extra_config", missing, f"set http_port to {api}")
    yield from composite.config_problems(inst)
    yield from _hma_problems(inst, release)


def _hma_problems(inst: Instance, release: Release) -> Iterator[tuple[str, str, str]]:
    """HMA on where the connector cannot run it, or off where the model cannot start without it."""
    return ((field, message, fix) for field, message, fix, _unused in start_problems(inst, release))


_CREATE = "v1/kv_connector/factory.py KVConnectorFactory.create_connector (SupportsHMA check)"


def start_problems(inst: Instance, release: Release) -> list[tuple[str, str, str, str]]:
    """(field, message, hint, vLLM source) of each way the engine's HMA setting and model keep it from starting
    (connector[config] reports them; explain shows them per pair)."""
    no_off = hma.needs_hma(inst)  # turning HMA off is no fix for a model that cannot start without it
    found = []
    failure = hma.failure(inst)
    raised = chunked.start_error(inst)  # VllmConfig.__post_init__ raises before any connector is built
    if raised:
        found.append(raised)
    elif failure:
        found.append(("disable_hybrid_kv_cache_manager", failure, hma.off_fix(inst) if no_off else
                      "set vllm_disable_hybrid_kv_cache_manager: true (and the same on the instances it pairs with)",
                      _CREATE))
    elif hma.rejected(inst) and not composite.is_composite(inst):
        found.append(("disable_hybrid_kv_cache_manager",
                      (f"{inst.connector} does not support the hybrid KV cache manager in vLLM {release}, but "
                       "vllm_disable_hybrid_kv_cache_manager is false (ValueError \"Connector ... does not support HMA "
                       "but HMA is enabled\")"), hma.off_fix(inst) if no_off else
                      "set vllm_disable_hybrid_kv_cache_manager: true, or leave it unset", _CREATE))
    off, stages = hma.off_failure(inst), stage_specs.failure(inst)
    if stages:  # every PP stage unifies on its own (a Mamba stage too): the engine's group assert raises first
        found.append(("pipeline_parallel_size", stages[0], stage_specs.hint(inst), stages[1]))
    elif off:
        found.append(("disable_hybrid_kv_cache_manager", off[0], hma.off_fix(inst), off[1]))
    layout = hybrid.nixl_layout(inst)
    if layout:
        found.append((f"env.{hybrid.CONV_ENV}", layout[0], hybrid.DS_HINT, layout[1]))
    return found + hybrid.moriio_start(inst)


@rule("connector[config]")
def config(topo: Topology) -> Iterator[Hit]:
    """A kv_connector_extra_config setting the connector reads is missing or unusable.

    MoRIIO (moriio_common.py MoRIIOConfig.from_vllm_config) reads `http_port`
    unconditionally in every release, and `proxy_ip` and `proxy_ping_port` too
    until 0.27.1 (KeyError); it int()-converts its port and count settings;
    `backend` must be rdma or xgmi (0.22.0+); timeouts must be numbers
    (0.23.0+) and finite and positive (0.31.0+). Mooncake's bootstrap_server_address
    must be host:port; NIXL tests enforce_handshake_compat for truthiness (the
    string "false" enforces it). HMA: explicitly on with a connector lacking
    SupportsHMA (factory.py create_connector), or resolved off for a Mamba/SSM
    hybrid model, which does not start (kv_cache_utils.py
    unify_hybrid_kv_cache_specs 0.9.1 - 0.33.0; NIXL's worker asserts HMA
    for Mamba layers from 0.18.0). HMA explicitly on for a model with
    chunked local attention (attention_chunk_size: Llama 4) where
    VllmConfig.__post_init__ turns it off (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE
    false: unset up to 0.13.0, 0 from 0.14.0) is a ValueError from 0.13.0, and
    so is a value of that variable int() cannot read; MoRIIO under HMA
    refuses chunked local layers in either mode (0.30.0+). Mamba/SSM layers need the DS conv-state
    layout (VLLM_SSM_CONV_STATE_LAYOUT=DS; SD when unset): NIXL asserts it
    from 0.20.0, MoRIIO raises in read mode from 0.31.0 and in both modes
    from 0.33.0. MoRIIO under HMA: Mamba layers raise in 0.30.0, and write
    mode with sliding-window layers raises from 0.30.0. With HMA off and
    PP > 1, up to 0.10.2 each PP stage groups its own layers: stages of
    different mixes (full, full+sliding, sliding, Mamba, chunked local) fail
    unify_kv_cache_configs' assert (AssertionError at start).

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
    for inst, (where, message, fix) in each_body(topo, _known_config_problems):  # once per body
        yield hit(composite.effective(inst), (where, "kv_connector_extra_config", "kv_connector"), message, fix)


def _known_config_problems(inst: Instance) -> tuple[tuple[str, str, str], ...]:
    if not inst.knows("kv_connector", "kv_connector_extra_config", "version", "disable_hybrid_kv_cache_manager"):
        return ()
    return _config_problems(inst)

"""connector[extra-key]: a kv_connector_extra_config key the connector never reads (a warning: it has no effect)."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology, per_body
from ...vllm.connectors import composite, extra_read, registry
from ..base import Hit, each_body, hit, rule


@rule("connector[extra-key]", "warning")
def extra_key(topo: Topology) -> Iterator[Hit]:
    """kv_connector_extra_config holds a key the connector never reads in the pinned release.

    vLLM types kv_connector_extra_config `dict[str, Any]` and never checks its
    keys (config/kv_transfer.py KVTransferConfig); a connector reads the keys
    it asks for (`get_from_extra_config`, `.get`, `[...]` in its
    kv_connector/v1/ source, per release), so any other key has no effect: a
    MoRIIO `http_port` left on a NIXL line, a misspelt `num_thread`, a key a
    later release reads (NIXL's kv_lease_duration from 0.22.0, MoRIIO's
    read_mode from 0.23.0). The hint names the key the connector reads when it
    is close. MultiConnector reads `connectors` and hands each item's own
    kv_connector_extra_config to its child, which is checked as its own.
    LMCache and out-of-tree connectors (a kv_connector_module_path) read keys
    pdlint cannot list: never reported.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_version: "0.33.0"
            vllm_kv_transfer_config:
              kv_connector: NixlConnector
              kv_role: kv_both
              kv_connector_extra_config: {backends: [UCX], num_threads: 8}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_version: "0.33.0"
            vllm_kv_transfer_config:
              kv_connector: NixlConnector
              kv_role: kv_both
              kv_connector_extra_config: {http_port: 8000}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, (field, message, fix) in each_body(topo, _no_effect):  # the engine's own settings: once per body
        yield hit(inst, (field, "kv_connector_extra_config", "kv_transfer_config"), message, fix)


@per_body
def _no_effect(inst: Instance) -> tuple[tuple[str, str, str], ...]:
    """(field, message, hint) per key of inst's extra config (and its children's) the connector never reads."""
    if not inst.knows("kv_transfer_config", "kv_connector_extra_config", "kv_connector", "version"):
        return ()
    release = registry.release(inst)
    out: list[tuple[str, str, str]] = []
    wrapper = composite.is_composite(inst)
    if wrapper and inst.connector == "MultiConnector" and not inst.module_path:
        out += _keys(inst, "multi", "", release)
    for index, child in enumerate(composite.views(inst) if wrapper else (inst,)):
        if child.module_path:
            continue  # an out-of-tree class reads what its own source asks for
        family = registry.kind_of(child.connector)
        if family in extra_read.FAMILIES:
            out += _keys(child, family, f"connectors[{index}]." if wrapper else "", release)
    return tuple(out)


def _keys(inst: Instance, family: str, within: str, release: object) -> list[tuple[str, str, str]]:
    out = []
    for key in inst.extra:
        found = extra_read.no_effect(family, str(key), release)  # type: ignore[arg-type]
        if found:
            message, fix = found
            # a child's key: its place in the connectors list (the child's own lines are its item's)
            field = "extra.connectors" if within else f"extra.{key}"
            out.append((field, f"{within}{message}" if within else message, fix))
    return out

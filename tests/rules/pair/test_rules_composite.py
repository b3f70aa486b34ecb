"""Rule tables: composite connectors (MultiConnector, Dynamo's PdConnector) and out-of-tree connectors."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import rules_of
from inv import assert_points, flow, row_ids

KVBM = "kvbm.vllm_integration.connector"
NIXL_CHILD = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
DYNAMO_CHILD = {"kv_connector": "DynamoConnector", "kv_connector_module_path": KVBM, "kv_role": "kv_both"}
LMCACHE_CHILD = {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
OFFLOAD_CHILD = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}


def multi(*kids: dict[str, Any], name: str = "MultiConnector", module: str | None = None) -> dict[str, Any]:
    kv: dict[str, Any] = {"kv_connector": name, "kv_role": "kv_both",
                          "kv_connector_extra_config": {"connectors": list(kids)}}
    if module:
        kv["kv_connector_module_path"] = module
    return kv


def pd(*kids: dict[str, Any]) -> dict[str, Any]:
    return multi(*kids, name="PdConnector", module=KVBM)


def dep(p: dict[str, Any] | None, d: dict[str, Any] | None, version: str | None = None,
        pv: dict[str, Any] | None = None, dv: dict[str, Any] | None = None, **common: Any) -> str:
    """Prefill p1 and decode d1 of deployment 'dep' with the given kv_transfer_configs (None: no connector)."""
    def host(role: str, kv: dict[str, Any] | None, own: dict[str, Any] | None) -> dict[str, Any]:
        h: dict[str, Any] = {"vllm_pd_role": role, **{"vllm_" + k: v for k, v in (own or {}).items()}}
        if kv is not None:
            h["vllm_kv_transfer_config"] = kv
        return h

    top: dict[str, Any] = {"vllm_pd_deployment": "dep", "vllm_model": "meta-llama/Llama-3.3-70B-Instruct",
                           **{"vllm_" + k: v for k, v in common.items()}}
    if version:
        top["vllm_version"] = version
    return flow({"all": {"vars": top, "hosts": {"p1": host("prefill", p, pv), "d1": host("decode", d, dv)}}})


CASES = [
    # (rule, where it points (inv.where's path; None: must not fire), inventory)
    # deployment[connector]: what pairs is the transfer child.
    ("deployment[connector]", None, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD)),
    ("deployment[connector]", None, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD,
                                         pv={"disable_hybrid_kv_cache_manager": True},
                                         dv={"disable_hybrid_kv_cache_manager": True})),
    ("deployment[connector]", "d1.kv.kv_connector", dep(multi(OFFLOAD_CHILD, NIXL_CHILD), {"kv_connector": "MooncakeConnector",
                                                                            "kv_role": "kv_consumer"})),
    ("deployment[connector]", "d1.kv.kv_connector", dep(multi(OFFLOAD_CHILD, {"kv_connector": "NixlPushConnector",
                                                              "kv_role": "kv_both"}), NIXL_CHILD)),
    # The pair rules run through the transfer child.
    ("tp-ratio[nixl]", "d1.tensor_parallel_size", dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD, pv={"tensor_parallel_size": 4},
                                 dv={"tensor_parallel_size": 6})),
    ("tp-ratio[nixl]", None, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD, pv={"tensor_parallel_size": 4},
                                  dv={"tensor_parallel_size": 8})),
    ("pd-mismatch[block-size]", "d1.block_size", dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD, pv={"block_size": 64},
                                          dv={"block_size": 16})),
    ("kv-role[side]", "p1.kv.extra.connectors.1.kv_role", dep(multi(OFFLOAD_CHILD, {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"}),
                                {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"})),
    ("kv-role[side]", None, dep(multi(OFFLOAD_CHILD, {"kv_connector": "MooncakeConnector", "kv_role": "kv_producer"}),
                                 {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"})),
    # HMA: MultiConnector with a child lacking SupportsHMA resolves an unset flag to off (0.22.0+); NIXL to on.
    ("pd-mismatch[hma]", "d1.kv", dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD)),
    ("pd-mismatch[hma]", None, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD)),  # OffloadingConnector: HMA
    ("pd-mismatch[hma]", None, dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD, version="0.21.0")),  # both off
    ("pd-mismatch[hma]", None, dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD,
                                    dv={"disable_hybrid_kv_cache_manager": True})),
    # PdConnector inherits MultiConnector's SupportsHMA: turned off by hand, it mismatches a NIXL decode left on.
    ("pd-mismatch[hma]", "d1.kv", dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD,
                                   pv={"disable_hybrid_kv_cache_manager": True})),
    # connector[config]: HMA on with a child lacking it; a child without kv_role; PdConnector's two children.
    ("connector[config]", "p1.kv.extra.connectors", dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD)),  # 0.22.0+: HMA stays on, assert
    ("connector[config]", None, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD, version="0.21.0")),
    ("connector[config]", "p1.disable_hybrid_kv_cache_manager", dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD,
                                    pv={"disable_hybrid_kv_cache_manager": False})),
    ("connector[config]", None, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD,
                                     pv={"disable_hybrid_kv_cache_manager": False})),
    ("connector[config]", "p1.kv.extra.connectors.1", dep(multi(OFFLOAD_CHILD, {"kv_connector": "NixlConnector"}), NIXL_CHILD)),
    ("connector[config]", "p1.kv.kv_connector", dep({"kv_connector": "MultiConnector", "kv_role": "kv_both"}, NIXL_CHILD)),
    ("connector[config]", "p1.kv.extra.connectors", dep(pd(NIXL_CHILD, DYNAMO_CHILD), NIXL_CHILD,
                                    pv={"disable_hybrid_kv_cache_manager": True})),
    # Items vLLM cannot build a child from (null, not a mapping, extra config not a mapping).
    ("connector[config]", "p1.kv.extra.connectors.0", dep(multi(None, NIXL_CHILD), NIXL_CHILD, pv={"disable_hybrid_kv_cache_manager": True},
                                    dv={"disable_hybrid_kv_cache_manager": True})),
    ("connector[config]", "p1.kv.extra.connectors.0", dep(multi("NixlConnector", NIXL_CHILD), NIXL_CHILD,
                                    pv={"disable_hybrid_kv_cache_manager": True},
                                    dv={"disable_hybrid_kv_cache_manager": True})),
    ("connector[config]", "p1.kv.extra.connectors.0.kv_connector_extra_config",
     dep(multi({**OFFLOAD_CHILD, "kv_connector_extra_config": "x"}, NIXL_CHILD), NIXL_CHILD)),
    ("connector[config]", None, dep(multi({**NIXL_CHILD, "kv_connector_extra_config": "x"}), NIXL_CHILD,
                                     version="0.9.0")),  # a plain dataclass: kept unchecked
    # Ports: every child binds its own; two NIXL engines on one host need separate side-channel ports.
    ("port[collision]", "gpu1.instances.1.port", flow({"all": {"vars": {"vllm_pd_deployment": "dep"}, "hosts": {"gpu1": {
        "vllm_disable_hybrid_kv_cache_manager": True, "vllm_instances": [
            {"pd_role": "prefill", "port": None, "kv_transfer_config": pd(DYNAMO_CHILD, NIXL_CHILD)},
            {"pd_role": "decode", "port": None, "kv_transfer_config": NIXL_CHILD}]}}}})),
    ("port[collision]", None, flow({"all": {"vars": {"vllm_pd_deployment": "dep"}, "hosts": {"gpu1": {
        "vllm_disable_hybrid_kv_cache_manager": True, "vllm_instances": [
            {"pd_role": "prefill", "port": None, "kv_transfer_config": pd(DYNAMO_CHILD, NIXL_CHILD)},
            {"pd_role": "decode", "port": None, "kv_transfer_config": NIXL_CHILD,
             "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5601}}]}}}})),
    # Out of tree: never connector[unknown]; an unknown class is an info note, known ones are not.
    ("connector[unknown]", None, dep({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv",
                                       "kv_role": "kv_both"}, None)),
    ("connector[out-of-tree]", "p1.kv.kv_connector_module_path", dep({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv",
                                          "kv_role": "kv_both"}, None)),
    ("connector[out-of-tree]", "p1.kv.extra.connectors.0.kv_connector_module_path",
     dep(multi({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme", "kv_role": "kv_both"}, NIXL_CHILD),
         NIXL_CHILD)),
    ("connector[out-of-tree]", None, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD)),
    ("connector[out-of-tree]", None, dep(NIXL_CHILD, NIXL_CHILD)),
    # 0.19.0: a registered name wins over the module path, so vLLM's own NixlConnector is used.
    ("connector[out-of-tree]", None, dep({**NIXL_CHILD, "kv_connector_module_path": "acme"}, NIXL_CHILD,
                                          version="0.19.0")),
    ("connector[out-of-tree]", "p1.kv.kv_connector_module_path", dep({**NIXL_CHILD, "kv_connector_module_path": "acme"}, NIXL_CHILD)),
]


@pytest.mark.parametrize(("rule", "at", "hosts"), CASES, ids=row_ids(CASES))
def test_rule_table(rule: str, at: str | None, hosts: str, lint) -> None:
    assert_points(lint(hosts), rule, at, hosts)


def test_out_of_tree_leaves_connector_free_rules_running(lint) -> None:
    """An opaque connector is a note, and tp[heads] (which needs no connector) still runs."""
    found = lint(dep({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv", "kv_role": "kv_both"},
                     {"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv", "kv_role": "kv_both"},
                     pv={"tensor_parallel_size": 3}))
    assert {"connector[out-of-tree]", "tp[heads]"} <= rules_of(found)
    assert not rules_of(found) & {"connector[unknown]", "deployment[connector]", "schema"}
    assert {f.severity for f in found if f.rule == "connector[out-of-tree]"} == {"info"}

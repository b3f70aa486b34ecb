"""Rule tables: composite connectors (MultiConnector, Dynamo's PdConnector) and out-of-tree connectors."""
from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import rules_of

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
    return json.dumps({"all": {"vars": top, "hosts": {"p1": host("prefill", p, pv), "d1": host("decode", d, dv)}}})


CASES = [
    # (rule, fires?, inventory)
    # deployment[connector]: what pairs is the transfer child.
    ("deployment[connector]", False, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD)),
    ("deployment[connector]", False, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD,
                                         pv={"disable_hybrid_kv_cache_manager": True},
                                         dv={"disable_hybrid_kv_cache_manager": True})),
    ("deployment[connector]", True, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), {"kv_connector": "MooncakeConnector",
                                                                            "kv_role": "kv_consumer"})),
    ("deployment[connector]", True, dep(multi(OFFLOAD_CHILD, {"kv_connector": "NixlPushConnector",
                                                              "kv_role": "kv_both"}), NIXL_CHILD)),
    # The pair rules run through the transfer child.
    ("tp-ratio[nixl]", True, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD, pv={"tensor_parallel_size": 4},
                                 dv={"tensor_parallel_size": 6})),
    ("tp-ratio[nixl]", False, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD, pv={"tensor_parallel_size": 4},
                                  dv={"tensor_parallel_size": 8})),
    ("pd-mismatch[block-size]", True, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD, pv={"block_size": 64},
                                          dv={"block_size": 16})),
    ("kv-role[side]", True, dep(multi(OFFLOAD_CHILD, {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"}),
                                {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"})),
    ("kv-role[side]", False, dep(multi(OFFLOAD_CHILD, {"kv_connector": "MooncakeConnector", "kv_role": "kv_producer"}),
                                 {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"})),
    # HMA: MultiConnector with a child lacking SupportsHMA resolves an unset flag to off (0.22.0+); NIXL to on.
    ("pd-mismatch[hma]", True, dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD)),
    ("pd-mismatch[hma]", False, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD)),  # OffloadingConnector: HMA
    ("pd-mismatch[hma]", False, dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD, version="0.21.0")),  # both off
    ("pd-mismatch[hma]", False, dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD,
                                    dv={"disable_hybrid_kv_cache_manager": True})),
    # PdConnector inherits MultiConnector's SupportsHMA: turned off by hand, it mismatches a NIXL decode left on.
    ("pd-mismatch[hma]", True, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD,
                                   pv={"disable_hybrid_kv_cache_manager": True})),
    # connector[config]: HMA on with a child lacking it; a child without kv_role; PdConnector's two children.
    ("connector[config]", True, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD)),  # 0.22.0+: HMA stays on, assert
    ("connector[config]", False, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD, version="0.21.0")),
    ("connector[config]", True, dep(multi(LMCACHE_CHILD, NIXL_CHILD), NIXL_CHILD,
                                    pv={"disable_hybrid_kv_cache_manager": False})),
    ("connector[config]", False, dep(multi(OFFLOAD_CHILD, NIXL_CHILD), NIXL_CHILD,
                                     pv={"disable_hybrid_kv_cache_manager": False})),
    ("connector[config]", True, dep(multi(OFFLOAD_CHILD, {"kv_connector": "NixlConnector"}), NIXL_CHILD)),
    ("connector[config]", True, dep({"kv_connector": "MultiConnector", "kv_role": "kv_both"}, NIXL_CHILD)),
    ("connector[config]", True, dep(pd(NIXL_CHILD, DYNAMO_CHILD), NIXL_CHILD,
                                    pv={"disable_hybrid_kv_cache_manager": True})),
    # Items vLLM cannot build a child from (null, not a mapping, extra config not a mapping).
    ("connector[config]", True, dep(multi(None, NIXL_CHILD), NIXL_CHILD, pv={"disable_hybrid_kv_cache_manager": True},
                                    dv={"disable_hybrid_kv_cache_manager": True})),
    ("connector[config]", True, dep(multi("NixlConnector", NIXL_CHILD), NIXL_CHILD,
                                    pv={"disable_hybrid_kv_cache_manager": True},
                                    dv={"disable_hybrid_kv_cache_manager": True})),
    ("connector[config]", True, dep(multi({**OFFLOAD_CHILD, "kv_connector_extra_config": "x"}, NIXL_CHILD), NIXL_CHILD)),
    ("connector[config]", False, dep(multi({**NIXL_CHILD, "kv_connector_extra_config": "x"}), NIXL_CHILD,
                                     version="0.9.0")),  # a plain dataclass: kept unchecked
    # Ports: every child binds its own; two NIXL engines on one host need separate side-channel ports.
    ("port[collision]", True, json.dumps({"all": {"vars": {"vllm_pd_deployment": "dep"}, "hosts": {"gpu1": {
        "vllm_disable_hybrid_kv_cache_manager": True, "vllm_instances": [
            {"pd_role": "prefill", "port": None, "kv_transfer_config": pd(DYNAMO_CHILD, NIXL_CHILD)},
            {"pd_role": "decode", "port": None, "kv_transfer_config": NIXL_CHILD}]}}}})),
    ("port[collision]", False, json.dumps({"all": {"vars": {"vllm_pd_deployment": "dep"}, "hosts": {"gpu1": {
        "vllm_disable_hybrid_kv_cache_manager": True, "vllm_instances": [
            {"pd_role": "prefill", "port": None, "kv_transfer_config": pd(DYNAMO_CHILD, NIXL_CHILD)},
            {"pd_role": "decode", "port": None, "kv_transfer_config": NIXL_CHILD,
             "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5601}}]}}}})),
    # Out of tree: never connector[unknown]; an unknown class is an info note, known ones are not.
    ("connector[unknown]", False, dep({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv",
                                       "kv_role": "kv_both"}, None)),
    ("connector[out-of-tree]", True, dep({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv",
                                          "kv_role": "kv_both"}, None)),
    ("connector[out-of-tree]", True, dep(multi({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme",
                                                "kv_role": "kv_both"}, NIXL_CHILD), NIXL_CHILD)),
    ("connector[out-of-tree]", False, dep(pd(DYNAMO_CHILD, NIXL_CHILD), NIXL_CHILD)),
    ("connector[out-of-tree]", False, dep(NIXL_CHILD, NIXL_CHILD)),
    # 0.19.0: a registered name wins over the module path, so vLLM's own NixlConnector is used.
    ("connector[out-of-tree]", False, dep({**NIXL_CHILD, "kv_connector_module_path": "acme"}, NIXL_CHILD,
                                          version="0.19.0")),
    ("connector[out-of-tree]", True, dep({**NIXL_CHILD, "kv_connector_module_path": "acme"}, NIXL_CHILD)),
]


@pytest.mark.parametrize(("rule", "fires", "hosts"), CASES, ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_rule_table(rule: str, fires: bool, hosts: str, lint) -> None:
    assert (rule in rules_of(lint(hosts))) is fires


def test_out_of_tree_leaves_connector_free_rules_running(lint) -> None:
    """An opaque connector is a note, and tp[heads] (which needs no connector) still runs."""
    found = lint(dep({"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv", "kv_role": "kv_both"},
                     {"kv_connector": "AcmeConnector", "kv_connector_module_path": "acme.kv", "kv_role": "kv_both"},
                     pv={"tensor_parallel_size": 3}))
    assert {"connector[out-of-tree]", "tp[heads]"} <= rules_of(found)
    assert not rules_of(found) & {"connector[unknown]", "deployment[connector]", "schema"}
    assert {f.severity for f in found if f.rule == "connector[out-of-tree]"} == {"info"}

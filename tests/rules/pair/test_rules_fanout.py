"""Rules decide once per engine body and once per pair of bodies, and their findings are what a walk of every
instance and every prefill x decode pair gives: wide deployments cost P + D, not P x D."""
from __future__ import annotations

from typing import Any

import pytest

from pdlint.engine import core
from pdlint.finding import Origin
from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.topology import build as build_module
from pdlint.topology.build import build
from pdlint.vllm import env_values
from pdlint.vllm.connectors import registry as connectors


def _wide(p: int, d: int, prefill: dict[str, Any], decode: dict[str, Any],
          own: dict[int, dict[str, Any]] | None = None) -> list[HostVars]:
    """One deployment of p prefill and d decode hosts, group values per role; own: host index -> its own values
    (a host_vars file of its own)."""
    hosts = []
    for index in range(p + d):
        role, common = ("prefill", prefill) if index < p else ("decode", decode)
        values = {"vllm_pd_deployment": "wide", "vllm_pd_role": role, "vllm_version": "0.32.0",
                  "vllm_model": "meta-llama/Llama-3.3-70B-Instruct",
                  "vllm_kv_transfer_config": {"kv_connector": "NixlConnector",
                                              "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"},
                  **common}
        origins = {(key,): Origin(f"group_vars/wide_{role}.yml", line + 1, 1) for line, key in enumerate(values)}
        for line, (key, value) in enumerate((own or {}).get(index, {}).items()):
            values[key] = value
            origins[(key,)] = Origin(f"host_vars/h{index}.yml", line + 1, 1)
        hosts.append(HostVars(f"h{index:04d}", values, origins))
    return hosts


def test_a_per_instance_rule_asks_the_vllm_layer_once_per_body(monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = _wide(150, 150, {"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": "x"}}, {},
                  own={3: {"vllm_tensor_parallel_size": 2}})
    calls = []
    real = env_values.problems

    def counted(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(env_values, "problems", counted)
    topo, _unused = build(hosts)
    found = list(REGISTRY["env[invalid]"].check(topo))
    assert len(calls) == 2  # the prefill body and the one host of its own; decode sets no env
    assert sorted(h for f in found for h in f.hosts) == [f"h{i:04d}" for i in range(150)]
    assert {f.origin.file for f in found} == {"group_vars/wide_prefill.yml"}  # each at its own line
    assert [f.hosts[0] for f in found] == sorted(f.hosts[0] for f in found)  # in the instances' order


_MOONCAKE = {"vllm_kv_transfer_config": {"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"}}


@pytest.mark.parametrize(("decode", "rule_ids"), [
    ({"vllm_version": "0.31.1", "vllm_dtype": "float16"}, ("pd-mismatch[vllm-version]", "pd-mismatch[dtype]")),
    (_MOONCAKE, ("deployment[connector]",)),
])
def test_pair_rules_do_not_walk_every_prefill_decode_pair(decode: dict[str, Any], rule_ids: tuple[str, ...],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    p = d = 200
    hosts = _wide(p, d, {"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.1"}, "vllm_dtype": "bfloat16"}, decode,
                  own={0: {"vllm_port": 8001}, p + 1: {"vllm_port": 8002}})
    calls = []
    real = connectors.is_loopback
    monkeypatch.setattr(connectors, "is_loopback", lambda text: calls.append(text) or real(text))
    topo, _unused = build(hosts)
    for rule_id in rule_ids:
        found = list(REGISTRY[rule_id].check(topo))
        assert 0 < len(found) <= p + d, rule_id  # a hit per pair would be p x d
        assert len(core.merge(found)) == 1 and len(core.merge(found)[0].hosts) == p + d
    list(REGISTRY["nixl[side-channel-host]"].check(topo))
    assert len(calls) <= p + d  # each side channel host asked once, not once per pair


_CASES = {
    "block size, HMA, version": ({}, {"vllm_block_size": 32},
                                 {0: {"vllm_disable_hybrid_kv_cache_manager": True}, 7: {"vllm_version": "0.31.1"},
                                  9: {"vllm_tensor_parallel_size": 3}}),
    "connector, TP hints": ({"vllm_tensor_parallel_size": 4}, {"vllm_tensor_parallel_size": 6},
                            {2: {"vllm_kv_transfer_config": {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"}},
                             8: {"vllm_tensor_parallel_size": 8}, 11: {"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "h"}}}),
    "push side channel": ({"vllm_kv_transfer_config": {"kv_connector": "NixlPushConnector", "kv_role": "kv_both"}},
                          {"vllm_kv_transfer_config": {"kv_connector": "NixlPushConnector", "kv_role": "kv_both"}},
                          {1: {"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.9"}},
                           10: {"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.1.1"}}}),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_spread_findings_are_those_of_every_pair(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no two instances sharing a body, every Block is one pair and every body one instance: the walk of
    old. The findings are the same, host lists and lines included."""
    prefill, decode, own = _CASES[case]
    hosts = _wide(6, 8, prefill, decode, own)
    shared = [f.as_dict() for f in core.lint(hosts).findings]
    assert shared
    monkeypatch.setattr(build_module, "share_bodies", lambda instances, *copies: None)
    assert [f.as_dict() for f in core.lint(hosts).findings] == shared

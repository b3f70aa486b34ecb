"""Rule tables: deployments, connectors, roles, TP ratios, KV heads, P/D mismatches."""
from __future__ import annotations

import pytest
from conftest import rules_of
from inv import MORIIO_READ, assert_points, pair, row_ids

DS = "deepseek-ai/DeepSeek-V3"
L70 = "meta-llama/Llama-3.3-70B-Instruct"
Q235 = "Qwen/Qwen3-235B-A22B"  # 4 KV heads

CASES = [
    # (rule, where it points (inv.where's path; None: must not fire), inventory)
    ("deployment[connector]", None, pair("NixlConnector", d={"kv.kv_connector": "NixlPullConnector"})),
    ("deployment[connector]", "d1.kv.kv_connector", pair("NixlConnector", d={"kv.kv_connector": "NixlPushConnector"})),
    ("deployment[connector]", "d1.kv.kv_connector", pair("MooncakeConnector", d={"kv.kv_connector": "MoRIIOConnector"})),
    ("connector[unknown]", None, pair("NixlPushConnector")),
    ("connector[unknown]", "p1.kv.kv_connector", pair("P2pNcclConnector")),
    ("connector[unknown]", None, pair("P2pNcclConnector", p={"kv.kv_connector_module_path": "m"},
                                       d={"kv.kv_connector_module_path": "m"})),
    ("connector[unknown]", "p1.kv.kv_connector", pair("nixlconnector")),
    ("connector[config]", None, pair("MoRIIOConnector", extra={"http_port": "8000"})),
    ("connector[config]", "p1.kv.extra", pair("MoRIIOConnector", extra={})),
    ("connector[config]", "p1.kv.extra.notify_port", pair("MoRIIOConnector", extra={"http_port": 8000, "notify_port": "x"})),
    ("connector[config]", "p1.kv.extra.backend", pair("MoRIIOConnector", extra={"http_port": 8000, "backend": "tcp"})),
    ("connector[config]", "p1.kv.extra.transfer_timeout", pair("MoRIIOConnector", extra={"http_port": 8000, "transfer_timeout": 0})),
    ("connector[config]", "p1.kv.extra.read_mode", pair("MoRIIOConnector", extra={"http_port": 8000, "read_mode": "yes"})),
    ("connector[config]", "p1.kv.extra.enforce_handshake_compat", pair("NixlConnector", extra={"enforce_handshake_compat": "false"})),
    ("connector[config]", None, pair("NixlConnector", extra={"enforce_handshake_compat": False})),
    ("connector[config]", "p1.kv.extra.bootstrap_server_address", pair("MooncakeConnector", extra={"bootstrap_server_address": "10.0.0.1"})),
    ("connector[config]", None, pair("MooncakeConnector", extra={"bootstrap_server_address": "10.0.0.1:8998"})),
    ("kv-role[missing]", "p1.kv.kv_role", pair("NixlConnector", p={"kv.kv_role": None})),
    ("kv-role[missing]", None, pair(None)),
    ("kv-role[invalid]", "d1.kv.kv_role", pair("NixlConnector", d={"kv.kv_role": "consumer"})),
    ("kv-role[invalid]", None, pair("NixlConnector", d={"kv.kv_role": "kv_both"})),
    ("kv-role[side]", None, pair("NixlConnector", p={"kv.kv_role": "kv_consumer"})),
    ("kv-role[side]", "p1.kv.kv_role", pair("MoRIIOConnector", extra=MORIIO_READ, p={"kv.kv_role": "kv_consumer"})),
    ("kv-role[side]", "d1.kv.kv_role", pair("MooncakeConnector", d={"kv.kv_role": "kv_producer"})),
    ("kv-role[side]", None, pair("MooncakeConnector", d={"kv.kv_role": "kv_both"})),
    ("kv-role[moriio-explicit]", "d1.kv.kv_role", pair("MoRIIOConnector", extra=MORIIO_READ, d={"kv.kv_role": "kv_both"})),
    ("kv-role[moriio-explicit]", None, pair("MooncakeConnector", d={"kv.kv_role": "kv_both"})),
    ("tp-ratio[moriio]", "d1.tensor_parallel_size", pair("MoRIIOConnector", extra=MORIIO_READ, model=DS,
                                    p={"tensor_parallel_size": 4}, d={"tensor_parallel_size": 6})),
    ("tp-ratio[moriio]", None, pair("MoRIIOConnector", extra=MORIIO_READ, model=DS,
                                     p={"tensor_parallel_size": 4}, d={"tensor_parallel_size": 8})),
    ("tp-ratio[moriio]", "d1.tensor_parallel_size", pair("MoRIIOConnector", extra=MORIIO_READ, model=DS,
                                    p={"tensor_parallel_size": 6}, d={"tensor_parallel_size": 4})),
    ("tp-ratio[moriio-write]", "d1.tensor_parallel_size", pair("MoRIIOConnector", extra={"http_port": 8000}, model=DS, version="0.32.0",
                                          p={"tensor_parallel_size": 8}, d={"tensor_parallel_size": 4})),
    ("tp-ratio[moriio-write]", None, pair("MoRIIOConnector", extra={"http_port": 8000}, model=DS,
                                           p={"tensor_parallel_size": 8}, d={"tensor_parallel_size": 4})),
    ("tp-ratio[moriio-write]", "d1.tensor_parallel_size", pair("MoRIIOConnector", extra={"http_port": 8000}, model=DS,
                                          p={"tensor_parallel_size": 4}, d={"tensor_parallel_size": 6})),
    ("tp-ratio[moriio-write]", None, pair("MoRIIOConnector", extra=MORIIO_READ, model=DS,
                                           p={"tensor_parallel_size": 8}, d={"tensor_parallel_size": 4})),
    ("tp-ratio[nixl]", "d1.tensor_parallel_size", pair("NixlConnector", p={"tensor_parallel_size": 4}, d={"tensor_parallel_size": 6})),
    ("tp-ratio[nixl]", None, pair("NixlConnector", p={"tensor_parallel_size": 8}, d={"tensor_parallel_size": 2})),
    ("tp-ratio[nixl]", "d1.tensor_parallel_size", pair("NixlPushConnector", p={"tensor_parallel_size": 3},
                                  d={"tensor_parallel_size": 2})),
    ("tp-ratio[mooncake]", "d1.tensor_parallel_size", pair("MooncakeConnector", p={"tensor_parallel_size": 2},
                                      d={"tensor_parallel_size": 3})),
    ("tp-ratio[mooncake]", None, pair("MooncakeConnector", p={"tensor_parallel_size": 2},
                                       d={"tensor_parallel_size": 4})),
    ("tp-ratio[p2p-nccl]", "d1.tensor_parallel_size", pair("P2pNcclConnector", p={"tensor_parallel_size": 2},
                                      d={"tensor_parallel_size": 4})),
    # Decode leaves PP unset: the value written down is prefill's PP, not decode's vllm_pd_role.
    ("tp-ratio[p2p-nccl]", "p1.pipeline_parallel_size", pair("P2pNcclConnector", p={"pipeline_parallel_size": 2})),
    ("tp-ratio[p2p-nccl]", None, pair("P2pNcclConnector")),
    ("kv-heads[moriio-replicated]", "p1.tensor_parallel_size", pair("MoRIIOConnector", extra=MORIIO_READ, model=L70,
                                               p={"tensor_parallel_size": 2}, d={"tensor_parallel_size": 4})),
    ("kv-heads[moriio-replicated]", None, pair("MoRIIOConnector", extra=MORIIO_READ, model=Q235,
                                                p={"tensor_parallel_size": 8}, d={"tensor_parallel_size": 4})),
    ("kv-heads[moriio-replicated]", None, pair("MoRIIOConnector", extra=MORIIO_READ, model=DS,
                                                p={"tensor_parallel_size": 2}, d={"tensor_parallel_size": 8})),
    ("kv-heads[nixl-prefill-replicated]", "p1.tensor_parallel_size", pair("NixlConnector", model=Q235, p={"tensor_parallel_size": 8},
                                                     d={"tensor_parallel_size": 2})),
    ("kv-heads[nixl-prefill-replicated]", None, pair("NixlConnector", model=Q235, p={"tensor_parallel_size": 2},
                                                      d={"tensor_parallel_size": 8})),
    ("kv-heads[nixl-prefill-replicated]", None, pair("NixlConnector", model=DS, p={"tensor_parallel_size": 16},
                                                      d={"tensor_parallel_size": 4})),
    ("kv-heads[nixl-prefill-replicated]", None, pair("NixlConnector", model="Qwen/Qwen3.5-35B-A3B",
                                                      p={"tensor_parallel_size": 4}, d={"tensor_parallel_size": 2})),
    ("kv-heads[nixl-prefill-replicated]", "d1.tensor_parallel_size", pair("NixlPushConnector", model=Q235,
                                                     p={"tensor_parallel_size": 2}, d={"tensor_parallel_size": 8})),
    ("pd-mismatch[model]", "d1.model", pair("MooncakeConnector", model=None, p={"model": "a/b"}, d={"model": "a/c"})),
    ("pd-mismatch[model]", None, pair("MooncakeConnector")),
    ("pd-mismatch[dtype]", "d1.dtype", pair("NixlConnector", p={"dtype": "bfloat16"}, d={"dtype": "half"})),
    ("pd-mismatch[dtype]", None, pair("NixlConnector", p={"dtype": "auto"}, d={"dtype": "bfloat16"})),
    ("pd-mismatch[kv-cache-dtype]", "d1.kv_cache_dtype", pair("NixlConnector", p={"kv_cache_dtype": "auto"},
                                               d={"kv_cache_dtype": "bfloat16"})),
    ("pd-mismatch[kv-cache-dtype]", None, pair("NixlConnector", kv_cache_dtype="fp8")),
    ("pd-mismatch[vllm-version]", "d1.version", pair("NixlConnector", p={"version": "0.32.0"}, d={"version": "0.31.0"})),
    ("pd-mismatch[vllm-version]", None, pair("NixlConnector", extra={"enforce_handshake_compat": False},
                                              p={"version": "0.32.0"}, d={"version": "0.31.0"})),
    ("pd-mismatch[vllm-version]", None, pair("MooncakeConnector", p={"version": "0.32.0"},
                                              d={"version": "0.31.0"})),
    ("pd-mismatch[hma]", "d1.disable_hybrid_kv_cache_manager", pair("NixlConnector", d={"disable_hybrid_kv_cache_manager": True})),
    ("pd-mismatch[hma]", None, pair("NixlConnector", p={"disable_hybrid_kv_cache_manager": False})),
    ("pd-mismatch[block-size]", None, pair("NixlConnector", p={"block_size": 16}, d={"block_size": 32})),
    ("pd-mismatch[block-size]", "d1.block_size", pair("NixlConnector", p={"block_size": 32}, d={"block_size": 16})),
    ("pd-mismatch[block-size]", "d1.block_size", pair("NixlConnector", p={"block_size": 16, "tensor_parallel_size": 8},
                                           d={"block_size": 32, "tensor_parallel_size": 4})),
    ("pd-mismatch[block-size]", "d1.block_size", pair("MooncakeConnector", p={"block_size": 16}, d={"block_size": 32})),
    ("pd-mismatch[block-size]", None, pair("MooncakeConnector", p={"block_size": 16})),
]


@pytest.mark.parametrize(("rule", "at", "hosts"), CASES, ids=row_ids(CASES))
def test_rule_table(rule: str, at: str | None, hosts: str, lint) -> None:
    assert_points(lint(hosts), rule, at, hosts)


def test_incomplete_deployment(lint) -> None:
    found = lint('{"all": {"hosts": {"p1": {"vllm_pd_role": "prefill", "vllm_pd_deployment": "x"}}}}')
    assert [f.rule for f in found] == ["deployment[incomplete]"]
    assert "no decode instance" in found[0].message
    assert "deployment[incomplete]" not in rules_of(lint(pair(None)))


def _hosts(other: dict[str, str]) -> str:
    import json

    return json.dumps({"all": {"hosts": {"p1": {"vllm_pd_role": "prefill", "vllm_pd_deployment": "x"}, "o1": other}}})


@pytest.mark.parametrize(("other", "fires"), [
    ({"vllm_pd_role": "{{ side }}", "vllm_pd_deployment": "x"}, False),  # may be x's decode
    ({"vllm_pd_role": "{{ side }}", "vllm_pd_deployment": "{{ dep }}"}, False),
    ({"vllm_pd_role": "decode", "vllm_pd_deployment": "{{ dep }}"}, False),  # may be x's
    ({"vllm_pd_role": "{{ side | upper }}", "vllm_pd_deployment": "{{ missing.attr }}"}, False),
    ({"vllm_pd_role": "{{ side }}", "vllm_pd_deployment": "y"}, True),  # another deployment's, whatever its side
    ({"vllm_pd_role": "prefill", "vllm_pd_deployment": "{{ dep }}"}, True),  # a prefill cannot be x's decode
    ({"vllm_pd_role": "{{ side }}"}, True),  # no deployment: a side of none
    ({"vllm_pd_deployment": "{{ dep }}"}, True),  # no role: not a P/D host
])
def test_incomplete_is_not_guessed_past_an_unresolved_side(other: dict[str, str], fires: bool, lint) -> None:
    found = rules_of(lint(_hosts(other)))
    assert ("deployment[incomplete]" in found) is fires
    assert "unresolved" in found


def test_incomplete_is_not_guessed_past_a_vaulted_side(lint) -> None:
    """A vault-encrypted role, no password: the host may be the decode; with the password it is checked."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = VaultLib([("default", VaultSecret(b"pw"))]).encrypt("prefill").decode()
    vaulted = "vllm_pd_role: !vault |\n" + "".join(f"  {line}\n" for line in secret.splitlines())
    hosts = _hosts({"vllm_pd_deployment": "x"})
    found = rules_of(lint(hosts, **{"host_vars__o1.yml": vaulted}))
    assert "unresolved" in found and "deployment[incomplete]" not in found

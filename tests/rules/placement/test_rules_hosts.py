"""Rule tables: per-instance rules (TP vs heads, ports, GPUs, env) and the stage rules."""
from __future__ import annotations

import json

import pytest
from conftest import rules_of
from inv import MORIIO_READ, assert_points, flow, pair, row_ids


def colocated(*items: dict, **host: object) -> str:
    """One host gpu1 running several instances of deployment 'dep'."""
    h = {"vllm_pd_deployment": "dep", "vllm_instances": list(items), **{"vllm_" + k: v for k, v in host.items()}}
    return flow({"all": {"hosts": {"gpu1": h}}})


NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
MORIIO_P = {"kv_connector": "MoRIIOConnector", "kv_role": "kv_producer", "kv_connector_extra_config": MORIIO_READ}
MORIIO_D = {**MORIIO_P, "kv_role": "kv_consumer"}

CASES = [
    # (rule, where it points (inv.where's path; None: must not fire), inventory)
    ("tp[heads]", "p1.tensor_parallel_size", pair(None, p={"tensor_parallel_size": 3})),
    ("tp[heads]", None, pair(None, p={"tensor_parallel_size": 8})),
    ("tp[heads]", None, pair(None, model="unknown/model", p={"tensor_parallel_size": 3})),
    ("tp[kv-heads]", "p1.tensor_parallel_size", pair(None, model="x/y", model_num_attention_heads=12, model_num_kv_heads=4,
                                model_is_mla=False, p={"tensor_parallel_size": 6})),
    ("tp[kv-heads]", None, pair(None, model="x/y", model_num_attention_heads=12, model_num_kv_heads=4,
                                 model_is_mla=True, p={"tensor_parallel_size": 6})),
    ("tp[kv-heads]", None, pair(None, model="Qwen/Qwen2.5-7B-Instruct", p={"tensor_parallel_size": 2})),
    ("model-facts", "vars.model", pair(None, model="x/y", p={"tensor_parallel_size": 2})),
    ("model-facts", None, pair(None, model="x/y")),
    ("model-facts", None, pair(None, p={"tensor_parallel_size": 2})),
    ("engine-id[duplicate]", "p1.kv.engine_id", pair("NixlConnector", p={"kv.engine_id": "e"}, d={"kv.engine_id": "e"})),
    ("engine-id[duplicate]", None, pair("NixlConnector", p={"kv.engine_id": "e"})),
    ("port[collision]", "gpu1.instances.1.pd_role", colocated({"pd_role": "prefill"}, {"pd_role": "decode"})),
    ("port[collision]", None, colocated({"pd_role": "prefill", "port": 8001}, {"pd_role": "decode", "port": 8002})),
    ("port[collision]", "gpu1.instances.1.port", colocated({"pd_role": "prefill", "port": 8001, "kv_transfer_config": NIXL},
                                        {"pd_role": "decode", "port": 8002, "kv_transfer_config": NIXL})),
    ("port[collision]", "gpu1.instances.1.env.VLLM_NIXL_SIDE_CHANNEL_PORT", colocated({"pd_role": "prefill", "port": 8001, "kv_transfer_config": NIXL,
                                         "data_parallel_size": 2, "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5600}},
                                        {"pd_role": "decode", "port": 8002, "kv_transfer_config": NIXL,
                                         "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5601}})),
    ("port[collision]", None, colocated({"pd_role": "prefill", "port": 8001, "kv_transfer_config": NIXL,
                                          "data_parallel_size": 2, "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5600}},
                                         {"pd_role": "decode", "port": 8002, "kv_transfer_config": NIXL,
                                          "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5602}})),
    # MoRIIO: one engine with local DP 2 and TP 2 binds handshake 6301, 6302, 6302, 6303.
    ("port[collision]", "p1.pd_role", pair("MoRIIOConnector", extra=MORIIO_READ, model="deepseek-ai/DeepSeek-V3",
                                   p={"tensor_parallel_size": 2, "data_parallel_size": 2})),
    ("port[collision]", None, pair("MoRIIOConnector", extra=MORIIO_READ, model="deepseek-ai/DeepSeek-V3",
                                    p={"tensor_parallel_size": 8})),
    ("port[collision]", "gpu1.instances.1.port", colocated({"pd_role": "prefill", "port": 8001, "kv_transfer_config": MORIIO_P},
                                        {"pd_role": "decode", "port": 8000, "kv_transfer_config": MORIIO_D})),
    ("port[collision]", "gpu1.instances.1.port", colocated(
        {"pd_role": "prefill", "port": 8001, "kv_transfer_config": {"kv_connector": "MooncakeConnector",
                                                                    "kv_role": "kv_producer"}},
        {"pd_role": "prefill", "port": 8002, "kv_transfer_config": {"kv_connector": "MooncakeConnector",
                                                                    "kv_role": "kv_producer"}},
        {"pd_role": "decode", "port": 8003, "kv_transfer_config": {"kv_connector": "MooncakeConnector",
                                                                   "kv_role": "kv_consumer"}})),
    # port: null is a headless engine (no API server): two on one host do not collide on 8000 ...
    ("port[collision]", None, colocated({"pd_role": "prefill", "port": None}, {"pd_role": "decode", "port": None})),
    ("port[collision]", None, colocated({"pd_role": "prefill"}, {"pd_role": "decode"}, port=None)),
    ("port[collision]", "gpu1.instances.2.pd_role", colocated({"pd_role": "prefill", "port": None}, {"pd_role": "decode"},
                                        {"pd_role": "decode"})),  # unset still means 8000
    # ... but their connector ports still count.
    ("port[collision]", "gpu1.instances.1.port", colocated({"pd_role": "prefill", "port": None, "kv_transfer_config": NIXL},
                                        {"pd_role": "decode", "port": None, "kv_transfer_config": NIXL})),
    ("port[collision]", None, colocated({"pd_role": "prefill", "port": None, "kv_transfer_config": NIXL},
                                         {"pd_role": "decode", "port": None, "kv_transfer_config": NIXL,
                                          "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5601}})),
    ("port[http-mismatch]", None, pair("MoRIIOConnector", extra=MORIIO_READ, p={"port": None})),
    ("port[http-mismatch]", "p1.kv.extra.http_port", pair("MoRIIOConnector", extra=MORIIO_READ, p={"port": 8100})),
    ("port[http-mismatch]", None, pair("MoRIIOConnector", extra=MORIIO_READ)),
    ("nixl[side-channel-host]", "p1.kv.kv_connector", pair("NixlConnector", d={"env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.2"}})),
    ("nixl[side-channel-host]", "p1.env.VLLM_NIXL_SIDE_CHANNEL_HOST", pair("NixlConnector", p={"env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.0.1"}})),
    ("nixl[side-channel-host]", None, pair("NixlConnector", p={"env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.1"}})),
    ("nixl[side-channel-host]", None, colocated({"pd_role": "prefill", "port": 8001, "kv_transfer_config": NIXL},
                                                 {"pd_role": "decode", "port": 8002, "kv_transfer_config": NIXL})),
    ("gpu[oversubscribed]", "gpu1.instances.1.tensor_parallel_size", colocated({"pd_role": "prefill", "port": 1, "tensor_parallel_size": 4},
                                            {"pd_role": "decode", "port": 2, "tensor_parallel_size": 4},
                                            host_gpu_count=4)),
    ("gpu[oversubscribed]", None, colocated({"pd_role": "prefill", "port": 1, "tensor_parallel_size": 4},
                                             {"pd_role": "decode", "port": 2, "tensor_parallel_size": 4},
                                             host_gpu_count=8)),
    ("gpu[oversubscribed]", "p1.tensor_parallel_size", pair(None, host_gpu_count=8, p={"tensor_parallel_size": 8, "node": "n1"},
                                       d={"tensor_parallel_size": 8, "node": "n1"})),
    ("gpu[oversubscribed]", None, pair(None, host_gpu_count=8, p={"tensor_parallel_size": 8,
                                                                   "pipeline_parallel_size": 2, "nnodes": 2})),
    ("gpu[overlap]", "gpu1.instances.1.env.CUDA_VISIBLE_DEVICES", colocated({"pd_role": "prefill", "port": 1, "env": {"CUDA_VISIBLE_DEVICES": "0,1"}},
                                     {"pd_role": "decode", "port": 2, "env": {"CUDA_VISIBLE_DEVICES": "1,2"}})),
    ("gpu[overlap]", None, pair(None, p={"env": {"CUDA_VISIBLE_DEVICES": "0"}},
                                 d={"env": {"CUDA_VISIBLE_DEVICES": "0"}})),
    ("gpu[count]", "p1.env.CUDA_VISIBLE_DEVICES", pair(None, p={"tensor_parallel_size": 2, "env": {"CUDA_VISIBLE_DEVICES": "0"}})),
    ("gpu[count]", None, pair(None, p={"tensor_parallel_size": 2, "data_parallel_size": 2,
                                        "env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}})),
    ("env[ignored]", "d1.env.VLLM_MORIIO_CONNECTOR_READ_MODE", pair("MoRIIOConnector", extra=MORIIO_READ,
                                d={"env": {"VLLM_MORIIO_CONNECTOR_READ_MODE": "1"}})),
    ("env[ignored]", None, pair("NixlConnector", d={"env": {"VLLM_MORIIO_CONNECTOR_READ_MODE": "1"}})),
    # An env number envs.py int()s and cannot read, or a port vLLM cannot bind
    ("env[invalid]", "p1.env.VLLM_NIXL_SIDE_CHANNEL_PORT", pair("NixlConnector", p={"env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": "5600-5607"}})),
    ("env[invalid]", "p1.env.VLLM_NIXL_SIDE_CHANNEL_PORT", pair("NixlConnector", p={"env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5600.0}})),
    ("env[invalid]", "p1.env.VLLM_NIXL_SIDE_CHANNEL_PORT", pair("NixlConnector", p={"env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 70000}})),
    ("env[invalid]", "p1.env.VLLM_MOONCAKE_BOOTSTRAP_PORT", pair("MooncakeConnector", version="0.20.0",
                                p={"env": {"VLLM_MOONCAKE_BOOTSTRAP_PORT": "8998.5"}})),
    ("env[invalid]", "p1.env.VLLM_USE_V1", pair(None, version="0.10.0", p={"env": {"VLLM_USE_V1": "true"}})),
    ("env[invalid]", "p1.env.VLLM_MORIIO_NUM_WORKERS", pair("MoRIIOConnector", version="0.20.0", extra=MORIIO_READ,
                                p={"env": {"VLLM_MORIIO_NUM_WORKERS": "two"}})),
    ("env[invalid]", None, pair("NixlConnector", p={"env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": " +5_600 "}})),
    ("env[invalid]", None, pair("MoRIIOConnector", extra=MORIIO_READ,  # 0.23.0+: no longer read (env[ignored])
                                 p={"env": {"VLLM_MORIIO_NUM_WORKERS": "two"}})),
    ("env[invalid]", None, pair(None, p={"env": {"VLLM_USE_V1": "true"}})),  # 0.11.1+: envs.py has no VLLM_USE_V1
    ("env[invalid]", None, pair("MoRIIOConnector", extra=MORIIO_READ,  # MoRIIO never reads the NIXL port
                                 p={"env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": "x"}})),
    ("schema", "p1.tensor_parallel_size", pair(None, p={"tensor_parallel_size": "four"})),
    ("schema", "p1.port", pair(None, p={"port": 70000})),
    ("schema", "p1.kv.kv_rank", pair("NixlConnector", p={"kv.kv_rank": 0})),
    ("schema", "p1.kv", pair(None, p={"kv_transfer_config": "{not json"})),
    ("schema", None, pair(None, p={"kv_transfer_config": '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'})),
    ("schema", None, pair(None, p={"tensor_parallel_size": "4", "port": "8001"})),
    ("schema", "p1.pd_role", flow({"all": {"hosts": {"p1": {"vllm_pd_role": "prefill"}}}})),
    ("unresolved", "p1.tensor_parallel_size", pair(None, p={"tensor_parallel_size": "{{ undefined_var }}"})),
    ("unresolved", None, pair(None, p={"tensor_parallel_size": "{{ 2 * 2 }}"})),
]


@pytest.mark.parametrize(("rule", "at", "hosts"), CASES, ids=row_ids(CASES))
def test_rule_table(rule: str, at: str | None, hosts: str, lint) -> None:
    assert_points(lint(hosts), rule, at, hosts)


def test_unresolved_skips_rules_that_need_the_value(lint) -> None:
    found = lint(pair("NixlConnector", p={"tensor_parallel_size": "{{ nope }}"}, d={"tensor_parallel_size": 3}))
    assert "unresolved" in rules_of(found)
    assert "tp-ratio[nixl]" not in rules_of(found)


def test_lookups_are_not_run(lint, tmp_path) -> None:
    canary = tmp_path / "canary"
    found = lint(pair(None, p={"model": "{{ lookup('pipe', 'touch " + str(canary) + "') }}"}))
    assert not canary.exists()
    assert "unresolved" in rules_of(found)


def test_rendered_template_is_checked(lint) -> None:
    found = lint(pair("NixlConnector", tp=6, p={"tensor_parallel_size": "{{ vllm_tp }}"}, d={"tensor_parallel_size": 4}))
    assert "tp-ratio[nixl]" in rules_of(found)


def test_schema_reports_every_error_at_its_line(lint) -> None:
    found = lint("""\
        all:
          hosts:
            p1:
              vllm_pd_deployment: dep
              vllm_pd_role: prefill
              vllm_tensor_parallel_size: four
              vllm_port: 70000
            d1: {vllm_pd_deployment: dep, vllm_pd_role: decode}
        """)
    schema = sorted((f.origin.line, f.message) for f in found if f.rule == "schema")
    assert [line for line, _ in schema] == [6, 7]
    assert "'four' is not an integer >= 1" in schema[0][1]


# Every finding about a set value points at it (null and booleans carry no origin in Ansible: their key's line)
# and prints it as YAML would. 4.0 is refused: Ansible renders it as "4.0" and vLLM's int() rejects that.
@pytest.mark.parametrize(("line", "at", "message"), [
    ("vllm_tensor_parallel_size: null", "vllm_tensor", "vllm_tensor_parallel_size: null is not an integer >= 1"),
    ("vllm_tensor_parallel_size: true", "vllm_tensor", "vllm_tensor_parallel_size: true is not an integer >= 1"),
    ("vllm_tensor_parallel_size: 4.0", "4.0", "vllm_tensor_parallel_size: 4.0 is not an integer >= 1"),
    ("vllm_tensor_parallel_size: '0'", "'0'", "vllm_tensor_parallel_size: '0' is not an integer >= 1"),
    ("vllm_model_is_mla: null", "vllm_model", "vllm_model_is_mla: null is not true or false"),
    ("vllm_port: false", "vllm_port", "vllm_port: false is not an integer >= 1 and <= 65535 or null"),
    ("vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer, kv_port: false}", "kv_port",
     "vllm_kv_transfer_config.kv_port: false is not an integer >= 1 and <= 65535"),
    ("vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: true}", "kv_role",
     "kv_role true is not one of kv_producer, kv_consumer, kv_both"),
])
def test_set_values_are_reported_where_they_are_set(line: str, at: str, message: str, lint) -> None:
    found = lint("all:\n  vars: {vllm_pd_deployment: dep}\n  hosts: {p1: {vllm_pd_role: prefill}, d1: {}}\n",
                 **{"host_vars__d1.yml": f"vllm_pd_role: decode\n{line}\n"})
    [hit] = [f for f in found if message in f.message]
    assert (hit.origin.file, hit.origin.line, hit.origin.column) == ("host_vars/d1.yml", 2, line.index(at) + 1), hit
    assert "None" not in hit.message and "True" not in hit.message


# An unknown variable is reported at its name (the key), where the editor's squiggle is, not at its value.
@pytest.mark.parametrize(("where", "text", "column"), [
    ("host_vars__p1.yml", "vllm_tensor_paralel_size: 4\n", 1),
    ("group_vars__all.yml", "vllm_pd_deployment: dep\nvllm_tensor_paralel_size: 4\n", 1),
    ("hosts.yml", None, 33),
])
def test_unknown_variable_points_at_its_name(where: str, text: str | None, column: int, lint) -> None:
    hosts = "all:\n  vars: {vllm_pd_deployment: dep}\n  hosts:\n    p1: {vllm_pd_role: prefill, vllm_tensor_paralel_size: 4}\n" \
        if text is None else "all:\n  vars: {vllm_pd_deployment: dep}\n  hosts: {p1: {vllm_pd_role: prefill}}\n"
    found = lint(hosts, **({where: text} if text else {}))
    [hit] = [f for f in found if f.message.startswith("unknown variable 'vllm_tensor_paralel_size'")]
    assert hit.origin.file == where.replace("__", "/") and hit.origin.column == column, hit


_NAMES = ("NIXL", "MoRIIO", "Mooncake", "P2pNccl")


def _one(kv: dict, **own: object) -> str:
    """A prefill p1 alone on its host (and its decode d1 elsewhere) with kv_transfer_config kv."""
    p = {"vllm_pd_role": "prefill", "vllm_kv_transfer_config": kv, **{"vllm_" + k: v for k, v in own.items()}}
    d = {"vllm_pd_role": "decode", "vllm_kv_transfer_config": {**kv, "kv_role": "kv_consumer"}}
    return json.dumps({"all": {"vars": {"vllm_pd_deployment": "dep"}, "hosts": {"p1": p, "d1": d}}})


MOONCAKE = {"kv_connector": "MooncakeConnector", "kv_role": "kv_producer"}
P2P = {"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer", "kv_connector_extra_config": {"http_port": 8000}}


@pytest.mark.parametrize(("hosts", "connector", "words"), [
    (_one(NIXL, port=5600), "NIXL", ["vllm_port", "VLLM_NIXL_SIDE_CHANNEL_PORT"]),
    (_one(NIXL, port=9100, env={"VLLM_NIXL_SIDE_CHANNEL_PORT": "9099"}, data_parallel_size=2), "NIXL",
     ["vllm_port", "VLLM_NIXL_SIDE_CHANNEL_PORT"]),
    (_one(MOONCAKE, port=8998), "Mooncake", ["vllm_port", "VLLM_MOONCAKE_BOOTSTRAP_PORT"]),
    (_one(P2P, version="0.20.0", port=14580, tensor_parallel_size=2), "P2pNccl", ["vllm_port", "kv_port"]),
    (_one(MORIIO_P, port=6301), "MoRIIO", ["vllm_port", "handshake_port"]),
    (_one(MORIIO_P, tensor_parallel_size=2, data_parallel_size=2), "MoRIIO", ["DP rank"]),
    (_one(NIXL, version="0.9.0", data_parallel_size=2), "NIXL", ["DP rank"]),
    (_one(MOONCAKE, version="0.14.0", pipeline_parallel_size=2), "Mooncake", ["PP"]),
])
def test_self_collision_hint_names_the_colliding_connector(hosts: str, connector: str, words: list[str],
                                                           lint) -> None:
    found = [f for f in lint(hosts) if f.rule == "port[collision]"]
    assert found, "no port[collision]"
    for f in found:
        assert connector in f.hint and all(w in f.hint for w in words), f.hint
        assert not [n for n in _NAMES if n != connector and n in f.hint], f.hint


def test_null_list_items_are_reported_at_their_own_line(lint) -> None:
    """A null (or boolean) item of vllm_instances / pdlint_skip, at its own line:col, both loaders
    (the lint fixture holds the fast loader's origins equal to ansible-core's)."""
    found = lint("""\
        all:
          vars: {vllm_pd_deployment: r1}
          hosts:
            p1:
              vllm_pd_role: prefill
              pdlint_skip:
                - gpu[count]
                -
                - ~
              vllm_instances:
                - {pd_role: prefill, port: 8001}
                - null
                - [true, false]
                - true
            d1: {vllm_pd_role: decode}
        """)
    where = {f.message.split(":")[0]: (f.origin.line, f.origin.column) for f in found if f.rule == "schema"}
    assert where == {"pdlint_skip[1]": (8, 10), "pdlint_skip[2]": (9, 11), "vllm_instances[1]": (12, 11),
                     "vllm_instances[2]": (13, 11), "vllm_instances[3]": (14, 11)}, where


@pytest.mark.parametrize("loader", ["fast", "ansible"])
def test_ini_vars_booleans_say_ini_values_are_strings(tmp_path, monkeypatch, capsys, loader: str) -> None:
    """An INI [group:vars] value is a string to Ansible; a boolean or null spelled there is
    reported as such, with how to write the real one (a host-line Python literal is one: no finding)."""
    from pdlint.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts.ini").write_text(
        "[prefill]\np1 vllm_pd_role=prefill vllm_model_is_mla=False\n[decode]\nd1 vllm_pd_role=decode\n"
        "[all:vars]\nvllm_pd_deployment=r1\nvllm_disable_hybrid_kv_cache_manager=false\nvllm_model_has_ssm=Yes\n"
        "vllm_port=null\nvllm_tensor_parallel_size=2\n")
    assert main(["hosts.ini", "--format", "json", "--loader", loader]) == 1
    found = [f for f in json.loads(capsys.readouterr().out) if f["rule"] == "schema"]
    by_name = {f["message"].split(":")[0]: f for f in found}
    assert set(by_name) == {"vllm_disable_hybrid_kv_cache_manager", "vllm_model_has_ssm", "vllm_port"}, found
    for name, f in by_name.items():
        assert "is a string, not" in f["message"] and "INI [group:vars]" in f["hint"], f
        assert f"{name}=" in f["hint"] and f["line"] in (7, 8, 9), f
    assert "not the boolean false" in by_name["vllm_disable_hybrid_kv_cache_manager"]["message"]
    assert "not null" in by_name["vllm_port"]["message"]

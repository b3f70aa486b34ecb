"""Every value of every contract variable: findings or a clean pass, never an internal error.

The builder lets through only what the schema accepts, so a TP of 0 (or -1, 4.0,
true, 10**30, "0") never reaches a rule's arithmetic; the schema rule reports it.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint import cli
from pdlint.contract import HOST_ONLY, KV_TRANSFER_FIELDS, VARIABLES, host_var

CONNECTORS = {
    "NixlConnector": {},
    "MoRIIOConnector": {"http_port": 8000, "read_mode": "true", "handshake_port": 6301, "notify_port": 6401},
    "MooncakeConnector": {},
    "P2pNcclConnector": {"http_port": 8000},
}
EXTRA_KEYS = sorted({k for extra in CONNECTORS.values() for k in extra} | {"backend", "proxy_ping_port"})
ENV_KEYS = ["CUDA_VISIBLE_DEVICES", "VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_NIXL_SIDE_CHANNEL_HOST",
            "VLLM_MOONCAKE_BOOTSTRAP_PORT", "VLLM_MORIIO_CONNECTOR_READ_MODE"]

# Every JSON/YAML type, with the edges of each: 0, negatives, huge, non-finite, digit strings.
scalars = st.one_of(
    st.none(), st.booleans(),
    st.sampled_from([0, -1, 1, 2, 3, 4, 6, 8, 65535, 65536, 65537, 2**31, 2**63, 10**30]),
    st.integers(), st.floats(), st.sampled_from([4.0, 0.0, -0.0, 0.5, 1e300]),
    st.sampled_from(["0", "4", " 8 ", "-1", "4.0", "0x10", "1e3", "٣", "²", "9" * 5000, "", "true", "null",
                     "70000", "0,1,2,3", "0,0", "a,b", ",,", "localhost", "{{ tp }}"]),
    st.text(max_size=6),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=2), max_leaves=5)
# (path below a host's variables, written with the vllm_ name)
TARGETS = ([(host_var(v.name),) for v in VARIABLES] + [(host_var(v.name),) for v in HOST_ONLY]
           + [("pdlint_skip",)] + [("vllm_kv_transfer_config", k) for k in KV_TRANSFER_FIELDS]
           + [("vllm_kv_transfer_config", "kv_connector_extra_config", k) for k in EXTRA_KEYS]
           + [("vllm_env", k) for k in ENV_KEYS] + [("vllm_instances", 0, v.name) for v in VARIABLES if v.in_instances])


def _inventory(connector: str, where: str, target: tuple[Any, ...], value: Any) -> dict[str, str]:
    """A complete deployment (p1 prefill, d1 decode on a shared node), then one value set somewhere."""
    def side(role: str, tp: int) -> dict[str, Any]:
        return {"vllm_pd_role": role, "vllm_tensor_parallel_size": tp, "vllm_kv_transfer_config": {
            "kv_connector": connector, "kv_role": "kv_producer" if role == "prefill" else "kv_consumer",
            "kv_connector_extra_config": dict(CONNECTORS[connector])}}
    common = {"vllm_pd_deployment": "dep", "vllm_model": "meta-llama/Llama-3.3-70B-Instruct", "vllm_node": "n1",
              "vllm_host_gpu_count": 8, "vllm_block_size": 16}
    hosts = {"p1": side("prefill", 2), "d1": {**side("decode", 4), "vllm_port": 8100}}
    if target[0] == "vllm_instances":
        hosts["d1"] = {"vllm_instances": [{k.removeprefix("vllm_"): v for k, v in hosts["d1"].items()}]}
    holder: Any = common if where == "group" and target[0] != "vllm_instances" else hosts["d1"]
    for part in target[:-1]:
        holder = holder.setdefault(part, {}) if isinstance(part, str) else holder[part]
        if not isinstance(holder, (dict, list)):
            return {}
    holder[target[-1]] = value
    return {"hosts.yml": yaml.safe_dump({"all": {"vars": common, "hosts": hosts}}, allow_unicode=True)}


def _lint(files: dict[str, str], *argv: str) -> tuple[int, str, str]:
    base = Path(tempfile.mkdtemp(prefix="pdlint-values-"))
    cwd = os.getcwd()
    try:
        for name, text in files.items():
            (base / name).write_text(text, encoding="utf-8")
        os.chdir(base)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["-f", "json", *argv, "hosts.yml"])
        return code, out.getvalue(), err.getvalue()
    finally:
        os.chdir(cwd)
        shutil.rmtree(base, ignore_errors=True)


EDGES = [0, -1, 2**63, 10**30, 4.0, float("inf"), float("nan"), True, False, None, "0", "-1", "٣", "9" * 5000, "",
         [], {}, [0], {"a": 0}]


def _no_internal_error(connector: str, where: str, target: tuple[Any, ...], value: Any) -> None:
    files = _inventory(connector, where, target, value)
    if not files:
        return
    code, out, err = _lint(files)
    assert "internal error" not in err and "Traceback" not in err, (target, value, err)
    assert code in (0, 1, 2), (code, err)
    if code != 2:
        assert isinstance(json.loads(out), list)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: ".".join(map(str, t)))
def test_edge_values_of_every_variable(target: tuple[Any, ...]) -> None:
    for i, value in enumerate(EDGES):
        _no_internal_error(sorted(CONNECTORS)[i % len(CONNECTORS)], ("host", "group")[i % 2], target, value)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: ".".join(map(str, t)))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(connector=st.sampled_from(sorted(CONNECTORS)), where=st.sampled_from(["host", "group"]), value=values)
def test_no_value_of_any_variable_is_an_internal_error(target: tuple[Any, ...], connector: str, where: str,
                                                       value: Any) -> None:
    _no_internal_error(connector, where, target, value)


# The values the issue names: each is reported by the schema rule, at its line, and no other rule sees it.
@pytest.mark.parametrize("name", ["vllm_tensor_parallel_size", "vllm_pipeline_parallel_size",
                                  "vllm_data_parallel_size", "vllm_nnodes", "vllm_block_size",
                                  "vllm_model_num_attention_heads", "vllm_model_num_kv_heads"])
@pytest.mark.parametrize("value", [0, -4, 2**40, "0", "70000", True, 4.0, None])
def test_out_of_range_sizes_are_schema_errors_at_their_line(name: str, value: Any) -> None:
    files = _inventory("MoRIIOConnector", "host", (name,), value)
    code, out, err = _lint(files)
    assert code == 1, err
    findings = json.loads(out)
    schema = [f for f in findings if f["rule"] == "schema"]
    assert len(schema) == 1 and schema[0]["message"].startswith(f"{name}: "), findings
    assert schema[0]["file"] == "hosts.yml" and schema[0]["line"] is not None


@pytest.mark.parametrize(("tp", "pp", "dp"), [(65536, 2, 1), (4096, 4096, 1), (1024, 1, 1024)])
def test_an_engine_of_too_many_gpus_is_reported_once_not_walked(tp: int, pp: int, dp: int) -> None:
    files = _inventory("P2pNcclConnector", "host", ("vllm_tensor_parallel_size",), tp)
    doc = yaml.safe_load(files["hosts.yml"])
    doc["all"]["hosts"]["d1"].update(vllm_pipeline_parallel_size=pp, vllm_data_parallel_size=dp)
    code, out, err = _lint({"hosts.yml": yaml.safe_dump(doc)})
    assert code == 1, err
    [big] = [f for f in json.loads(out) if "GPUs for one engine" in f["message"]]
    assert big["rule"] == "schema" and f"= {tp * pp * dp} GPUs" in big["message"]

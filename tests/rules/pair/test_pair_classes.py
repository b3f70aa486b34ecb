"""Pair rules judge classes of engines, not prefill x decode host pairs.

A pair verdict reads a few fields of each side (rules/pair/pairs.py pair_key): engines that differ only in where they
listen (vllm_port, the NIXL side channel host and port) or in vllm_env variables no pair check reads are one class,
so a 5,000 x 15,000 deployment whose every host has values of its own is judged once per pair of classes, and its
findings still name every host, at each value's own line.
"""
from __future__ import annotations

import ast
import json
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from pdlint.engine import core as engine
from pdlint.load import select
from pdlint.rules.pair import pairs
from pdlint.vllm.connectors import families
from pdlint.vllm.connectors import pair as vpair

PLUGIN = ROOT / "plugins" / "plugin_utils" / "pdlint"


def _fleet(out: Path, prefill: int, decode: int, odd: dict[str, Any]) -> None:
    """One deployment, every host with its own vllm_port, side channel host and port and UCX/NCCL devices; odd:
    the variables of one decode host (gpu-d00007) that a pair rule does read."""
    (out / "group_vars").mkdir(parents=True)
    (out / "group_vars" / "all.yml").write_text(
        "vllm_pd_deployment: chat\nvllm_model: meta-llama/Llama-3.3-70B-Instruct\nvllm_version: 0.32.0\n"
        "vllm_host_gpu_count: 8\nvllm_dtype: bfloat16\n", encoding="utf-8")
    for role, tp, kv_role in (("prefill", 4, "kv_producer"), ("decode", 6, "kv_consumer")):
        (out / "group_vars" / f"chat_{role}.yml").write_text(
            f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {tp}\n"
            f"vllm_kv_transfer_config: {{kv_connector: NixlConnector, kv_role: {kv_role}}}\n", encoding="utf-8")
    lines = ["all:", "  children:"]
    for role, count, tag in (("prefill", prefill, "p"), ("decode", decode, "d")):
        lines += [f"    chat_{role}:", "      hosts:"]
        for i in range(count):
            host = f"gpu-{tag}{i:05d}"
            own = {"vllm_port": 8000 + i % 1000,
                   "vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": host, "VLLM_NIXL_SIDE_CHANNEL_PORT": str(5600 + i % 97),
                                "UCX_NET_DEVICES": f"mlx5_{i % 7}:1", "NCCL_SOCKET_IFNAME": f"eth{i % 3}"}}
            if host == "gpu-d00007":
                own.update(odd)
            lines.append(f"        {host}: {json.dumps(own)}")
    (out / "hosts.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_5000_x_15000_hosts_with_values_of_their_own_are_judged_per_class(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fleet(tmp_path, 5000, 15000, {"vllm_dtype": "float16"})
    asked: list[tuple[vpair.Side, vpair.Side]] = []
    problems = families.problems

    def counted(p: vpair.Side, d: vpair.Side) -> tuple[vpair.Problem, ...]:
        asked.append((p, d))
        return problems(p, d)

    monkeypatch.setattr(pairs.families, "problems", counted)
    start = time.perf_counter()
    result = engine.lint(select.load([str(tmp_path)], loader="fast"))
    found, topology = result.findings, result.topology
    took = time.perf_counter() - start
    # one prefill class x two decode classes (the float16 host): two Blocks, not 75 million pairs; the vllm layer
    # asked a few times (the two pairs, and the TP sizes the hints try), not once per host pair
    assert sorted((len(b.prefill), len(b.decode)) for group, *_judged in pairs.judged(topology) for b in group) == [
        (5000, 1), (5000, 14999)]
    assert len(asked) < 100, len(asked)
    assert took < 120, took  # main did not finish; seconds here (the machine is shared: a loose bound)
    by_rule = {f.rule: f for f in found}
    heads = by_rule["tp[heads]"]
    assert (str(heads.origin), heads.message, heads.hint, len(heads.hosts)) == (
        f"{tmp_path}/group_vars/chat_decode.yml:2:28", "64 attention heads are not divisible by TP 6",
        "use TP 4 or 8", 15000)
    dtype = by_rule["pd-mismatch[dtype]"]  # the one decode host's own line, with every prefill host of its pairs
    line = (tmp_path / "hosts.yml").read_text(encoding="utf-8").splitlines().index(
        next(text for text in (tmp_path / "hosts.yml").read_text(encoding="utf-8").splitlines()
             if text.lstrip().startswith("gpu-d00007:"))) + 1
    column = (tmp_path / "hosts.yml").read_text(encoding="utf-8").splitlines()[line - 1].index('"float16"') + 1
    assert (str(dtype.origin), dtype.message, len(dtype.hosts)) == (
        f"{tmp_path}/hosts.yml:{line}:{column}",
        "decode dtype 'float16' differs from prefill dtype 'bfloat16' (NIXL in vLLM 0.32.0 hashes it at handshake: "
        "\"NIXL compatibility hash mismatch\")", 5001)
    assert "gpu-d00007" in dtype.hosts and "gpu-d00008" not in dtype.hosts


_MODELS = ("meta-llama/Llama-3.3-70B-Instruct", "google/gemma-3-27b-it", "deepseek-ai/DeepSeek-R1", "Qwen/Qwen3-8B")
_CONNECTORS = ("NixlConnector", "MoRIIOConnector", "MooncakeConnector", "P2pNcclConnector")


def _mixed(out: Path, seed: int) -> None:
    """A deployment per connector family, hosts with per-host listeners and env, and now and then a value a pair
    rule reads (TP, block size, dtype, HMA, KV cache layout, MoRIIO read mode, version, connector) of their own,
    set inline or in a host_vars file (other origins)."""
    rng = random.Random(seed)
    (out / "host_vars").mkdir(parents=True)
    hosts: dict[str, Any] = {}
    for dep, connector in enumerate(_CONNECTORS):
        model = _MODELS[(dep + seed) % len(_MODELS)]
        for role, count in (("prefill", rng.randint(3, 9)), ("decode", rng.randint(3, 12))):
            for i in range(count):
                host = f"h{dep}{role[0]}{i}"
                own: dict[str, Any] = {
                    "vllm_pd_deployment": f"dep{dep}", "vllm_pd_role": role, "vllm_model": model,
                    "vllm_version": "0.32.0", "vllm_tensor_parallel_size": rng.choice((2, 4)) if role == "prefill"
                    else 4, "vllm_port": 8000 + rng.randrange(3), "vllm_host_gpu_count": 8,
                    "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": (
                        "kv_producer" if role == "prefill" else "kv_consumer")},
                    "vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": host if rng.random() > 0.1 else "localhost",
                                 "VLLM_NIXL_SIDE_CHANNEL_PORT": str(5600 + rng.randrange(3)),
                                 "UCX_NET_DEVICES": f"mlx5_{i}:1"}}
                pick = rng.random()
                if pick < 0.08:
                    own["vllm_tensor_parallel_size"] = rng.choice((1, 3, 6, 8))
                elif pick < 0.14:
                    own["vllm_block_size"] = rng.choice((16, 32, 64))
                elif pick < 0.2:
                    own["vllm_dtype"] = rng.choice(("float16", "bfloat16"))
                elif pick < 0.25:
                    own["vllm_disable_hybrid_kv_cache_manager"] = rng.choice((True, False))
                elif pick < 0.3:
                    own["vllm_env"]["VLLM_KV_CACHE_LAYOUT"] = rng.choice(("HND", "NHD"))
                elif pick < 0.34:
                    own["vllm_kv_transfer_config"]["kv_connector_extra_config"] = {"read_mode": "true"}
                elif pick < 0.38:
                    own["vllm_version"] = "0.31.0"
                elif pick < 0.41:
                    own["vllm_kv_transfer_config"]["kv_connector"] = rng.choice(_CONNECTORS)
                if rng.random() < 0.3:
                    (out / "host_vars" / f"{host}.yml").write_text(json.dumps(own), encoding="utf-8")
                    own = {}
                hosts[host] = own
    (out / "hosts.yml").write_text(json.dumps({"all": {"hosts": hosts}}, indent=1), encoding="utf-8")


@pytest.mark.parametrize("seed", range(6))
def test_classes_judge_as_each_engine_pair_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """The findings with pair classes are those of judging every engine pair apart (a class per engine): the pair
    key leaves out nothing a pair rule reads."""
    _mixed(tmp_path, seed)
    loaded = select.load([str(tmp_path)], loader="fast")
    result = engine.lint(loaded)
    classes, topology = result.findings, result.topology
    assert any(len(b.prefill) * len(b.decode) > 1 for group, *_judged in pairs.judged(topology) for b in group)
    monkeypatch.setattr(pairs, "pair_key", lambda inst: inst.label)  # every engine its own class
    result = engine.lint(select.load([str(tmp_path)], loader="fast"))
    one_by_one, topology = result.findings, result.topology
    assert all(len(b.prefill) * len(b.decode) == 1 for group, *_judged in pairs.judged(topology) for b in group)
    assert [f.as_dict() for f in classes] == [f.as_dict() for f in one_by_one]
    assert any(f.rule.startswith(("tp-ratio[", "pd-mismatch[", "deployment[connector]")) for f in classes)


# The vllm_env variables the rules read that no pair check reads: each is read host by host (the listeners of
# ports.py and rules/placement/network.py, the devices of rules/placement/gpu.py, a start check of rules/per_engine/connector.py or rules/per_engine/env.py).
PER_HOST_ENV = frozenset((
    "VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_MOONCAKE_BOOTSTRAP_PORT", "DYN_SYSTEM_PORT",
    "CUDA_VISIBLE_DEVICES", "VLLM_USE_V1", "VLLM_SSM_CONV_STATE_LAYOUT", "VLLM_MORIIO_QP_PER_TRANSFER",
    "VLLM_MORIIO_POST_BATCH_SIZE", "VLLM_MORIIO_NUM_WORKERS"))
# The modules whose code decides a pair verdict (vllm/connectors/families.py's table and what it calls, the pair rules).
PAIR_MODULES = ("vllm/connectors/pair.py", "vllm/connectors/families.py", "vllm/connectors/nixl/__init__.py", "vllm/connectors/nixl/layout.py",
                "vllm/connectors/nixl/pp.py", "vllm/connectors/moriio/__init__.py", "vllm/connectors/mooncake.py",
                "vllm/connectors/p2p.py", "vllm/model/pp_stages.py", "vllm/model/layers.py", "vllm/model/hma.py",
                "vllm/connectors/nixl/channel.py", "vllm/connectors/view.py", "vllm/connectors/composite.py", "rules/pair/pairs.py",
                "rules/pair/pd_mismatch_hashed.py", "rules/pair/pd_mismatch_layout.py", "rules/pair/deployment.py",
                "rules/pair/tp_ratio.py", "rules/pair/kv_heads.py")
_ENV_NAME = re.compile(r"^(?:env\.)?((?:VLLM|DYN|UCX|NCCL|CUDA|MC|MORI)_[A-Z0-9_]+)$")


def _env_names(path: Path) -> set[str]:
    return {m.group(1) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (m := _ENV_NAME.match(node.value))}


def test_every_env_name_the_rules_read_is_a_pair_one_or_read_per_host() -> None:
    """A variable a pair check reads must be in vllm/connectors/pair.py PAIR_ENV (else the pair class would mix engines that
    differ in it); one read per host must not be read by a pair check (else the class would be wrong)."""
    every = set().union(*(_env_names(p) for p in [*PLUGIN.glob("vllm/**/*.py"), *PLUGIN.glob("rules/*.py")]
                          if p.name not in ("env_values.py",) and not p.match("moriio/config.py")))  # env[*]'s tables of names
    assert every - set(vpair.PAIR_ENV) - PER_HOST_ENV == set()
    in_pair_code = set().union(*(_env_names(PLUGIN / m) for m in PAIR_MODULES))
    assert in_pair_code & PER_HOST_ENV == set(), "a pair check reads a per-host variable: add it to PAIR_ENV"
    assert set(vpair.PAIR_ENV) <= in_pair_code | every

"""an engine's own shape: the GPUs it lists, vLLM's DP / node checks, one engine over several hosts."""
from __future__ import annotations

from typing import Any

import pytest
from inv import assert_points, flow, row_ids

from pdlint.engine import core as engine
from pdlint.finding import Finding
from pdlint.hostvars import HostVars

Hosts = dict[str, dict[str, Any]]


def check(hosts: Hosts, **common: Any) -> list[Finding]:
    """Findings of hosts (inventory names without vllm_) in deployment 'dep', with common values on every host."""
    built = []
    for name, own in hosts.items():
        values = {"vllm_pd_deployment": "dep", **{f"vllm_{k}": v for k, v in {**common, **own}.items()}}
        built.append(HostVars(name, values))
    return engine.lint(built).findings


def inventory(hosts: Hosts, **common: Any) -> str:
    """hosts.yml of what check() builds: hosts in deployment 'dep', with common values on every host."""
    return flow({"all": {"hosts": {name: {"vllm_pd_deployment": "dep", **{f"vllm_{k}": v for k, v in {
        **common, **own}.items()}} for name, own in hosts.items()}}})


def ids(found: list[Finding]) -> set[str]:
    return {f.rule for f in found}


P, D = {"pd_role": "prefill"}, {"pd_role": "decode"}
CVD = "CUDA_VISIBLE_DEVICES"

CASES: list[tuple[str, str | None, Hosts, dict[str, Any]]] = [
    # (rule, where it points (inv.where's path in inventory(hosts, **common); None: must not fire), hosts, common)
    # Item 10: fewer GPUs listed than used is an error, more only a warning of its own.
    ("gpu[count]", "p1.env.CUDA_VISIBLE_DEVICES", {"p1": {**P, "tensor_parallel_size": 4, "env": {CVD: "0,1"}}, "d1": D}, {}),
    ("gpu[count]", None, {"p1": {**P, "tensor_parallel_size": 2, "env": {CVD: "0,1,2,3"}}, "d1": D}, {}),
    ("gpu[unused]", "p1.env.CUDA_VISIBLE_DEVICES", {"p1": {**P, "tensor_parallel_size": 2, "env": {CVD: "0,1,2,3"}}, "d1": D}, {}),
    ("gpu[unused]", None, {"p1": {**P, "tensor_parallel_size": 2, "env": {CVD: "4,5"}}, "d1": D}, {}),
    ("gpu[unused]", None, {"p1": {**P, "tensor_parallel_size": 4, "env": {CVD: "0,1"}}, "d1": D}, {}),
    # Item 4: ParallelConfig / EngineArgs.
    ("parallel[dp-local]", "p1.data_parallel_size_local", {"p1": {**P, "data_parallel_size": 2, "data_parallel_size_local": 3}, "d1": D}, {}),
    ("parallel[dp-local]", "p1.data_parallel_size_local", {"p1": {**P, "data_parallel_size": 1, "data_parallel_size_local": 8}, "d1": D}, {}),
    ("parallel[dp-local]", None, {"p1": {**P, "data_parallel_size": 8, "data_parallel_size_local": 8}, "d1": D}, {}),
    ("parallel[dp-local]", "p1.data_parallel_size_local", {"p1": {**P, "data_parallel_size": 2, "data_parallel_size_local": 1}, "d1": D},
     {"version": "0.8.5"}),  # no such flag yet
    ("parallel[dp-rank]", "p1.data_parallel_start_rank", {"p1": {**P, "data_parallel_size": 8, "data_parallel_size_local": 4,
                                        "data_parallel_start_rank": 6}, "d1": D}, {}),
    ("parallel[dp-rank]", "p1.data_parallel_start_rank", {"p1": {**P, "data_parallel_size": 3, "data_parallel_size_local": 1,
                                        "data_parallel_start_rank": 3}, "d1": D}, {}),
    ("parallel[dp-rank]", None, {"p1": {**P, "data_parallel_size": 8, "data_parallel_size_local": 4,
                                         "data_parallel_start_rank": 4, "instance_id": "p"},
                                  "p2": {**P, "data_parallel_size": 8, "data_parallel_size_local": 4,
                                         "instance_id": "p"}, "d1": D}, {}),
    # Without --data-parallel-size-local vLLM ignores the start rank (create_engine_config).
    ("parallel[dp-rank]", None, {"p1": {**P, "data_parallel_size": 2, "data_parallel_start_rank": 5}, "d1": D}, {}),
    ("parallel[nnodes]", "p1.nnodes", {"p1": {**P, "tensor_parallel_size": 6, "nnodes": 4, "instance_id": "p"},
                                "d1": D}, {}),
    ("parallel[nnodes]", "p1.nnodes", {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p"},
                                "p2": {**P, "tensor_parallel_size": 8, "nnodes": 2, "node_rank": 1,
                                       "instance_id": "p"}, "d1": D}, {"version": "0.10.2"}),
    ("parallel[nnodes]", None, {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p"},
                                 "p2": {**P, "tensor_parallel_size": 8, "nnodes": 2, "node_rank": 1,
                                        "instance_id": "p"}, "d1": D}, {"version": "0.11.1"}),
    ("parallel[node-rank]", "p1.node_rank", {"p1": {**P, "tensor_parallel_size": 4, "nnodes": 2, "node_rank": 3}, "d1": D},
     {}),
    ("parallel[node-rank]", None, {"p1": {**P, "tensor_parallel_size": 4, "nnodes": 2, "node_rank": 1}, "d1": D},
     {}),
    # Item 5: one engine over several hosts.
    ("multinode[nodes]", "p1.nnodes", {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2}, "d1": D}, {}),
    ("multinode[nodes]", "p2.instance_id", {"p1": {**P, "instance_id": "p"}, "p2": {**P, "instance_id": "p"}, "d1": D}, {}),
    ("multinode[nodes]", "p1.nnodes", {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 3, "instance_id": "p"},
                                "p2": {**P, "tensor_parallel_size": 8, "nnodes": 3, "node_rank": 2,
                                       "instance_id": "p"}, "d1": D}, {}),
    ("multinode[nodes]", None, {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p"},
                                 "p2": {**P, "tensor_parallel_size": 8, "nnodes": 2, "node_rank": 1,
                                        "instance_id": "p"}, "d1": D}, {}),
    ("multinode[shape]", "p2.tensor_parallel_size", {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p"},
                                "p2": {**P, "tensor_parallel_size": 4, "nnodes": 2, "node_rank": 1,
                                       "instance_id": "p"}, "d1": D}, {}),
    ("multinode[shape]", "p2.model", {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p"},
                                "p2": {**P, "tensor_parallel_size": 8, "nnodes": 2, "node_rank": 1,
                                       "model": "Qwen/Qwen2.5-7B-Instruct", "instance_id": "p"}, "d1": D},
     {"model": "meta-llama/Llama-3.1-8B-Instruct"}),
    ("multinode[shape]", "p2.nnodes", {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p"},
                                "p2": {**P, "tensor_parallel_size": 8, "nnodes": 4, "node_rank": 1,
                                       "instance_id": "p"}, "d1": D}, {}),
    ("multinode[shape]", None, {"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2, "instance_id": "p",
                                        "port": 8000},
                                 "p2": {**P, "tensor_parallel_size": 8, "nnodes": 2, "node_rank": 1, "port": None,
                                        "instance_id": "p"}, "d1": D}, {}),
    ("multinode[dp-ranks]", "p2.instance_id", {"p1": {**P, "data_parallel_size": 2, "instance_id": "p"},
                                   "p2": {**P, "data_parallel_size": 2, "instance_id": "p"}, "d1": D}, {}),
    ("multinode[dp-ranks]", "p1.data_parallel_size", {"p1": {**P, "data_parallel_size": 4, "data_parallel_size_local": 2}, "d1": D},
     {}),
    ("multinode[dp-ranks]", "p2.data_parallel_start_rank", {"p1": {**P, "data_parallel_size": 4, "data_parallel_size_local": 3,
                                          "instance_id": "p"},
                                   "p2": {**P, "data_parallel_size": 4, "data_parallel_size_local": 2,
                                          "data_parallel_start_rank": 2, "instance_id": "p"}, "d1": D}, {}),
    ("multinode[dp-ranks]", None, {"p1": {**P, "data_parallel_size": 4, "data_parallel_size_local": 3,
                                           "instance_id": "p"},
                                    "p2": {**P, "data_parallel_size": 4, "data_parallel_size_local": 1,
                                           "data_parallel_start_rank": 3, "instance_id": "p"}, "d1": D}, {}),
    ("multinode[dp-ranks]", None, {"p1": {**P, "data_parallel_size": 4}, "d1": D}, {}),
]


@pytest.mark.parametrize(("rule", "at", "hosts", "common"), CASES, ids=row_ids(CASES))
def test_rule(rule: str, at: str | None, hosts: Hosts, common: dict[str, Any], lint) -> None:
    text = inventory(hosts, **common)
    assert_points(lint(text), rule, at, text)


def test_more_gpus_listed_is_a_warning_not_gpu_count() -> None:
    found = check({"p1": {**P, "tensor_parallel_size": 2, "env": {CVD: "0,1,2,3"}}, "d1": D})
    unused = [f for f in found if f.rule == "gpu[unused]"]
    assert [f.severity for f in unused] == ["warning"] and "gpu[count]" not in ids(found)
    assert "2 stay idle" in unused[0].message


def test_parallel_messages_cite_the_release_and_source() -> None:
    found = check({"p1": {**P, "data_parallel_size": 2, "data_parallel_size_local": 4}, "d1": D},
                  version="0.10.0")
    (dp,) = [f for f in found if f.rule == "parallel[dp-local]"]
    assert "local DP 4 is more than DP 2" in dp.message and "config.py ParallelConfig.__post_init__" in dp.message
    found = check({"p1": {**P, "data_parallel_size": 2, "data_parallel_size_local": 4}, "d1": D})
    (dp,) = [f for f in found if f.rule == "parallel[dp-local]"]
    assert "config/parallel.py ParallelConfig._validate_parallel_config" in dp.message


def test_the_missing_node_is_named_and_the_wait_is_said() -> None:
    found = check({"p1": {**P, "tensor_parallel_size": 8, "nnodes": 2}, "d1": D})
    (nodes,) = [f for f in found if f.rule == "multinode[nodes]"]
    assert "no host of node rank 1" in nodes.message and "waits forever" in nodes.message


def test_start_rank_zero_means_infer_before_0_28() -> None:
    # 0.11.1 - 0.27.1: `start_rank or inferred`; 0.28.0 on: a given 0 is 0 (EngineArgs.create_engine_config).
    from pdlint.vllm import parallel_config as pc
    from pdlint.vllm.releases import R

    shape = pc.Shape(tp=8, dp=2, dp_local=1, dp_start=0, nnodes=2, node_rank=1)
    assert pc.dp_rank(R("0.27.1"), shape) == 1 and pc.dp_rank(R("0.28.0"), shape) == 0


def _workers(hosts: Hosts) -> list[tuple[str, int]]:
    from pdlint.explain.compute import explain
    from pdlint.topology.build import build

    built = [HostVars(n, {"vllm_pd_deployment": "dep", **{f"vllm_{k}": v for k, v in own.items()}})
             for n, own in hosts.items()]
    topo, _ = build(built)
    view = explain(topo, [])
    return sorted({(w.host, w.dp) for dep in view.deployments for e in dep.engines for w in e.workers})


def test_explain_draws_only_the_dp_ranks_vllm_runs() -> None:
    # Start rank 3 + local DP 2 of DP 4: vLLM asserts in the engine core of rank 4; explain shows ranks 3 only.
    p = {**P, "data_parallel_size": 4, "data_parallel_size_local": 2, "data_parallel_start_rank": 3}
    assert _workers({"p1": p, "d1": D}) == [("d1", 0), ("p1", 3)]
    # Without --data-parallel-size-local vLLM ignores the start rank: the host runs DP ranks 0 .. DP - 1.
    p = {**P, "data_parallel_size": 2, "data_parallel_start_rank": 1}
    assert _workers({"p1": p, "d1": D}) == [("d1", 0), ("p1", 0), ("p1", 1)]

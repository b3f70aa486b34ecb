"""explain shows the lint's verdict and classes of pairs.

A pair is "rejected" in every explain format exactly when the lint reports an error naming hosts of both its sides
(a pair rule's finding), and each such error is a fails line of its why-block; over this grid of mismatches and the
why-block grid of tests/explain/test_explain_why.py. Classes: engines alike in what the pair rules read are one view naming
them all; --all-pairs lists each pair, with the same verdicts.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_explain_why import CASES as WHY_CASES
from test_explain_why import _host as why_host
from test_explain_why import _name as why_name

from pdlint.cli import main
from pdlint.engine import core as engine
from pdlint.explain import as_json, markdown, text
from pdlint.explain import html as as_html
from pdlint.explain.compute import explain
from pdlint.explain.model import Explanation, PairView
from pdlint.finding import Finding
from pdlint.load import select

BASE = {"vllm_model": "meta-llama/Llama-3.1-8B-Instruct", "vllm_tensor_parallel_size": 2}
# (name, connector, release, prefill's own values, decode's own values): each a way two sides do not pair, or do
MISMATCHES = [
    ("same", "NixlConnector", "0.33.0", {}, {}),
    ("hma-off-prefill", "NixlConnector", "0.33.0", {"vllm_disable_hybrid_kv_cache_manager": True}, {}),
    ("hma-on-decode", "NixlConnector", "0.25.0", {"vllm_model": "openai/gpt-oss-20b"},
     {"vllm_model": "openai/gpt-oss-20b", "vllm_disable_hybrid_kv_cache_manager": True}),
    ("dtype", "NixlConnector", "0.33.0", {"vllm_dtype": "float16"}, {"vllm_dtype": "bfloat16"}),
    ("kv-cache-dtype", "NixlConnector", "0.31.0", {"vllm_kv_cache_dtype": "fp8"}, {}),
    ("model", "NixlConnector", "0.33.0", {}, {"vllm_model": "/models/llama-3.1-8b"}),
    ("version", "NixlConnector", "0.33.0", {"vllm_version": "0.32.0"}, {}),
    ("connector", "NixlConnector", "0.33.0", {}, {"vllm_kv_transfer_config": {
        "kv_connector": "MooncakeConnector", "kv_role": "kv_consumer"}}),
    ("tp-ratio", "NixlConnector", "0.9.0", {}, {"vllm_tensor_parallel_size": 4}),
    ("p2p-tp", "P2pNcclConnector", "0.20.0", {}, {"vllm_tensor_parallel_size": 4}),
    ("block-size", "NixlConnector", "0.33.0", {"vllm_block_size": 32}, {"vllm_block_size": 16}),
    ("moriio-tp", "MoRIIOConnector", "0.33.0", {}, {"vllm_tensor_parallel_size": 4}),
]


def _mismatch_hosts() -> dict[str, dict[str, Any]]:
    hosts = {}
    for name, connector, release, p, d in MISMATCHES:
        for role, own in (("prefill", p), ("decode", d)):
            hosts[f"{name}-{role[0]}"] = {
                "vllm_pd_deployment": name, "vllm_pd_role": role, "vllm_version": release, **BASE,
                "vllm_kv_transfer_config": {"kv_connector": connector,
                                            "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"},
                "vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": f"{name}-{role[0]}.fleet"}, **own}
    return hosts


def _grid(path: Path, hosts: dict[str, dict[str, Any]]) -> tuple[list[Finding], Explanation]:
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False), encoding="utf-8")
    loaded = select.load([str(path)], loader="fast")
    result = engine.lint(loaded)
    found, topology = result.findings, result.topology
    return found, explain(topology, found, loaded)


@pytest.fixture(scope="module")
def grids(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[list[Finding], Explanation]]:
    why_hosts = {f"{why_name(c)}-{role[0]}": why_host(c, role) for c in WHY_CASES for role in ("prefill", "decode")}
    return [_grid(tmp_path_factory.mktemp("mismatch") / "hosts.yml", _mismatch_hosts()),
            _grid(tmp_path_factory.mktemp("why") / "hosts.yml", why_hosts)]


# The rules that judge a prefill/decode pair (README's rule table: the cross-instance families); an engine's own
# start checks (connector[config], tp[heads], ...) are its engine's, even merged over both hosts of one line.
PAIR_RULES = ("tp-ratio[", "kv-heads[", "pd-mismatch[", "deployment[connector]")


def _pair_errors(found: list[Finding], deployment: str, pair: PairView) -> list[Finding]:
    """The lint's pair-rule errors naming a host of each side of the pair (each grid engine is one host, named as
    it)."""
    return [f for f in found if f.deployment == deployment and f.severity == "error" and f.rule.startswith(PAIR_RULES)
            and pair.prefill in f.hosts and pair.decode in f.hosts]


def test_pair_status_is_the_lints_verdict_on_every_grid_pair(grids: list[tuple[list[Finding], Explanation]]) -> None:
    seen = {"ok": 0, "rejected": 0}
    for found, expl in grids:
        for dep in expl.deployments:
            for pair in dep.pairs:
                errors = _pair_errors(found, dep.name, pair)
                assert pair.status == ("rejected" if errors else "ok"), (dep.name, pair.status, errors)
                seen[pair.status] += 1
                if pair.why:  # each error is a verdict line of the why-block, citing vLLM's source
                    lines = {line.text.split(": ", 1)[-1] if line.text.startswith(("prefill: ", "decode: "))
                             else line.text: line for dim in pair.why for line in dim.lines if line.verdict}
                    for f in errors:
                        assert f.message in lines and lines[f.message].verdict in ("fails", "undetected"), f
                        assert lines[f.message].source, lines[f.message]
    assert seen["ok"] > 10 and seen["rejected"] > 10, seen  # the grids are not vacuous


@pytest.mark.parametrize(("name", "rule", "dimension"), [
    ("hma-off-prefill", "pd-mismatch[hma]", "HMA"), ("dtype", "pd-mismatch[dtype]", "KV transfer"),
    ("model", "pd-mismatch[model]", "KV transfer"), ("tp-ratio", "tp-ratio[nixl]", "KV transfer"),
    ("p2p-tp", "tp-ratio[p2p-nccl]", "KV transfer"),
    ("version", "pd-mismatch[vllm-version]", "KV transfer")])
def test_the_failing_line_is_in_its_dimension(grids: list[tuple[list[Finding], Explanation]], name: str, rule: str,
                                              dimension: str) -> None:
    found, expl = grids[0]
    pair = next(d for d in expl.deployments if d.name == name).pairs[0]
    (error,) = [f for f in _pair_errors(found, name, pair) if f.rule == rule]
    dim = next(d for d in pair.why if d.name == dimension)
    # "vLLM will not detect" where the release has no check (NIXL 0.9.0 assumes equal TP): the message says so
    kind = "undetected" if "does not check" in error.message or "not checked" in error.message else "fails"
    assert [line.verdict for line in dim.lines if line.text == error.message] == [kind]
    assert not any(line.verdict == "works" for line in dim.lines), dim


def test_every_format_says_rejected(grids: list[tuple[list[Finding], Explanation]]) -> None:
    _found, expl = grids[0]
    hma = Explanation(tuple(d for d in expl.deployments if d.name == "hma-off-prefill"), ())
    assert "pair hma-off-prefill-p -> hma-off-prefill-d: REJECTED" in text.render(hma)
    assert "| `hma-off-prefill-p` -> `hma-off-prefill-d` | **rejected** |" in markdown.render(hma)
    assert '<span class="rejected">rejected</span>' in as_html.render(hma)
    assert [p["status"] for d in json.loads(as_json.render(hma))["deployments"] for p in d["pairs"]] == ["rejected"]
    hma_block = text.render(hma).split("    HMA\n", 1)[1].split("    model kind\n", 1)[0]
    assert "fails: hybrid KV cache manager is off on prefill but on on decode" in hma_block
    assert "works" not in hma_block


def _fleet(path: Path) -> None:
    """3 prefill x 5 decode engines alike in what pair rules read, each host listening on ports of its own."""
    hosts = {f"{role[0]}{i}": {"vllm_pd_role": role, "vllm_port": 8000 + i,
                               "vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": f"10.0.0.{i}",
                                            "UCX_NET_DEVICES": f"mlx5_{i}"},
                               "vllm_tensor_parallel_size": 2 if role == "prefill" else 4}
             for role, count in (("prefill", 3), ("decode", 5)) for i in range(count)}
    hosts["d4"]["vllm_tensor_parallel_size"] = 3  # a class of its own, rejected (tp-ratio, heads)
    doc = {"all": {"vars": {"vllm_pd_deployment": "chat", "vllm_model": "Qwen/Qwen3-8B", "vllm_version": "0.33.0",
                            "vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}},
                   "hosts": hosts}}
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_explain_shows_classes_of_pairs_and_all_pairs_on_demand(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _fleet(tmp_path / "hosts.yml")
    assert main(["explain", "-f", "json", str(tmp_path / "hosts.yml")]) == 0
    classes = json.loads(capsys.readouterr().out)["deployments"][0]["pairs"]
    assert [(p.get("prefill_engines"), p.get("decode_engines"), p["status"]) for p in classes] == [
        (["p0", "p1", "p2"], ["d0", "d1", "d2", "d3"], "ok"), (["p0", "p1", "p2"], ["d4"], "rejected")]
    assert main(["explain", "--all-pairs", "-f", "json", str(tmp_path / "hosts.yml")]) == 0
    each = json.loads(capsys.readouterr().out)["deployments"][0]["pairs"]
    assert [(p["prefill"], p["decode"], p["status"]) for p in each] == [
        (f"p{i}", f"d{j}", "rejected" if j == 4 else "ok") for i in range(3) for j in range(5)]
    assert not any("prefill_engines" in p or "decode_engines" in p for p in each)
    assert main(["explain", str(tmp_path / "hosts.yml")]) == 0
    shown = capsys.readouterr().out
    assert "  12 pairs p0 and 2 more -> d0 and 3 more: ok (NixlPullConnector, decode reads, vLLM 0.33.0)" in shown
    assert "    prefill (3): p0, p1, p2\n    decode (4): d0, d1, d2, d3\n" in shown
    assert "  3 pairs p0 and 2 more -> d4: REJECTED" in shown

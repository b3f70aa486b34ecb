"""explain's per-pair why-block (HMA, model kind, PP/DP) against the rules' findings over a grid.

One inventory holds a deployment per case: PP 1/2 per side x HMA unset/off/on x a full-attention, a sliding-window
and a Mamba/SSM-hybrid model x NIXL pull/push, Mooncake, MoRIIO read/write x two releases. Each verdict explain
shows (fails / vLLM will not detect) must be a finding the rules reported for that pair, and each finding of the
dimensions must be one of explain's verdicts; a dimension says "works" exactly when it has no verdict.
"""
from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, readme_snippet

from pdlint.cli import main
from pdlint.engine import core as engine
from pdlint.explain import as_json, markdown, text
from pdlint.explain import html as as_html
from pdlint.explain.compute import explain
from pdlint.explain.model import DeploymentView, Dimension, Explanation, PairView
from pdlint.finding import Finding
from pdlint.load import select

RELEASES = ("0.25.0", "0.31.0")
MODELS = {"full": "meta-llama/Llama-3.1-8B-Instruct", "sliding": "openai/gpt-oss-20b", "linear": "Qwen/Qwen3.5-35B-A3B",
          "mamba": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "mla": "deepseek-ai/DeepSeek-V3"}
_PROXY = {"http_port": 8000, "proxy_ip": "10.0.0.9", "proxy_ping_port": 36367}  # MoRIIO up to 0.27.1 reads all three
HMA = {"unset": None, "off": True, "on": False}  # vllm_disable_hybrid_kv_cache_manager
CONNECTORS = {"nixl-pull": ("NixlConnector", {}), "nixl-push": ("NixlPushConnector", {}),
              "mooncake": ("MooncakeConnector", {}),
              "moriio-read": ("MoRIIOConnector", {**_PROXY, "read_mode": "true"}),
              "moriio-write": ("MoRIIOConnector", {**_PROXY, "read_mode": "false"})}
PPS = ((1, 1), (2, 1), (1, 2), (2, 2))
# DP per side too: 2 on one side (one instance, so its DP ranks share a host) with PP 1 and 2
DPS = ((1, 1), (2, 1), (1, 2))
CASES = [(*case, (1, 1)) for case in itertools.product(RELEASES, MODELS, HMA, CONNECTORS, PPS)] + [
    (*case, dps) for case in itertools.product(RELEASES, ("full",), ("unset",), CONNECTORS, ((1, 1), (2, 2)))
    for dps in DPS[1:]]
Case = tuple[str, str, str, str, tuple[int, int], tuple[int, int]]
# The findings of the why-block's dimensions: every connector[config] finding (the grid sets no other bad connector
# setting), every port collision (one instance per host: only its own listeners collide), and the pair problems that
# name PP or DP.
PARALLEL_WORDS = ("pipeline_parallel_size", "PP ", " DP ", "DP rank")
MODEL_WORDS = ("hybrid Mamba/KDA",)  # MoRIIO's hybrid-model pair problems (moriio.HYBRID): the model-kind block


def _name(case: Case) -> str:
    release, model, hma, conn, (pp_p, pp_d), (dp_p, dp_d) = case
    return f"{release}-{model}-{hma}-{conn}-pp{pp_p}{pp_d}" + (f"-dp{dp_p}{dp_d}" if dp_p * dp_d > 1 else "")


def _host(case: Case, role: str) -> dict[str, Any]:
    release, model, hma, conn, pps, dps = case
    cls, extra = CONNECTORS[conn]
    out: dict[str, Any] = {
        "vllm_pd_deployment": _name(case), "vllm_pd_role": role, "vllm_version": release, "vllm_model": MODELS[model],
        "vllm_tensor_parallel_size": 2, "vllm_pipeline_parallel_size": pps[role == "decode"],
        "vllm_data_parallel_size": dps[role == "decode"],
        "vllm_kv_transfer_config": {"kv_connector": cls, "kv_role": "kv_producer" if role == "prefill" else
                                    "kv_consumer", **({"kv_connector_extra_config": extra} if extra else {})}}
    if HMA[hma] is not None:
        out["vllm_disable_hybrid_kv_cache_manager"] = HMA[hma]
    return out


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Finding], dict[str, PairView]]:
    hosts = {f"{_name(c)}-{role[0]}": _host(c, role) for c in CASES for role in ("prefill", "decode")}
    path: Path = tmp_path_factory.mktemp("why") / "hosts.yml"
    # block YAML: each value has its own line, so the two sides' findings keep their own origins (no merging)
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False), encoding="utf-8")
    loaded = select.load([str(path)], loader="fast")
    result = engine.lint(loaded)
    found, topology = result.findings, result.topology
    expl = explain(topology, found, loaded)
    pairs = {dep.name: dep.pairs[0] for dep in expl.deployments}
    return found, pairs


def _verdicts(dim: Dimension) -> list[str]:
    """The messages of the dimension's verdicts, once per side that shows them (a finding per engine)."""
    return [line.text.split(": ", 1)[1] if line.text.startswith(("prefill: ", "decode: ")) else line.text
            for line in dim.lines if line.verdict in ("fails", "undetected")]


PER_ENGINE = ("connector[config]", "port[collision]")


def _belongs(f: Finding) -> bool:
    if f.rule in PER_ENGINE:
        return True
    return f.rule.startswith("tp-ratio[") and any(w in f.message for w in (*PARALLEL_WORDS, *MODEL_WORDS))


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_why_verdicts_are_the_rules_findings(grid: tuple[list[Finding], dict[str, PairView]],
                                             case: Case) -> None:
    found, pairs = grid
    view = pairs[_name(case)]
    names = [d.name for d in view.why]  # KV transfer: the pair rules' other errors (tests/explain/test_explain_verdict.py)
    assert names[:3] == ["HMA", "model kind", "PP/DP"] and names[3:] in ([], ["KV transfer"]), view
    shown = Counter(m for dim in view.why[:3] for m in _verdicts(dim))
    # a per-engine finding merged over both hosts (the same origin) is each side's; a pair problem is once
    reported = Counter(f.message for f in found if f.deployment == _name(case) and _belongs(f)
                       for _host in (f.hosts if f.rule in PER_ENGINE else f.hosts[:1]))
    assert shown == reported, (shown - reported, reported - shown)
    for dim in view.why:
        works = [line for line in dim.lines if line.verdict == "works"]
        assert bool(works) is not bool(_verdicts(dim)), dim
        for line in dim.lines:
            if line.verdict in ("fails", "undetected"):
                assert line.source, line  # every verdict cites vLLM's source
                assert (line.verdict == "undetected") is ("does not " in line.text and (
                    "check" in line.text or "detect" in line.text)), line


def test_grid_covers_every_verdict_kind(grid: tuple[list[Finding], dict[str, PairView]]) -> None:
    """The grid is not vacuous: each dimension fails somewhere, vLLM misses something, and everything works once."""
    _found, pairs = grid
    kinds = {(dim.name, line.verdict) for view in pairs.values() for dim in view.why for line in dim.lines}
    for name in ("HMA", "model kind", "PP/DP"):
        assert {(name, "works"), (name, "fails")} <= kinds, name
    assert ("PP/DP", "undetected") in kinds


@pytest.mark.parametrize(("case", "says"), [
    # HMA unset with NIXL in 0.31.0: SupportsHMA keeps it on; gpt-oss at PP 2 has 6 sliding + 6 full per stage
    (("0.31.0", "sliding", "unset", "nixl-pull", (2, 1), (1, 1)),
     ["both sides: HMA on (it is unset and NixlConnector implements SupportsHMA in vLLM 0.31.0)",
      "prefill stage 0: layers 0-11, 6 sliding + 6 full", "decode stage 0: layers 0-23, 12 sliding + 12 full",
      "fails: prefill pipeline_parallel_size 2 with the hybrid KV cache manager"]),
    # the Mamba hybrid needs HMA in 0.25.0: turning it off does not start the engine
    (("0.25.0", "linear", "off", "mooncake", (1, 1), (1, 1)),
     ["both sides: HMA off (vllm_disable_hybrid_kv_cache_manager is true)",
      "the model needs HMA in vLLM 0.25.0", "Mamba/SSM hybrid (linear attention), 40 layers",
      "stage 0 (both sides): layers 0-39, 30 linear + 10 full", "fails: prefill: Qwen/Qwen3.5-35B-A3B has Mamba/SSM"]),
    # a real Mamba hybrid (NemotronH): Mamba, attention and MoE-only layers, the MoE ones holding no KV cache
    (("0.25.0", "mamba", "off", "nixl-pull", (1, 1), (1, 1)),
     ["the model needs HMA in vLLM 0.25.0", "stage 0 (both sides): layers 0-51, 23 Mamba + 6 full + 23 no-KV",
      "fails: prefill: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 has Mamba/SSM"]),
    # MoRIIO: both PP stages of a TP rank listen on one port, a start-up hang vLLM does not report
    (("0.31.0", "full", "unset", "moriio-read", (2, 1), (1, 1)),
     ["get_port_offset(dp_rank, tp_rank), the same port on every PP stage", "vLLM will not detect: "]),
    # MoRIIO with prefill DP 2 x TP 2 on one host: DP rank 1 TP 0 takes DP rank 0 TP 1's port
    (("0.31.0", "full", "unset", "moriio-read", (1, 1), (2, 1)),
     ["prefill: PP 1, DP 2, TP 2", "vLLM will not detect: ", "MoRIIO handshake (DP 1, TP 0, PP 0) uses port"]),
])
def test_why_block_text(grid: tuple[list[Finding], dict[str, PairView]],
                        case: Case, says: list[str]) -> None:
    _found, pairs = grid
    view = pairs[_name(case)]
    shown = [line.shown for dim in view.why for line in dim.lines]
    for words in says:
        assert any(words in line for line in shown), (words, shown)


def test_every_format_carries_the_block(grid: tuple[list[Finding], dict[str, PairView]]) -> None:
    view = grid[1][_name(("0.31.0", "sliding", "unset", "nixl-pull", (2, 1), (1, 1)))]
    expl = Explanation((DeploymentView("d", ("0.31.0",), (), (view,), ()),), ())
    line = "prefill stage 1: layers 12-23, 6 sliding + 6 full"
    assert "      " + line in text.why_lines(view, False)
    assert f"  - {line}" in markdown.why_markdown(view) and f"<li class=\"fact\">{line}</li>" in as_html.why_html(view)
    doc = as_json.as_dict(expl)
    dims = doc["deployments"][0]["pairs"][0]["why"]
    assert [d["name"] for d in dims] == ["HMA", "model kind", "PP/DP"]
    assert {"verdict": "", "text": line, "source": ""} in dims[1]["lines"]


def test_readme_why_block_is_the_cli_output(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example is what `pdlint explain tests/fixtures/explain/why` prints (text format)."""
    monkeypatch.chdir(ROOT)
    assert main(["explain", "tests/fixtures/explain/why"]) == 0
    out = capsys.readouterr().out
    snippet = readme_snippet("Each pair the rules judge also gets a why-block", "text").splitlines()
    head, block = snippet[2], [line for line in snippet[4:] if line.strip() != "..."]  # `...`: elided output
    assert head in out.splitlines() and "\n".join(block) in out, out
    assert max(map(len, out.splitlines())) <= 100

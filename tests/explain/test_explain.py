"""`pdlint explain`: the model on the bundled examples and a multi-node, multi-instance inventory (CLI, JSON, text)."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT

from pdlint.cli import main

SCHEMA = json.loads((ROOT / "schemas" / "pdlint-explain.schema.json").read_text(encoding="utf-8"))
INVENTORIES = ["examples/inventory", "examples/releases", "examples/ini/hosts.ini", "tests/fixtures/explain/multinode"]
MULTINODE = "tests/fixtures/explain/multinode"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def model(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, "explain", *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def pair(doc: dict[str, Any], deployment: str, prefill: str, decode: str) -> dict[str, Any]:
    dep = next(d for d in doc["deployments"] if d["name"] == deployment)
    return next(p for p in dep["pairs"] if (p["prefill"], p["decode"]) == (prefill, decode))


def attached(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(doc["findings"])
    for dep in doc["deployments"]:
        found += dep["findings"] + [f for e in dep["engines"] for f in e["findings"]]
        found += [f for p in dep["pairs"] for f in p["findings"]]
    return found


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_seed_example_rejects_4_6_and_shows_2_acks_for_4_8(capsys: pytest.CaptureFixture[str]) -> None:
    doc = model(capsys, "examples/inventory")
    moriio = pair(doc, "deepseek-r1", "mi-b01", "mi-b02")
    assert moriio["status"] == "rejected" and moriio["links"] == []
    assert [f["rule"] for f in moriio["findings"]] == ["tp-ratio[moriio]"]
    nixl = pair(doc, "llama70b-chat", "gpu-a01", "gpu-a02")
    assert (nixl["status"], nixl["acks"], nixl["mode"], nixl["release"]) == ("ok", 2, "decode reads", "0.32.0")
    assert [(link["decode_rank"], link["prefill_rank"], link["heads"]) for link in nixl["links"][:3]] == [
        (0, 0, [0]), (1, 0, [1]), (2, 1, [2])]


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_json_matches_its_schema_and_drops_no_finding(capsys: pytest.CaptureFixture[str], inventory: str) -> None:
    doc = model(capsys, inventory)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    _, out, _ = run(capsys, inventory, "--format", "json")
    assert sorted(map(json.dumps, attached(doc))) == sorted(map(json.dumps, json.loads(out)))


@pytest.mark.parametrize(("argv", "where", "expected"), [
    # multi-node prefill: TP 8 x PP 2 over two hosts, 8 GPUs each, PP stage per node
    ([MULTINODE], ("chat", "big-prefill"), {("big-p0", 0, "0"), ("big-p0", 0, "7"), ("big-p1", 1, "0"),
                                            ("big-p1", 1, "7")}),
    # two vllm_instances on one host: each takes its CUDA_VISIBLE_DEVICES, DP 2 splits its four
    ([MULTINODE], ("chat", "dec-1[1]"), {("dec-1", 0, "4"), ("dec-1", 0, "5"), ("dec-1", 0, "6"), ("dec-1", 0, "7")}),
])
def test_gpus_per_worker(capsys: pytest.CaptureFixture[str], argv: list[str], where: tuple[str, str],
                         expected: set[tuple[str, int, str]]) -> None:
    dep = next(d for d in model(capsys, *argv)["deployments"] if d["name"] == where[0])
    engine = next(e for e in dep["engines"] if e["name"] == where[1])
    got = {(w["host"], w["pp"], w["gpu"]) for w in engine["workers"]}
    assert expected <= got and len(engine["workers"]) == engine["tp"] * engine["pp"] * engine["dp"]


@pytest.mark.parametrize(("deployment", "prefill", "decode", "mode", "by_decode"), [
    # NIXL push (the prefill runs PP 2), prefill TP 8 > decode TP 4: two prefill ranks write each decode rank
    ("chat", "big-prefill", "dec-1[0]", "prefill writes", {0: [0, 1], 1: [2, 3], 2: [4, 5], 3: [6, 7]}),
    # MoRIIO write 0.33.0, prefill 8 -> decode 2, K = 8: fan-in, every prefill rank writes its own head
    ("writer", "mi-w1", "mi-w2", "prefill writes", {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}),
])
def test_rank_maps(capsys: pytest.CaptureFixture[str], deployment: str, prefill: str, decode: str, mode: str,
                   by_decode: dict[int, list[int]]) -> None:
    found = pair(model(capsys, MULTINODE), deployment, prefill, decode)
    got: dict[int, list[int]] = {}
    for link in found["links"]:
        got.setdefault(link["decode_rank"], []).append(link["prefill_rank"])
    assert (found["status"], found["mode"], got) == ("ok", mode, by_decode)


def test_ports_per_host(capsys: pytest.CaptureFixture[str]) -> None:
    dep = next(d for d in model(capsys, MULTINODE)["deployments"] if d["name"] == "chat")
    ports = {(p["host"], p["port"], p["instance"]) for p in dep["ports"]}
    # the second node of a multi-node engine binds nothing; DP 2 binds one side channel per DP rank
    assert not any(host == "big-p1" for host, _, _ in ports)
    assert {("big-p0", 8000, "big-p0"), ("big-p0", 5600, "big-p0"), ("dec-1", 5700, "dec-1[1]"),
            ("dec-1", 5701, "dec-1[1]"), ("dec-1", 8200, "dec-1[1]")} <= ports


def test_vllm_version_option_is_pdlints(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/ini sets no vllm_version: --vllm-version 0.9.0 (NIXL pairs rank r with rank r) rejects 4/8."""
    assert pair(model(capsys, "examples/ini/hosts.ini"), "llama70b-chat", "gpu-a01", "gpu-a02")["status"] == "ok"
    old = pair(model(capsys, "examples/ini/hosts.ini", "--vllm-version", "0.9.0"), "llama70b-chat", "gpu-a01",
               "gpu-a02")
    assert (old["status"], old["release"], [f["rule"] for f in old["findings"]]) == (
        "rejected", "0.9.0", ["tp-ratio[nixl]"])


@pytest.mark.parametrize(("argv", "code", "says"), [
    (["explain", "examples/inventory", "--deployment", "nope"], 2, "no deployment 'nope'"),
    (["explain", "no/such/inventory"], 2, "no such file or directory"),
    (["explain", "examples/inventory", "--format", "sarif"], 2, "invalid choice"),
])
def test_unusable_input(capsys: pytest.CaptureFixture[str], argv: list[str], code: int, says: str) -> None:
    got, out, err = run(capsys, *argv)
    assert got == code and says in out + err


def test_deployment_filter_and_output_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "x.md"
    code, out, _ = run(capsys, "explain", "examples/inventory", "--deployment", "qwen3-chat", "-f", "markdown",
                       "-o", str(target))
    text = target.read_text(encoding="utf-8")
    assert code == 0 and out == "" and "qwen3-chat" in text and "deepseek-r1" not in text


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_text_fits_100_columns_without_colour(capsys: pytest.CaptureFixture[str], inventory: str) -> None:
    code, out, _ = run(capsys, "explain", inventory)
    assert code == 0 and out.startswith("deployment ")
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "\033[" not in out


@pytest.mark.parametrize(("no_color", "coloured"), [(None, True), ("1", False)])
def test_colour_only_on_a_terminal_without_no_color(no_color: str | None, coloured: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if no_color is not None:
        env["NO_COLOR"] = no_color
    leader, follower = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "pdlint.cli", "explain", "examples/inventory"], stdout=follower,
                          stderr=subprocess.PIPE, env=env, cwd=ROOT, check=False, timeout=120)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    assert (b"\033[31mREJECTED" in b"".join(chunks)) == coloured

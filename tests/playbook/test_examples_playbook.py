"""examples/playbook: the seed's mistake written in a play's vars over a role's systemd template, found at the play
var's line; the inventory's own TP, which the play overrides, is no finding and no conflict."""
from __future__ import annotations

import json
import sys
import tempfile
from typing import Any

import pytest
from conftest import ROOT

from pdlint.cli import main

EXAMPLE = ROOT / "examples" / "playbook"


def _lint(argv: list[str]) -> tuple[int, list[dict[str, Any]]]:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:  # a real file: ansible-core's display wants one
        saved, sys.stdout = sys.stdout, out
        try:
            code = main([*argv, "--format", "json"])
        finally:
            sys.stdout = saved
        out.seek(0)
        return code, json.loads(out.read())


@pytest.mark.parametrize("inventory", ["inventory", "inventory/hosts.yml"])
def test_seed_mistake_at_the_play_var(inventory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLE)
    code, found = _lint(["-i", inventory, "--playbook", "site.yml"])
    assert code == 1
    assert [(f["rule"], f["message"], f["file"], f["line"], f["column"], f["hosts"]) for f in found] == [
        ("tp-ratio[moriio]", "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)",
         "site.yml", 13, 32, ["mi-d01", "mi-p01"]),
        ("tp[heads]", "128 attention heads are not divisible by TP 6", "site.yml", 13, 32, ["mi-d01"]),
    ]
    assert "vllm_tensor_parallel_size: 6" in (EXAMPLE / "site.yml").read_text().splitlines()[12]


def test_the_inventory_alone_cannot_see_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the playbook, the inventory says decode TP 4 and has no connector: no TP finding at all."""
    monkeypatch.chdir(EXAMPLE)
    _code, found = _lint(["-i", "inventory"])
    assert not [f for f in found if f["rule"].startswith("tp")]


def test_case_file_runs_the_playbook(monkeypatch: pytest.MonkeyPatch) -> None:
    """case.yml (how the tests that run every example run this one) names the playbook too."""
    import yaml

    monkeypatch.chdir(EXAMPLE)
    code, found = _lint(yaml.safe_load((EXAMPLE / "case.yml").read_text())["args"])
    assert code == 1 and [f["rule"] for f in found] == ["tp-ratio[moriio]", "tp[heads]"]


def test_explain_shows_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """explain reads the playbook as the lint does: decode TP 6, and where it came from (template <- variable <-
    the line that set it)."""
    monkeypatch.chdir(EXAMPLE)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        saved, sys.stdout = sys.stdout, out
        try:
            code = main(["explain", "-i", "inventory", "--playbook", "site.yml", "--format", "json"])
        finally:
            sys.stdout = saved
        out.seek(0)
        shown = json.loads(out.read())
    assert code == 0
    assert {(f["rule"], f["file"], f["line"], f["column"]) for f in _findings(shown)} == {
        ("tp-ratio[moriio]", "site.yml", 13, 32), ("tp[heads]", "site.yml", 13, 32)}
    assert ("mi-d01: launch line `--tensor-parallel-size 6` (roles/vllm_serve/templates/vllm.service.j2:10:28) "
            "<- vllm_tensor_parallel_size (site.yml:13:32)") in shown["mapped"]
    assert ("mi-p01: launch line `--tensor-parallel-size 4` (roles/vllm_serve/templates/vllm.service.j2:10:28) "
            "<- vllm_tensor_parallel_size (roles/vllm_serve/defaults/main.yml:2:28)") in shown["mapped"]


def _findings(node: Any) -> list[dict[str, Any]]:
    """Every finding anywhere in explain's JSON (per deployment, engine and pair)."""
    if isinstance(node, dict):
        own = [node] if "rule" in node and "line" in node else []
        return own + [f for value in node.values() for f in _findings(value)]
    if isinstance(node, list):
        return [f for item in node for f in _findings(item)]
    return []

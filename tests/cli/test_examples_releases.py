"""examples/releases: the same inventory, a different verdict on another vLLM release."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from pdlint.cli import main

EXAMPLE = ROOT / "examples" / "releases"


def _lint(tree: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, set[tuple[str, str]]]:
    code = main([str(tree), "--format", "json"])
    return code, {(f["rule"], f["deployment"]) for f in json.loads(capsys.readouterr().out)}


def _pinned(tmp_path: Path, group: str, release: str) -> Path:
    tree = shutil.copytree(EXAMPLE, tmp_path / "inv")
    path = tree / "group_vars" / f"{group}.yml"
    text = path.read_text()
    old = next(line for line in text.splitlines() if line.startswith("vllm_version:"))
    path.write_text(text.replace(old, f'vllm_version: "{release}"'))
    return tree


def test_as_shipped(capsys) -> None:
    code, found = _lint(EXAMPLE, capsys)
    assert code == 1 and found == {("tp-ratio[nixl]", "legacy-nixl")}


@pytest.mark.parametrize(("group", "release", "expected"), [
    ("legacy", "0.14.1", set()),  # NIXL reads a larger prefill TP from 0.14 on
    ("legacy", "0.32.0", set()),
    ("legacy", "0.12.0", {("tp-ratio[nixl]", "legacy-nixl")}),
    ("writer", "0.32.0", {("tp-ratio[moriio-write]", "moriio-writer")}),  # write mode: equal TP only
])
def test_other_releases(tmp_path, capsys, group: str, release: str, expected: set[tuple[str, str]]) -> None:
    code, found = _lint(_pinned(tmp_path, group, release), capsys)
    others = {("tp-ratio[nixl]", "legacy-nixl")} if group == "writer" else set()
    assert found == expected | others and code == (1 if found else 0)

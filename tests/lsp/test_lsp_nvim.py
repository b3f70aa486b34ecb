"""A real editor: Debian's Neovim, headless, with its built-in LSP client attached to `pdlint lsp`."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import conftest
import pytest

pytestmark = pytest.mark.editors  # slow tier: real Neovim, Emacs and code-server

ROOT = Path(__file__).resolve().parents[2]
PDLINT = str(Path(sys.executable).parent / "pdlint")


def _nvim() -> str:
    found = shutil.which("nvim")
    if found is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail("Neovim is not installed, and CI must exercise it (apt-get install -y neovim)")
        pytest.skip("Neovim is not installed (apt-get install -y neovim)")
    return found


def readme_snippet() -> str:
    """The README's Neovim set-up, as users copy it."""
    return conftest.readme_snippet("Neovim (0.7 or later; this is what", "lua")


def test_neovim_shows_the_findings_and_an_unsaved_edit_changes_another_files(tmp_path: Path) -> None:
    nvim = _nvim()
    snippet = tmp_path / "snippet.lua"
    snippet.write_text(readme_snippet())
    inv = Path(shutil.copytree(ROOT / "examples" / "inventory", tmp_path / "inventory"))
    decode, prefill = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "deepseek_prefill.yml"
    prefill_text = prefill.read_text()
    out = tmp_path / "shown.json"
    path = f"{Path(PDLINT).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # the venv's pdlint, as installed
    env = {**os.environ, "PATH": path, "PDLINT_SNIPPET": str(snippet), "PDLINT_DECODE": str(decode), "PDLINT_PREFILL": str(prefill),
           "PDLINT_OUT": str(out), "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    run = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", str(ROOT / "tests" / "nvim" / "init.lua")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                         check=False)
    assert out.exists(), run.stderr + run.stdout
    shown = json.loads(out.read_text())
    assert shown["clients"] == 1 and shown["servers"] == 1  # attached by the snippet, one server for both files
    assert shown["opened"] is True
    before = {(d["code"], d["lnum"], d["col"]) for d in shown["decode_before"]}
    assert before == {("tp-ratio[moriio]", 1, 27), ("tp[heads]", 1, 27)}
    assert all(d["severity"] == 1 for d in shown["decode_before"])  # vim.diagnostic.severity.ERROR
    assert shown["edited"] is True and shown["modified"] is True
    assert {d["code"] for d in shown["decode_after"]} == {"tp[heads]"}
    assert prefill.read_text() == prefill_text  # nothing was saved

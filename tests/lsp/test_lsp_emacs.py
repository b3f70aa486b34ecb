"""A second real editor: Debian's Emacs with eglot, in batch mode, attached to `pdlint lsp` by the README's snippet."""
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
_INSTALL = "apt-get install -y --no-install-recommends emacs-nox elpa-eglot elpa-yaml-mode"


def _emacs() -> str:
    """Emacs that loads eglot and yaml-mode (an Emacs 29 has eglot built in, but the snippet needs yaml-mode)."""
    found = shutil.which("emacs")
    loads = found is not None and subprocess.run(
        [found, "--batch", "--eval", "(progn (package-initialize) (require 'eglot) (require 'yaml-mode))"],
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL, check=False).returncode == 0
    if not loads:
        why = "Emacs is not installed" if found is None else "Emacs cannot load eglot and yaml-mode"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{why}, and CI must exercise it ({_INSTALL})")
        pytest.skip(f"{why} ({_INSTALL})")
    assert found is not None
    return found


def readme_snippet() -> str:
    """The README's Emacs set-up, as users copy it."""
    return conftest.readme_snippet("Emacs (eglot; this is what", "elisp")


def test_emacs_eglot_shows_the_findings_the_pair_hover_and_an_unsaved_edits_effect(tmp_path: Path) -> None:
    emacs = _emacs()
    snippet = tmp_path / "snippet.el"
    snippet.write_text(readme_snippet())
    inv = Path(shutil.copytree(ROOT / "examples" / "inventory", tmp_path / "inventory"))
    # eglot starts one server per project; an inventory lives in a git repository
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    decode, prefill = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "deepseek_prefill.yml"
    prefill_text = prefill.read_text()
    out = tmp_path / "shown.json"
    path = f"{Path(PDLINT).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # the venv's pdlint, as installed
    env = {**os.environ, "PATH": path, "PDLINT_SNIPPET": str(snippet), "PDLINT_DECODE": str(decode),
           "PDLINT_PREFILL": str(prefill), "PDLINT_OUT": str(out), "HOME": str(tmp_path)}
    run = subprocess.run([emacs, "--batch", "-l", str(ROOT / "tests" / "emacs" / "eglot.el")], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)
    assert out.exists(), run.stderr + run.stdout
    shown = json.loads(out.read_text())
    assert shown["mode"] == "yaml-mode" and shown["servers"] == 1
    assert shown["opened"] is True
    before = sorted((d["line"], d["column"], d["text"].split(":")[0]) for d in shown["decode_before"])
    assert before == [(1, 27, "pdlint [tp-ratio[moriio]]"), (1, 27, "pdlint [tp[heads]]")]
    assert "**`mi-b01` -> `mi-b02`** (deployment `deepseek-r1`): **rejected** by `tp-ratio[moriio]`" in shown["hover"]
    assert shown["edited"] is True and shown["modified"] is True
    assert [d["text"].split(":")[0] for d in shown["decode_after"]] == ["pdlint [tp[heads]]"]
    assert prefill.read_text() == prefill_text  # nothing was saved

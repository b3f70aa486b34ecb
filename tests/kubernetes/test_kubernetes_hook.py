"""The pdlint-kubernetes hook: the real pre-commit runs it from this repository; each changed manifest names its
folder (the sides pair across files), and other YAML is skipped."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from test_examples_kubernetes import MORIIO, pdlint

_DECODE_TP = "            - --tensor-parallel-size=6"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _split(example: str, into: Path) -> None:
    """The plain example's two Deployments, one file each."""
    prefill, decode = (ROOT / "examples" / "kubernetes" / example / "deepseek.yaml").read_text().split("\n---\n")
    into.mkdir(parents=True)
    (into / "prefill.yaml").write_text(prefill + "\n")
    (into / "decode.yaml").write_text(decode)


def test_manifest_folders_reads_the_folder_and_skips_other_yaml(tmp_path: Path) -> None:
    _split("plain", tmp_path / "deploy")
    (tmp_path / "ci.yml").write_text("jobs: {lint: {runs-on: ubuntu-latest}}\n")
    code, out, err = pdlint("--manifest-folders", "deploy/decode.yaml", "ci.yml", cwd=tmp_path)
    assert code == 1, out + err
    lines = out.splitlines()
    decode_tp = (tmp_path / "deploy" / "decode.yaml").read_text().splitlines().index(_DECODE_TP)
    assert lines[0] == f"deploy/decode.yaml:{decode_tp + 1}:15: tp-ratio[moriio] {MORIIO}"
    assert lines[-1].startswith("pdlint: 2 errors in 2 hosts, 1 deployment (")
    # without the option, the decode file alone has no prefill to pair with
    code, out, _err = pdlint("deploy/decode.yaml", cwd=tmp_path)
    assert "tp-ratio" not in out and "deployment[incomplete]" in out


def test_try_repo(tmp_path: Path) -> None:
    repo = tmp_path / "ops"
    _split("plain", repo / "deploy")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    env.pop("PYTHONPATH", None)  # the hook's own environment, installed from this repository

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "pdlint-kubernetes",
                               "--files", "deploy/decode.yaml"], cwd=repo, env=env, capture_output=True, text=True,
                              check=False)

    failed = try_repo()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    decode = repo / "deploy" / "decode.yaml"
    line = decode.read_text().splitlines().index(_DECODE_TP) + 1
    assert f"deploy/decode.yaml:{line}:15: tp-ratio[moriio] {MORIIO}" in failed.stdout, failed.stdout
    decode.write_text(decode.read_text().replace("--tensor-parallel-size=6", "--tensor-parallel-size=4"))
    git(repo, "add", ".")
    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr

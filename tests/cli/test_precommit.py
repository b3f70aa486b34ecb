"""The real pre-commit runs the hook from this repository against a broken, then fixed, inventory."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

BROKEN = """\
all:
  vars:
    vllm_pd_deployment: r1
    vllm_model: deepseek-ai/DeepSeek-V3
    vllm_kv_transfer_config:
      kv_connector: NixlConnector
      kv_role: kv_both
    vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ inventory_hostname }}.fleet.internal"}
  children:
    prefill: {hosts: {p1: {}}}
    decode: {hosts: {d1: {}}}
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_try_repo(tmp_path: Path) -> None:
    repo = tmp_path / "ops"
    (repo / "inventory" / "group_vars").mkdir(parents=True)
    (repo / "inventory" / "hosts.yml").write_text(BROKEN)
    (repo / "inventory" / "group_vars" / "prefill.yml").write_text(
        "vllm_pd_role: prefill\nvllm_tensor_parallel_size: 4\n")
    decode = repo / "inventory" / "group_vars" / "decode.yml"
    decode.write_text("vllm_pd_role: decode\nvllm_tensor_parallel_size: 3\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    env.pop("ANSIBLE_CONFIG", None)

    def try_repo(*files: str) -> subprocess.CompletedProcess[str]:
        # Only the changed decode file is passed: the hook must still check the whole inventory.
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "pdlint",
                               "--files", *(files or ["inventory/group_vars/decode.yml"])],
                              cwd=repo, env=env, capture_output=True, text=True, check=False)

    failed = try_repo()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "tp-ratio[nixl]" in failed.stdout
    assert "inventory/group_vars/decode.yml:2:28" in failed.stdout
    # A commit touching the inventory file and a vars file of it: one inventory, each finding once.
    both = try_repo("inventory/hosts.yml", "inventory/group_vars/decode.yml")
    assert both.returncode == 1 and both.stdout.count("tp-ratio[nixl]") == 1, both.stdout
    assert "errors in 2 hosts, 1 deployment;" in both.stdout, both.stdout
    decode.write_text("vllm_pd_role: decode\nvllm_tensor_parallel_size: 2\n")
    git(repo, "add", ".")
    passed = try_repo()
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_files_ansible_skips_in_an_inventory_name_their_inventory(tmp_path: Path, capsys, monkeypatch) -> None:
    """pre-commit passes every changed file under inventory/: a README.md, notes.txt or .gitignore there is no
    inventory source (Ansible's inventory directory walk skips them), so each names the inventory around it."""
    import shutil

    from pdlint.cli import main

    inv = tmp_path / "inventory"
    shutil.copytree(ROOT / "examples" / "inventory", inv)
    (inv / "README.md").write_text("# our fleet\n\nprefill, decode: see hosts.yml\n")
    (inv / "notes.txt").write_text("p1, p2, d1\n")
    (inv / ".gitignore").write_text("*.retry\n")
    monkeypatch.chdir(tmp_path)
    assert main(["--no-cache", "inventory"]) == 1
    whole = capsys.readouterr().out.splitlines()[:-1]  # the summary line carries the time
    for changed in (["inventory/README.md"], ["inventory/notes.txt", "inventory/group_vars/all.yml"],
                    ["inventory/.gitignore", "inventory/README.md", "inventory/hosts.yml"]):
        assert main(["--no-cache", *changed]) == 1, changed
        out = capsys.readouterr().out
        assert out.splitlines()[:-1] == whole, changed
        assert "load-error" not in out and "in 6 hosts" in out.splitlines()[-1]

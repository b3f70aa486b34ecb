"""A collection's role named by FQCN (`acme.serving.vllm`), installed next to the project, is read as ansible-core
finds it: `collections/ansible_collections/` beside the playbook, or an ansible.cfg `collections_path`; in
`roles:`, in `include_role` / `import_role`, and as a short name under the play's `collections:` keyword.
ansible-playbook --list-tasks on the same project finds the same role; a role found nowhere is the clear error."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_playbook_launch import line_of, project, run, where

BIN = Path(sys.executable).parent
RATIO = "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"


def _plays(role: str, how: str, collections: list[str] | None = None) -> list[dict[str, Any]]:
    plays: list[dict[str, Any]] = []
    for side, tp in (("prefill", 4), ("decode", 6)):
        play: dict[str, Any] = {"hosts": side, "gather_facts": False, "vars": {"tp": tp}}
        if collections:
            play["collections"] = collections
        if how == "roles":
            play["roles"] = [role]
        else:
            play["tasks"] = [{"name": "the engine", how: {"name": role}}]
        plays.append(play)
    return plays


def _ansible_tasks(tmp: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    config = tmp / "ansible.cfg"
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(config if config.exists() else tmp / "none.cfg"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "inventory/hosts.yml", "--list-tasks", "site.yml"],
                          cwd=tmp, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize(("role", "how", "collections", "installed"), [
    ("acme.serving.vllm", "roles", None, "collections"),
    ("acme.serving.vllm", "include_role", None, "collections"),
    ("acme.serving.vllm", "import_role", None, "collections"),
    ("vllm", "roles", ["acme.serving"], "collections"),
    ("acme.serving.vllm", "roles", None, "vendor"),
])
def test_collection_role_is_read(role: str, how: str, collections: list[str] | None, installed: str,
                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = project(tmp_path, site=_plays(role, how, collections), connector="MoRIIOConnector",
                  group_vars={"all": {"vllm_model": "deepseek-ai/DeepSeek-V3"}},
                  defaults={"model": "{{ vllm_model }}"})
    target = tmp / installed / "ansible_collections" / "acme" / "serving" / "roles"
    target.mkdir(parents=True)
    shutil.move(str(tmp / "roles" / "vllm"), str(target / "vllm"))
    if installed == "vendor":
        (tmp / "ansible.cfg").write_text("[defaults]\ncollections_path = ./vendor\n", encoding="utf-8")
    if how != "include_role":  # an include is dynamic: --list-tasks does not open it
        assert "vllm : unit" in _ansible_tasks(tmp)
    _code, found = run(tmp, monkeypatch)
    assert [(f["rule"], f["message"], where(f)) for f in found if f["rule"].startswith("tp-ratio")] == [
        ("tp-ratio[moriio]", RATIO, line_of(tmp, "site.yml", "6"))]


def test_a_collection_role_found_nowhere_is_the_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = project(tmp_path, site=_plays("acme.serving.vllm", "roles"))
    code, found = run(tmp, monkeypatch)
    assert code == 2
    assert [(f["rule"], where(f)) for f in found] == [("load-error", line_of(tmp, "site.yml", "acme.serving.vllm"))]
    assert found[0]["message"].startswith("role 'acme.serving.vllm' not found in the collections next to the "
                                          "playbook ("), found

"""`when:` on include_role / import_role / a role entry / the launch task, decided per host with its merged
variables (`inventory_hostname in groups[...]`, `vllm_pd_role == 'decode'`, `x is defined`); a condition that reads
what only the run knows (a registered result, a fact) or cannot be evaluated is not decided: the task is taken as
run and one `unresolved` warning at the condition says so."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_playbook_launch import line_of, project, run, where

RATIO = "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"
MODEL = {"group_vars": {"all": {"vllm_model": "deepseek-ai/DeepSeek-V3"}}, "connector": "MoRIIOConnector",
         "defaults": {"model": "{{ vllm_model }}"}}


def _two_includes(key: str, prefill: str, decode: str) -> list[dict[str, Any]]:
    """One play on both sides; the role included twice, each with its TP and a condition choosing the side."""
    return [{"hosts": "prefill:decode", "gather_facts": False, "tasks": [
        {"name": "prefill engine", key: {"name": "vllm"}, "vars": {"tp": 4}, "when": prefill},
        {"name": "decode engine", key: {"name": "vllm"}, "vars": {"tp": 6}, "when": decode}]}]


@pytest.mark.parametrize("key", ["include_role", "import_role"])
@pytest.mark.parametrize(("prefill", "decode"), [
    ("inventory_hostname in groups['prefill']", "inventory_hostname in groups['decode']"),
    ("vllm_pd_role == 'prefill'", "vllm_pd_role == 'decode'"),
    ("'prefill' in group_names", "'prefill' not in group_names"),
])
def test_condition_decided_per_host(key: str, prefill: str, decode: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = project(tmp_path, site=_two_includes(key, prefill, decode), **MODEL)
    code, found = run(tmp, monkeypatch)
    assert code == 1
    assert not [f for f in found if f["rule"] == "unresolved"], found
    assert [(f["rule"], f["message"], where(f), f["hosts"]) for f in found if f["rule"].startswith("tp-ratio")] == [
        ("tp-ratio[moriio]", RATIO, line_of(tmp, "site.yml", "6"), ["d1", "p1"])]


def test_is_defined_on_the_launch_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The role's launch task runs only where `tp` is defined: the prefill play leaves it undefined (no engine,
    the inventory's reading stands and says so), the decode play defines it."""
    tasks = ("- name: unit\n  ansible.builtin.template:\n    src: vllm.service.j2\n"
             "    dest: /etc/systemd/system/vllm.service\n  when: side_tp is defined\n")
    site = [{"hosts": "prefill", "roles": ["vllm"]}, {"hosts": "decode", "vars": {"side_tp": 6}, "roles": ["vllm"]}]
    tmp = project(tmp_path, site=site, extra={"roles/vllm/tasks/main.yml": tasks}, **MODEL)
    _code, found = run(tmp, monkeypatch)
    assert [(f["rule"], f["hosts"]) for f in found if f["rule"] == "unresolved"] == [("unresolved", ["p1"])]
    assert "start vLLM on none of them" in next(f for f in found if f["rule"] == "unresolved")["message"]


@pytest.mark.parametrize(("condition", "reason"), [
    ("probe.rc == 0", "it reads probe, known only when the play runs"),
    ("ansible_distribution == 'Ubuntu'", "it reads ansible_distribution, known only when the play runs"),
    ("undefined_flag | bool", "Error while evaluating conditional: 'undefined_flag' is undefined"),
])
def test_undecided_condition_is_taken_as_run(condition: str, reason: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    site = [{"hosts": "prefill:decode", "gather_facts": False, "tasks": [
        {"name": "probe", "ansible.builtin.command": "true", "register": "probe"},
        {"name": "engine", "include_role": {"name": "vllm"}, "when": condition}]}]
    tmp = project(tmp_path, site=site, **MODEL)
    code, found = run(tmp, monkeypatch)
    assert code == 0
    undecided = [f for f in found if f["rule"] == "unresolved"]
    assert [(f["message"], where(f), f["hosts"]) for f in undecided] == [
        (f"the `when: {condition}` of role vllm is not decided statically ({reason}): pdlint takes it as run",
         line_of(tmp, "site.yml", condition), ["d1", "p1"])]


def test_role_entry_condition_binds_its_dependencies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`roles: [{role: side, when: ...}]` whose meta dependency is the launching role: the condition is the
    dependency's too, so each side's entry launches on its own hosts only."""
    site = [{"hosts": "prefill:decode", "gather_facts": False, "roles": [
        {"role": "prefill_side", "when": "'prefill' in group_names"},
        {"role": "decode_side", "when": "'decode' in group_names"}]}]
    extra = {"roles/prefill_side/meta/main.yml": "dependencies:\n  - {role: vllm, tp: 4}\n",
             "roles/decode_side/meta/main.yml": "dependencies:\n  - {role: vllm, tp: 6}\n"}
    tmp = project(tmp_path, site=site, extra=extra, **MODEL)
    code, found = run(tmp, monkeypatch)
    assert code == 1
    assert not [f for f in found if f["rule"] == "unresolved"], found
    assert [(f["rule"], f["message"], where(f)) for f in found if f["rule"].startswith("tp-ratio")] == [
        ("tp-ratio[moriio]", RATIO, line_of(tmp, "roles/decode_side/meta/main.yml", "6"))]

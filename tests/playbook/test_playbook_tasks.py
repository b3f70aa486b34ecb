"""`pdlint --playbook` on launch lines a task writes in its own arguments: a container's `command:` (with its
image's `vllm serve`, or its `entrypoint:`) and `env:`, and `command`/`shell` tasks; each finding at the line that
set the deciding value, and a task that starts no vLLM says nothing."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_playbook_launch import line_of, project, run, where

KV = "{{ kv | to_json }}"


def _tasks(tmp: Path, tasks: list[dict[str, Any]], decode_tp: Any = 6, **more: Any) -> Path:
    site = [{"hosts": "prefill", "roles": ["vllm"]},
            {"hosts": "decode", "vars": {"tp": decode_tp}, "roles": ["vllm"]}]
    tmp = project(tmp, site=site, connector="MoRIIOConnector", defaults={"model": "deepseek-ai/DeepSeek-V3", **more})
    (tmp / "roles" / "vllm" / "tasks" / "main.yml").write_text(yaml.safe_dump(tasks, sort_keys=False),
                                                               encoding="utf-8")
    return tmp


CONTAINER_STRING = {"name": "engine", "community.docker.docker_container": {
    "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
    "command": "{{ model }} --port {{ port }} --tensor-parallel-size {{ tp }} --kv-transfer-config '" + KV + "'",
    "env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "{{ ansible_host }}"}}}
CONTAINER_LIST = {"name": "engine", "containers.podman.podman_container": {
    "name": "vllm", "image": "docker.io/rocm/vllm:latest", "entrypoint": ["vllm", "serve"],
    "command": ["{{ model }}", "--port={{ port }}", "-tp", "{{ tp }}", "--kv-transfer-config", KV]}}
COMMAND = {"name": "engine", "ansible.builtin.shell": "nohup /opt/vllm/bin/vllm serve {{ model }} --port {{ port }} "
                                                     "--tensor-parallel-size {{ tp }} --kv-transfer-config '" + KV
                                                     + "' > /var/log/vllm.log 2>&1 &"}
COMMAND_ARGV = {"name": "engine", "ansible.builtin.command": {"argv": [
    "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "{{ model }}", "--port", "{{ port }}",
    "--tensor-parallel-size", "{{ tp }}", "--kv-transfer-config", KV]}}


@pytest.mark.parametrize("task", [CONTAINER_STRING, CONTAINER_LIST, COMMAND, COMMAND_ARGV],
                         ids=["docker-string", "podman-list", "shell", "command-argv"])
def test_seed_mistake_at_the_play_var(task: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = _tasks(tmp_path, [task])
    _code, found = run(tmp, monkeypatch)
    ratio = [f for f in found if f["rule"] == "tp-ratio[moriio]"]
    assert [f["message"] for f in ratio] == ["decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"]
    assert where(ratio[0]) == line_of(tmp, "site.yml", "6")
    assert not [f for f in found if f["rule"].startswith(("vllm-args", "unresolved"))], found


@pytest.mark.parametrize("task", [CONTAINER_STRING, COMMAND], ids=["docker", "shell"])
def test_clean_task_line_gives_no_error(task: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = _tasks(tmp_path, [task], decode_tp=8)
    code, found = run(tmp, monkeypatch)
    assert [f for f in found if f["severity"] == "error"] == [] and code == 0, found


def test_literal_flag_in_the_task_is_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value written in the task itself is at the task file's line and column."""
    task = {"name": "engine", "community.docker.docker_container": {
        **CONTAINER_STRING["community.docker.docker_container"],
        "command": "{{ model }} --port {{ port }} --tensor-parallel-size {{ tp }} --no-such-flag 7 "
                   "--kv-transfer-config '" + KV + "'"}}
    tmp = _tasks(tmp_path, [task], decode_tp=8)
    _code, found = run(tmp, monkeypatch)
    invalid = [f for f in found if f["rule"] == "vllm-args[invalid]"]
    assert len(invalid) == 1 and "--no-such-flag" in invalid[0]["message"], found
    assert where(invalid[0]) == line_of(tmp, "roles/vllm/tasks/main.yml", "--no-such-flag")


@pytest.mark.parametrize("task", [
    {"name": "exporter", "community.docker.docker_container": {"name": "node", "image": "prom/node-exporter",
                                                               "command": "--path.rootfs=/host"}},
    {"name": "mkdir", "ansible.builtin.command": "mkdir -p /var/log/{{ model }}"},
    {"name": "logs", "ansible.builtin.shell": "journalctl -u vllm > /tmp/vllm.log"},
], ids=["other-image", "other-command", "other-shell"])
def test_task_starting_no_vllm_says_nothing(task: dict[str, Any], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """No launch line: the task says nothing and the inventory reading stands (here: no TP anywhere); the plays ran
    on P/D hosts without a launch line pdlint reads, which is said once, at the playbook."""
    tmp = _tasks(tmp_path, [task])
    _code, found = run(tmp, monkeypatch)
    assert not [f for f in found if f["rule"].startswith(("vllm-args", "tp"))], found
    assert [(f["rule"], f["severity"], where(f), f["hosts"]) for f in found if f["rule"] == "unresolved"] == [
        ("unresolved", "warning", "site.yml:None:None", ["d1", "p1"])]


def test_unrenderable_command_is_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = {"name": "engine", "ansible.builtin.shell": "vllm serve {{ model }} --port {{ no_such_port }}"}
    tmp = _tasks(tmp_path, [task])
    _code, found = run(tmp, monkeypatch)
    assert {f["rule"] for f in found} == {"unresolved"}, found
    assert all("no_such_port" in f["message"] and where(f) == line_of(tmp, "roles/vllm/tasks/main.yml", "name: engine")
               for f in found), found

"""`pdlint --playbook` over each launch kind a role may write (tests/fixtures/playbook): a template of a shell
script, a template of a compose file, a copy of a systemd unit in `content:`, a copy of a script from files/. Each
clean project gives no finding; the seed's mistake (MoRIIO, prefill TP 4, decode TP 6) is found at the line that set
decode TP 6; what pdlint does not read (EnvironmentFile=, a shell expansion) is said so."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from test_playbook_launch import line_of, lint, where

FIXTURES = ROOT / "tests" / "fixtures" / "playbook"
RATIO = "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"
KINDS = ("script", "compose", "copy-unit", "copy-script")


def _copy(tmp: Path, kind: str) -> Path:
    shutil.copytree(FIXTURES / "inventory", tmp / "inventory")
    shutil.copytree(FIXTURES / kind, tmp / kind)
    return tmp


def _edit(tmp: Path, file: str, old: str, new: str, count: int = -1) -> None:
    path = tmp / file
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, count) if count > 0 else text.replace(old, new), encoding="utf-8")


def _run(tmp: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[dict[str, object]]]:
    monkeypatch.chdir(tmp)
    return lint(["-i", "inventory", "--playbook", f"{kind}/site.yml"])


@pytest.mark.parametrize("kind", KINDS)
def test_clean_project_gives_no_finding(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(_copy(tmp_path, kind), kind, monkeypatch) == (0, [])


@pytest.mark.parametrize("kind", ("script", "compose", "copy-unit"))
def test_seed_mistake_at_the_decode_play_var(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = _copy(tmp_path, kind)
    site = tmp / kind / "site.yml"
    lines = site.read_text(encoding="utf-8").splitlines()
    assert lines[12] == "    tp: 4"  # the decode play's
    lines[12] = "    tp: 6"
    site.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, found = _run(tmp, kind, monkeypatch)
    assert code == 1
    assert [(f["rule"], f["message"], where(f), f["hosts"]) for f in found if f["rule"] == "tp-ratio[moriio]"] == [
        ("tp-ratio[moriio]", RATIO, f"{kind}/site.yml:13:9", ["mi-d01", "mi-p01"])]


def test_seed_mistake_in_a_copied_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """files/serve.sh is copied as it is: the literal TP 6 is found at its own line."""
    tmp = _copy(tmp_path, "copy-script")
    script = "copy-script/roles/vllm_decode/files/serve.sh"
    _edit(tmp, script, "--tensor-parallel-size 4", "--tensor-parallel-size 6")
    code, found = _run(tmp, "copy-script", monkeypatch)
    assert code == 1
    assert [(f["rule"], f["message"], where(f)) for f in found if f["rule"] == "tp-ratio[moriio]"] == [
        ("tp-ratio[moriio]", RATIO, line_of(tmp, script, "--tensor-parallel-size 6"))]


@pytest.mark.parametrize(("kind", "file", "old", "new", "at"), [
    ("script", "script/roles/vllm_script/templates/serve.sh.j2", "export VLLM_LOGGING_LEVEL=INFO",
     "export VLLM_LOGGING_LEVEL=INFO VLLM_MORIIO_QP_PER_TRANSFER=2", "VLLM_MORIIO_QP_PER_TRANSFER="),
    ("script", "script/roles/vllm_script/templates/serve.sh.j2", "cd /opt/vllm && exec",
     "cd /opt/vllm && VLLM_MORIIO_QP_PER_TRANSFER=2 exec", "VLLM_MORIIO_QP_PER_TRANSFER="),
    ("compose", "compose/roles/vllm_compose/templates/compose.yaml.j2", "VLLM_LOGGING_LEVEL: INFO",
     "VLLM_LOGGING_LEVEL: INFO\n      VLLM_MORIIO_QP_PER_TRANSFER: \"2\"", "VLLM_MORIIO_QP_PER_TRANSFER:"),
    ("copy-unit", "copy-unit/roles/vllm_unit/tasks/main.yml", 'Environment="HIP',
     'Environment=VLLM_MORIIO_QP_PER_TRANSFER=2\n      Environment="HIP', "VLLM_MORIIO_QP_PER_TRANSFER="),
])
def test_environment_is_the_engines_env(kind: str, file: str, old: str, new: str, at: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An export, an assignment before the command, a compose `environment:` and a unit's Environment= in a copy's
    content are the engine's env: an invalid vLLM variable is judged at its own line."""
    tmp = _copy(tmp_path, kind)
    _edit(tmp, file, old, new)
    _code, found = _run(tmp, kind, monkeypatch)
    env = [f for f in found if f["rule"].startswith("env")]
    assert env, found
    assert all("VLLM_MORIIO_QP_PER_TRANSFER" in f["message"] and where(f) == line_of(tmp, file, at)
               for f in env), found


def test_compose_string_command_with_entrypoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`entrypoint:` + a string `command:` (split as a shell splits it), `environment:` as a list."""
    tmp = _copy(tmp_path, "compose")
    template = "compose/roles/vllm_compose/templates/compose.yaml.j2"
    (tmp / template).write_text(
        "services:\n"
        "  engine:\n"
        "    image: registry.local/inference:1\n"
        "    entrypoint: [python3, -m, vllm.entrypoints.openai.api_server]\n"
        "    environment:\n"
        "      - VLLM_MORIIO_QP_PER_TRANSFER=2\n"
        "    command: >-\n"
        "      --model {{ vllm_model }} --tensor-parallel-size {{ tp }}\n"
        "      --kv-transfer-config '{\"kv_connector\": \"MoRIIOConnector\", \"kv_role\": \"{{ kv_role }}\","
        " \"kv_connector_extra_config\": {\"read_mode\": \"true\", \"http_port\": \"8000\", \"handshake_port\":"
        " \"6301\", \"notify_port\": \"61005\"}}'\n", encoding="utf-8")
    _edit(tmp, "compose/site.yml", "tp: 4", "tp: 6", 2)
    _edit(tmp, "compose/site.yml", "tp: 6", "tp: 4", 1)
    _code, found = _run(tmp, "compose", monkeypatch)
    assert [(f["rule"], where(f)) for f in found if f["rule"] == "tp-ratio[moriio]"] == [
        ("tp-ratio[moriio]", "compose/site.yml:13:9")]
    env = [f for f in found if f["rule"].startswith("env")]
    assert env and all(where(f) == line_of(tmp, template, "VLLM_MORIIO_QP_PER_TRANSFER=") for f in env), found


def test_environment_file_is_said_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = _copy(tmp_path, "copy-unit")
    tasks = "copy-unit/roles/vllm_unit/tasks/main.yml"
    _edit(tmp, tasks, 'Environment="HIP', 'EnvironmentFile=-/etc/vllm/env\n      Environment="HIP')
    code, found = _run(tmp, "copy-unit", monkeypatch)
    assert code == 0
    assert [(f["rule"], f["message"], where(f), f["hosts"]) for f in found] == [
        ("unresolved", "EnvironmentFile=-/etc/vllm/env is not read: the variables it sets are not in the engine's env "
         "pdlint checks", line_of(tmp, tasks, "EnvironmentFile"), ["mi-d01", "mi-p01"])]


def test_shell_expansion_is_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$MODEL` the script does not set is the GPU host's: the engine's arguments are not read, and it is said."""
    tmp = _copy(tmp_path, "script")
    template = "script/roles/vllm_script/templates/serve.sh.j2"
    _edit(tmp, template, "serve {{ vllm_model }}", "serve $MODEL")
    code, found = _run(tmp, "script", monkeypatch)
    assert code == 0
    assert {(f["rule"], where(f)) for f in found} == {
        ("unresolved", line_of(tmp, "script/roles/vllm_script/tasks/main.yml", "name: Write"))}
    assert all(f["message"].startswith("the launch script /opt/vllm/serve.sh cannot be read statically ($MODEL is "
                                       "expanded by the shell on the GPU host") for f in found), found


def test_a_shell_variable_read_by_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`TP=6` then `--tensor-parallel-size "$TP"`: the script's own variable, at the line that set it."""
    tmp = _copy(tmp_path, "copy-script")
    script = "copy-script/roles/vllm_decode/files/serve.sh"
    _edit(tmp, script, "exec python3", "TP=6\nexec python3")
    _edit(tmp, script, "--tensor-parallel-size 4", '--tensor-parallel-size "$TP"')
    _code, found = _run(tmp, "copy-script", monkeypatch)
    assert [(f["rule"], where(f)) for f in found if f["rule"] == "tp-ratio[moriio]"] == [
        ("tp-ratio[moriio]", line_of(tmp, script, "TP=6"))]


def test_other_copies_and_templates_say_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of another file (a config whose content reads a registered result, a binary, a file the role does not
    hold) and a template of a page are no launch: the clean project stays clean."""
    tmp = _copy(tmp_path, "script")
    role = tmp / "script" / "roles" / "vllm_script"
    (role / "files").mkdir()
    (role / "files" / "model.bin").write_bytes(b"\x00\xff\xfe")
    (role / "templates" / "index.html.j2").write_text("<p>{{ vllm_pd_role }}'s engine: vllm serve</p>\n")
    tasks = role / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + (
        "\n- name: weights\n  ansible.builtin.copy: {src: model.bin, dest: /opt/model.bin}\n"
        "- name: elsewhere\n  ansible.builtin.copy: {src: missing.conf, dest: /etc/missing.conf}\n"
        "- name: config\n  ansible.builtin.copy:\n    dest: /etc/vllm/probe.json\n"
        "    content: \"{{ probe.stdout }}\"\n"
        "- name: page\n  ansible.builtin.template: {src: index.html.j2, dest: /var/www/index.html}\n"))
    assert _run(tmp, "script", monkeypatch) == (0, [])


def test_unclosed_quote_in_a_script_is_an_error_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = _copy(tmp_path, "copy-script")
    script = "copy-script/roles/vllm_decode/files/serve.sh"
    _edit(tmp, script, "--port 8000", "--port '8000")
    code, found = _run(tmp, "copy-script", monkeypatch)
    assert code == 1
    invalid = [f for f in found if f["rule"] == "vllm-args[invalid]"]
    assert [(f["message"], where(f), f["hosts"]) for f in invalid] == [
        (f"{script}: unbalanced single quote: a shell would not run this command line",
         line_of(tmp, script, "exec python3"), ["mi-d01"])]  # the command's first line


@pytest.mark.parametrize("launcher", ["python3 -m dynamo.vllm --model", "python -m vllm.entrypoints.openai.api_server "
                                      "--model", "/opt/vllm/bin/vllm serve"])
def test_each_launcher_in_a_script(launcher: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo's worker and the api_server module are read as vllm serve is (Dynamo's worker takes no --port)."""
    tmp = _copy(tmp_path, "script")
    template = "script/roles/vllm_script/templates/serve.sh.j2"
    _edit(tmp, template, "/opt/vllm/bin/vllm serve", launcher)
    _edit(tmp, template, "    --port {{ vllm_port }} \\\n", "")
    assert _run(tmp, "script", monkeypatch) == (0, [])
    _edit(tmp, "script/site.yml", "tp: 4", "tp: 6")
    _edit(tmp, "script/site.yml", "tp: 6", "tp: 4", 1)  # the prefill play's back to 4
    _code, found = _run(tmp, "script", monkeypatch)
    assert [(f["rule"], f["message"], where(f)) for f in found if f["rule"] == "tp-ratio[moriio]"] == [
        ("tp-ratio[moriio]", RATIO, "script/site.yml:13:9")]

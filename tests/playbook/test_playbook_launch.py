"""`pdlint --playbook`: a role's systemd unit rendered per host is the command line the rules judge, each finding
at the line that set the deciding value (a role default, a play var, a vars_files line, a role param, the
inventory), and what cannot be rendered is `unresolved` with the reason."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from pdlint.cli import main

UNIT = """\
[Unit]
Description=vLLM {{ vllm_pd_role }}

[Service]
Environment="CUDA_VISIBLE_DEVICES={{ gpus }}"
Environment=VLLM_NIXL_SIDE_CHANNEL_HOST={{ ansible_host }}
# the engine
ExecStart=/opt/venv/bin/vllm serve {{ model }} \\
    --port {{ port }} \\
    {{ tp_flag }} {{ tp }} \\
{% if kv is defined %}
    --kv-transfer-config '{{ kv | to_json }}'
{% endif %}
Restart=always
"""
DEFAULTS = {"model": "meta-llama/Llama-3.1-8B-Instruct", "port": 8000, "tp": 4,
            "gpus": "{{ range(tp | int) | join(',') }}", "tp_flag": "--tensor-parallel-size"}
MORIIO = {"read_mode": "true", "http_port": "8000", "handshake_port": "6301", "notify_port": "61005"}


def _kv(connector: str, role: str) -> dict[str, Any]:
    extra = {"kv_connector_extra_config": MORIIO} if connector == "MoRIIOConnector" else {}
    return {"kv_connector": connector, "kv_role": role, **extra}


def project(tmp: Path, *, site: list[dict[str, Any]] | None = None, unit: str = UNIT,
            defaults: dict[str, Any] | None = None, group_vars: dict[str, dict[str, Any]] | None = None,
            extra: dict[str, str] | None = None, connector: str = "NixlConnector") -> Path:
    """A P/D project: prefill and decode groups, one role whose template is unit."""
    groups = {"all": {"vllm_pd_deployment": "chat", "vllm_version": "0.32.0", "vllm_host_gpu_count": 8},
              "prefill": {"vllm_pd_role": "prefill", "kv": _kv(connector, "kv_producer")},
              "decode": {"vllm_pd_role": "decode", "kv": _kv(connector, "kv_consumer")}}
    for name, values in (group_vars or {}).items():
        groups[name] = {**groups.get(name, {}), **values}
    site = site if site is not None else [{"hosts": "prefill:decode", "gather_facts": False,
                                           "roles": ["vllm"]}]
    files = {
        "inventory/hosts.yml": yaml.safe_dump({"all": {"children": {"prefill": {"hosts": {"p1": {"ansible_host": "10.0.0.1"}}},
                                                                    "decode": {"hosts": {"d1": {"ansible_host": "10.0.0.2"}}}}}}),
        **{f"inventory/group_vars/{g}.yml": yaml.safe_dump(v, sort_keys=False) for g, v in groups.items()},
        "site.yml": yaml.safe_dump(site, sort_keys=False),
        "roles/vllm/defaults/main.yml": yaml.safe_dump({**DEFAULTS, **(defaults or {})}, sort_keys=False),
        "roles/vllm/tasks/main.yml": "- name: unit\n  ansible.builtin.template:\n    src: vllm.service.j2\n"
                                     "    dest: /etc/systemd/system/vllm.service\n",
        "roles/vllm/templates/vllm.service.j2": unit,
        **(extra or {}),
    }
    for name, text in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp


def run(tmp: Path, monkeypatch: pytest.MonkeyPatch, *more: str) -> tuple[int, list[dict[str, Any]]]:
    monkeypatch.chdir(tmp)
    return lint(["-i", "inventory", "--playbook", "site.yml", *more])


def lint(argv: list[str]) -> tuple[int, list[dict[str, Any]]]:
    """pdlint's exit code and JSON findings (its stdout is a file, as ansible-core's display expects)."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        saved = sys.stdout
        sys.stdout = out
        try:
            code = main([*argv, "--format", "json"])
        finally:
            sys.stdout = saved
        out.seek(0)
        return code, json.loads(out.read())


def where(found: dict[str, Any]) -> str:
    return f"{found['file']}:{found['line']}:{found['column']}"


def line_of(tmp: Path, file: str, text: str) -> str:
    """file:line:col of the first text in file."""
    source = (tmp / file).read_text(encoding="utf-8")
    index = source.index(text)
    line = source.count("\n", 0, index) + 1
    return f"{file}:{line}:{index - (source.rfind(chr(10), 0, index) + 1) + 1}"


def test_clean_project_gives_no_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(project(tmp_path), monkeypatch) == (0, [])


@pytest.mark.parametrize("spelling", ["--tensor-parallel-size", "-tp"])
def test_play_var_decides_tp_at_its_line(spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NIXL on 0.32.0 pairs a prefill TP 8 with decode TP 4 fine; decode TP 3 from a play var is not."""
    site = [{"hosts": "prefill", "roles": ["vllm"]},
            {"hosts": "decode", "vars": {"tp": 3}, "roles": ["vllm"]}]
    tmp = project(tmp_path, site=site, defaults={"tp": 8, "tp_flag": spelling, "gpus": "0"},
                  group_vars={"all": {"vllm_model_num_attention_heads": 24, "vllm_model_num_kv_heads": 24,
                                      "vllm_model_is_mla": False}})
    code, found = run(tmp, monkeypatch)
    assert code == 1
    ratio = [f for f in found if f["rule"] == "tp-ratio[nixl]"]
    assert len(ratio) == 1, found
    assert ratio[0]["message"].startswith("prefill TP 8 is not a multiple of decode TP 3")
    assert where(ratio[0]) == line_of(tmp, "site.yml", "3")  # `tp: 3` in the decode play's vars
    assert not [f for f in found if f["rule"].startswith("vllm-args")]


@pytest.mark.parametrize("layer", ["vars_files", "role_param", "inventory"])
def test_other_layers_point_at_their_line(layer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's mistake (MoRIIO, prefill TP 4, decode TP 6) set in another layer each time."""
    decode: dict[str, Any] = {"hosts": "decode", "roles": ["vllm"]}
    extra: dict[str, str] = {}
    group_vars: dict[str, dict[str, Any]] = {"all": {"vllm_model": "deepseek-ai/DeepSeek-V3"}}
    if layer == "vars_files":
        decode["vars_files"] = ["decode.yml"]
        extra["decode.yml"] = "# decode sizing\ntp: 6\n"
        expected = ("decode.yml", "6")
    elif layer == "role_param":
        decode["roles"] = [{"role": "vllm", "tp": 6}]
        expected = ("site.yml", "6")
    else:
        group_vars["decode"] = {"tp": 6}
        expected = ("inventory/group_vars/decode.yml", "tp: 6")
    site = [{"hosts": "prefill", "roles": ["vllm"]}, decode]
    tmp = project(tmp_path, site=site, group_vars=group_vars, extra=extra, connector="MoRIIOConnector",
                  defaults={"model": "{{ vllm_model }}"})
    _code, found = run(tmp, monkeypatch)
    ratio = [f for f in found if f["rule"] == "tp-ratio[moriio]"]
    assert [f["message"] for f in ratio] == ["decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"]
    at = line_of(tmp, *expected)
    if layer == "inventory":  # the value's column, after `tp: `
        file, line, col = at.split(":")
        at = f"{file}:{line}:{int(col) + 4}"
    assert where(ratio[0]) == at


def test_play_var_over_inventory_tp_is_no_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inventory's vllm_tensor_parallel_size is what the template reads; a play var overrides it: the finding
    is at the play var, nothing at the inventory line (the line runs, not the variable)."""
    unit = UNIT.replace("{{ tp_flag }} {{ tp }}", "--tensor-parallel-size {{ vllm_tensor_parallel_size }}")
    site = [{"hosts": "prefill", "roles": ["vllm"]},
            {"hosts": "decode", "vars": {"vllm_tensor_parallel_size": 6}, "roles": ["vllm"]}]
    tmp = project(tmp_path, site=site, unit=unit, connector="MoRIIOConnector",
                  group_vars={"all": {"vllm_tensor_parallel_size": 4}},
                  defaults={"model": "deepseek-ai/DeepSeek-V3",
                            "gpus": "{{ range(vllm_tensor_parallel_size | int) | join(',') }}"})
    _code, found = run(tmp, monkeypatch)
    assert {(f["rule"], where(f)) for f in found} == {
        ("tp-ratio[moriio]", line_of(tmp, "site.yml", "6")), ("tp[heads]", line_of(tmp, "site.yml", "6"))}


def test_environment_lines_are_the_engines_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Environment= feeds the engine's env: an invalid value of a vLLM variable is judged at the unit's line."""
    unit = UNIT.replace('Environment="CUDA_VISIBLE_DEVICES={{ gpus }}"',
                        'Environment="CUDA_VISIBLE_DEVICES={{ gpus }}" VLLM_NIXL_SIDE_CHANNEL_PORT=notaport')
    tmp = project(tmp_path, unit=unit)
    _code, found = run(tmp, monkeypatch)
    env = [f for f in found if f["rule"].startswith("env")]
    assert env and all(where(f) == line_of(tmp, "roles/vllm/templates/vllm.service.j2",
                                           "VLLM_NIXL_SIDE_CHANNEL_PORT=") for f in env), found


def test_unknown_flag_in_template_is_at_the_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unit = UNIT.replace("--port {{ port }}", "--port {{ port }} --tensor-paralel-size 2")
    tmp = project(tmp_path, unit=unit)
    _code, found = run(tmp, monkeypatch)
    invalid = [f for f in found if f["rule"] == "vllm-args[invalid]"]
    assert len(invalid) == 1 and "--tensor-paralel-size" in invalid[0]["message"], found
    assert where(invalid[0]) == line_of(tmp, "roles/vllm/templates/vllm.service.j2", "--tensor-paralel-size")


@pytest.mark.parametrize(("change", "reason"), [
    ({"gpus": "{{ lookup('env', 'HOME') }}"}, "lookups are disabled"),
    ({"port": "{{ undefined_port_var }}"}, "undefined_port_var"),
])
def test_unrenderable_template_is_unresolved(change: dict[str, Any], reason: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = project(tmp_path, defaults=change)
    code, found = run(tmp, monkeypatch)
    assert code == 0
    assert {f["rule"] for f in found} == {"unresolved"}, found
    assert all(reason in f["message"] and where(f) == line_of(tmp, "roles/vllm/tasks/main.yml", "name: unit")
               for f in found), found


def test_unclosed_quote_is_invalid_at_execstart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = project(tmp_path, unit=UNIT.replace("'{{ kv | to_json }}'", "'{{ kv | to_json }}"))
    code, found = run(tmp, monkeypatch)
    assert code == 1
    assert [(f["rule"], where(f)) for f in found] == [
        ("vllm-args[invalid]", line_of(tmp, "roles/vllm/templates/vllm.service.j2", "ExecStart"))] * 1
    assert "unbalanced single quote" in found[0]["message"] or "quote" in found[0]["message"]


def test_template_without_execstart_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A template task that writes no engine (a logrotate file) is no launch: the inventory reading stands."""
    tmp = project(tmp_path, unit="/var/log/vllm/*.log {\n  daily\n}\n",
                  group_vars={"prefill": {"vllm_tensor_parallel_size": 2}, "decode": {"vllm_tensor_parallel_size": 2}})
    code, found = run(tmp, monkeypatch)
    assert code == 0
    assert [f["rule"] for f in found if f["severity"] == "error"] == []


def test_unreadable_playbook_is_exit_2_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = project(tmp_path)
    (tmp / "site.yml").write_text("- hosts: all\n  roles: [missing_role]\n", encoding="utf-8")
    code, found = run(tmp, monkeypatch)
    assert code == 2
    assert [(f["rule"], f["file"], f["line"]) for f in found] == [("load-error", "site.yml", 2)]
    assert "role 'missing_role' not found" in found[0]["message"]


def test_config_file_names_the_playbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = [{"hosts": "prefill", "roles": ["vllm"]}, {"hosts": "decode", "vars": {"tp": 6}, "roles": ["vllm"]}]
    tmp = project(tmp_path, site=site, connector="MoRIIOConnector",
                  defaults={"model": "deepseek-ai/DeepSeek-V3"})
    (tmp / "deploy").mkdir()
    (tmp / "site.yml").rename(tmp / "deploy" / "site.yml")
    (tmp / "deploy" / "roles").symlink_to(tmp / "roles")
    (tmp / ".pdlint.yaml").write_text("playbook: deploy/site.yml\n", encoding="utf-8")
    monkeypatch.chdir(tmp)
    code, found = lint(["-i", "inventory"])
    assert code == 1
    assert {(f["rule"], where(f)) for f in found} >= {("tp-ratio[moriio]", line_of(tmp, "deploy/site.yml", "6"))}



def _two_on_one_host(tmp: Path, second_port: Any = None, loop: bool = False) -> Path:
    """One node running a prefill and a decode engine of the same role: as two role entries, or as a loop."""
    # `port` on a role entry is the connection's port to ansible-core, never a param: the role reads api_port
    unit = UNIT.replace("{{ port }}", "{{ api_port }}").replace("{{ vllm_pd_role }}", "{{ side }}").replace(
        "# the engine", "Environment=VLLM_NIXL_SIDE_CHANNEL_PORT={{ side_port }}")
    params = [{"role": "vllm", "side": "prefill", "unit_name": "vllm-prefill", "gpus": "0,1,2,3", "side_port": 5600},
              {"role": "vllm", "side": "decode", "unit_name": "vllm-decode", "gpus": "4,5,6,7", "side_port": 5700}]
    if second_port is not None:
        params[1]["api_port"] = second_port
    site = [{"hosts": "node", "roles": params}]
    tasks = ("- name: unit\n  ansible.builtin.template:\n    src: vllm.service.j2\n"
             "    dest: /etc/systemd/system/{{ unit_name }}.service\n")
    extra = {"roles/vllm/tasks/main.yml": tasks}
    if loop:
        site = [{"hosts": "node", "roles": ["vllm"]}]
        unit = unit.replace("{{ side }}", "{{ engine.side }}").replace("{{ gpus }}", "{{ engine.gpus }}").replace(
            "{{ side_port }}", "{{ engine.side_port }}")
        extra["roles/vllm/tasks/main.yml"] = tasks.replace("{{ unit_name }}", "vllm-{{ engine.side }}") + \
            "  loop: \"{{ engines }}\"\n  loop_control: {loop_var: engine}\n"
    tmp = project(tmp, site=site, unit=unit.replace("{% if kv is defined %}", "{% if side is defined %}"),
                  extra=extra, defaults={"vllm_pd_role": "{{ side | default(engine.side) }}",
                                         "kv": {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                                         "engines": [{"side": "prefill", "gpus": "0,1,2,3", "side_port": 5600},
                                                     {"side": "decode", "gpus": "4,5,6,7", "side_port": 5700}],
                                         "side": "{{ engine.side }}", "api_port": 8000} if loop else {
                                             "vllm_pd_role": "{{ side }}", "api_port": 8000,
                                             "kv": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}})
    (tmp / "inventory" / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"children": {"node": {"hosts": {"n1": {"ansible_host": "10.0.0.9"}}}}}}), encoding="utf-8")
    for side in ("prefill", "decode"):
        (tmp / "inventory" / "group_vars" / f"{side}.yml").unlink()
    return tmp


@pytest.mark.parametrize("loop", [False, True])
def test_role_default_port_collides_at_the_default(loop: bool, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two engines on one host (the role twice with other params, or one task looping) both take the role default's
    port: the collision is at the default's line."""
    tmp = _two_on_one_host(tmp_path, loop=loop)
    _code, found = run(tmp, monkeypatch)
    ports = [f for f in found if f["rule"] == "port[collision]"]
    assert len(ports) == 1, found
    assert "8000" in ports[0]["message"]
    file, line, col = line_of(tmp, "roles/vllm/defaults/main.yml", "api_port: 8000").split(":")
    assert where(ports[0]) == f"{file}:{line}:{int(col) + len('api_port: ')}"


def test_two_engines_on_their_own_ports_are_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = _two_on_one_host(tmp_path, second_port=8100)
    code, found = run(tmp, monkeypatch)
    assert (code, [f for f in found if f["severity"] == "error"]) == (0, []), found


@pytest.mark.parametrize("pattern", ["decode[0]", "all[0:1]", "prefill,decode[-1]"])
def test_pattern_by_inventory_order_is_unresolved(pattern: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A subscript selects by the inventory's order: the play is not read, and that is said at the play."""
    site = [{"hosts": "prefill", "roles": ["vllm"]}, {"hosts": pattern, "vars": {"tp": 6}, "roles": ["vllm"]}]
    tmp = project(tmp_path, site=site)
    _code, found = run(tmp, monkeypatch)
    said = [f for f in found if f["rule"] == "unresolved"]
    assert [(f["message"], where(f)) for f in said] == [
        (f"hosts: {pattern} selects hosts by their order in the inventory, which pdlint does not model: the play is "
         "not read", line_of(tmp, "site.yml", "hosts: " + pattern))]
    assert not [f for f in found if f["rule"].startswith("tp")]


@pytest.mark.parametrize("how", ["include_role", "ansible.builtin.import_role", "dependency"])
def test_role_reached_by_a_task_or_a_dependency_is_launched(how: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The launch role run by an include_role/import_role task (its `vars:` deciding decode TP 3), or as a meta
    dependency of the play's role (a param deciding it), is read as `roles:` is; a `when: false` include is not."""
    prefill = {"hosts": "prefill", "roles": ["vllm"]}
    extra: dict[str, str] = {}
    if how == "dependency":
        decode = {"hosts": "decode", "roles": ["serve"]}
        extra["roles/serve/meta/main.yml"] = yaml.safe_dump({"dependencies": [{"role": "vllm", "tp": 3}]})
        file = "roles/serve/meta/main.yml"
    else:
        decode = {"hosts": "decode", "tasks": [{"name": "skipped", "include_role": {"name": "vllm"}, "when": False,
                                                "vars": {"tp": 5}},
                                               {"name": "engine", how: {"name": "vllm"}, "vars": {"tp": 3}}]}
        file = "site.yml"
    tmp = project(tmp_path, site=[prefill, decode], defaults={"tp": 8, "gpus": "0"}, extra=extra,
                  group_vars={"all": {"vllm_model_num_attention_heads": 24, "vllm_model_num_kv_heads": 24,
                                      "vllm_model_is_mla": False}})
    code, found = run(tmp, monkeypatch)
    ratio = [f for f in found if f["rule"] == "tp-ratio[nixl]"]
    assert code == 1 and len(ratio) == 1, found
    assert ratio[0]["message"].startswith("prefill TP 8 is not a multiple of decode TP 3")
    assert where(ratio[0]) == line_of(tmp, file, "3")


@pytest.mark.parametrize("allowed", [False, True])
def test_allow_lookups_renders_the_playbooks_lookups(allowed: bool, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A play var that reads a lookup is refused (unresolved at the task) unless --allow-lookups, which renders it as
    the inventory's lookups are rendered: then decode TP 6 is found at the play var that reads it."""
    monkeypatch.setenv("PDLINT_TEST_DECODE_TP", "6")
    site = [{"hosts": "prefill", "roles": ["vllm"]},
            {"hosts": "decode", "vars": {"tp": "{{ lookup('env', 'PDLINT_TEST_DECODE_TP') }}"}, "roles": ["vllm"]}]
    tmp = project(tmp_path, site=site, connector="MoRIIOConnector", defaults={"model": "deepseek-ai/DeepSeek-V3"})
    code, found = run(tmp, monkeypatch, *(["--allow-lookups"] if allowed else []))
    if not allowed:
        assert code == 0
        assert {(f["rule"], where(f), tuple(f["hosts"])) for f in found} == {
            ("unresolved", line_of(tmp, "roles/vllm/tasks/main.yml", "name: unit"), ("d1",))}
        assert "lookups are disabled (pass --allow-lookups to render them)" in found[0]["message"]
        return
    assert code == 1
    assert [(f["rule"], f["message"], where(f)) for f in found if f["rule"].startswith("tp-ratio")] == [
        ("tp-ratio[moriio]", "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)",
         line_of(tmp, "site.yml", "'{{ lookup"))]  # the quoted scalar's start

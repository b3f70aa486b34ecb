"""The config file's `variables:` mapping: a role's own names give the contract form's findings,
pointing at the role's variable, in the CLI (both loaders), explain, the play and the language server."""
from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible_collection import play
from conftest import write_tree
from pytest_lsp import LanguageClient
from test_lsp_server import client, hover_text, open_doc, published  # noqa: F401 - client: the server fixture
from test_rules_cli import run

from pdlint.config.variables import Mapped
from pdlint.finding import Origin
from pdlint.hostvars import HostVars, Unresolved
from pdlint.launch import mapping

_KV = ('{{kv_connector: MoRIIOConnector, kv_role: {role}, kv_connector_extra_config: {{read_mode: "true", '
       'http_port: 8000, handshake_port: 6301, notify_port: 61005}}}}')
MAPPING = """\
variables:
  vllm_pd_role: "{{ 'prefill' if 'prefill' in group_names else 'decode' }}"
  vllm_pd_deployment: "{{ service }}"
  vllm_tensor_parallel_size: "{{ tp | int }}"
  vllm_model: "{{ model_name }}"
  vllm_kv_transfer_config: "{{ kv }}"
  vllm_version: "0.32.0"
"""
# A role's own names: the seed's mistake (prefill TP 4, decode TP 6 over MoRIIO read mode)
ROLE = {
    "hosts.yml": """\
        all:
          vars: {service: chat, model_name: deepseek-ai/DeepSeek-V2-Lite}
          children:
            prefill: {hosts: {p1: {}}}
            decode: {hosts: {d1: {}}}
        """,
    "group_vars/prefill.yml": f"tp: 4\nkv: {_KV.format(role='kv_producer')}\n",
    "group_vars/decode.yml": f"tp: '6'\nkv: {_KV.format(role='kv_consumer')}\n",
    ".pdlint.yaml": MAPPING,
}
# The same inventory in the contract's names
CONTRACT = {
    "hosts.yml": """\
        all:
          vars: {vllm_pd_deployment: chat, vllm_model: deepseek-ai/DeepSeek-V2-Lite, vllm_version: "0.32.0"}
          children:
            prefill: {hosts: {p1: {}}}
            decode: {hosts: {d1: {}}}
        """,
    "group_vars/prefill.yml": "vllm_pd_role: prefill\nvllm_tensor_parallel_size: 4\n"
                              f"vllm_kv_transfer_config: {_KV.format(role='kv_producer')}\n",
    "group_vars/decode.yml": "vllm_pd_role: decode\nvllm_tensor_parallel_size: 6\n"
                             f"vllm_kv_transfer_config: {_KV.format(role='kv_consumer')}\n",
}


def findings(tmp: Path, files: dict[str, str], monkeypatch, capsys, *argv: str) -> tuple[int, list[dict[str, Any]]]:
    monkeypatch.chdir(write_tree(tmp, files))
    code, out, err = run(["hosts.yml", "--format", "json", "--no-cache", *argv], capsys)
    assert code in (0, 1), err
    return code, json.loads(out)


def shape(found: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((f["rule"], f["message"], tuple(f["hosts"])) for f in found)


@pytest.mark.parametrize("loader", ["fast", "ansible"])
def test_role_names_give_the_contract_findings_at_the_role_variable(tmp_path, monkeypatch, capsys, loader) -> None:
    _, contract = findings(tmp_path / "contract", CONTRACT, monkeypatch, capsys, "--loader", loader)
    _, role = findings(tmp_path / "role", ROLE, monkeypatch, capsys, "--loader", loader)
    assert shape(role) == shape(contract)
    assert "tp-ratio[moriio]" in {f["rule"] for f in role}
    where = {(f["rule"], f["file"], f["line"], f["column"]) for f in role}
    assert ("tp-ratio[moriio]", "group_vars/decode.yml", 1, 5) in where  # the role's `tp: '6'`, not the config


def test_explain_says_where_a_mapped_value_came_from(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(write_tree(tmp_path, ROLE))
    code, out, _ = run(["explain", "hosts.yml", "--format", "json"], capsys)
    assert code in (0, 1)
    mapped = json.loads(out)["mapped"]
    assert "d1: vllm_tensor_parallel_size mapped by .pdlint.yaml:4:30 from tp (group_vars/decode.yml:1:5)" in mapped
    assert "d1, p1: vllm_pd_role mapped by .pdlint.yaml:2:17" in mapped
    line = "p1: vllm_tensor_parallel_size mapped by .pdlint.yaml:4:30 from tp (group_vars/prefill.yml:1:5)"
    for fmt in ("text", "markdown", "html"):  # every format says it
        code, out, _ = run(["explain", "hosts.yml", "--format", fmt], capsys)
        assert line in (html.unescape(out) if fmt == "html" else out), fmt


def test_a_hosts_own_contract_variable_wins(tmp_path, monkeypatch, capsys) -> None:
    files = {**ROLE, "host_vars/d1.yml": "vllm_tensor_parallel_size: 8\n"}
    _, found = findings(tmp_path, files, monkeypatch, capsys)
    assert "tp-ratio[moriio]" not in {f["rule"] for f in found}
    assert not [f for f in found if f["file"] == ".pdlint.yaml"]


@pytest.mark.parametrize(("expression", "why"), [
    ("{{ tp_size }}", "the host has no tp_size"),
    ("{{ lookup('env', 'HOME') }}", "lookups are disabled"),
    ("{{ tp.__class__ }}", "unsafe"),
])
def test_an_expression_that_cannot_render_is_unresolved_at_the_mapping_line(tmp_path, monkeypatch, capsys,
                                                                           expression: str, why: str) -> None:
    config = MAPPING.replace('"{{ tp | int }}"', json.dumps(expression))
    _, found = findings(tmp_path, {**ROLE, ".pdlint.yaml": config}, monkeypatch, capsys)
    unresolved = [f for f in found if f["rule"] == "unresolved"]
    assert {(f["file"], f["line"]) for f in unresolved} == {(".pdlint.yaml", 4)}, found
    assert all(why in f["message"] and "vllm_tensor_parallel_size" in f["message"] for f in unresolved)
    assert "tp-ratio[moriio]" not in {f["rule"] for f in found}  # never guessed


def test_a_typo_in_a_mapping_key_is_a_config_error_with_did_you_mean(tmp_path, monkeypatch, capsys) -> None:
    config = MAPPING.replace("vllm_tensor_parallel_size:", "vllm_tensor_paralel_size:")
    monkeypatch.chdir(write_tree(tmp_path, {**ROLE, ".pdlint.yaml": config}))
    code, _, err = run(["hosts.yml"], capsys)
    assert code == 2
    assert ".pdlint.yaml:4: variables.vllm_tensor_paralel_size" in err
    assert "did you mean vllm_tensor_parallel_size" in err and "Traceback" not in err


def test_pyproject_variables_keep_their_lines(tmp_path, monkeypatch, capsys) -> None:
    table = "[tool.pdlint.variables]\n" + "\n".join(
        f"{line.split(':', 1)[0].strip()} = {line.split(':', 1)[1].strip()}" for line in MAPPING.splitlines()[1:])
    files = {k: v for k, v in ROLE.items() if k != ".pdlint.yaml"}
    _, found = findings(tmp_path, {**files, "pyproject.toml": "[project]\nname = 'x'\n\n" + table + "\n"},
                        monkeypatch, capsys)
    assert "tp-ratio[moriio]" in {f["rule"] for f in found}
    config = (tmp_path / "pyproject.toml").read_text().replace('"{{ tp | int }}"', '"{{ nope }}"')
    (tmp_path / "pyproject.toml").write_text(config)
    _code, out, _ = run(["hosts.yml", "--format", "json", "--no-cache"], capsys)
    [f] = [f for f in json.loads(out) if f["rule"] == "unresolved"]
    assert (f["file"], f["line"], f["column"]) == ("pyproject.toml", 7, 29)


def test_the_no_pd_hosts_lines_pasted_into_the_config_make_the_hosts_take_part(tmp_path, monkeypatch, capsys) -> None:
    files = {"hosts.yml": "all:\n  children:\n    prefill_nodes: {hosts: {p1: {}}}\n"
                          "    decode_nodes: {hosts: {d1: {}}}\n",
             "group_vars/all.yml": "vllm_model: deepseek-ai/DeepSeek-V2-Lite\n"}
    _, found = findings(tmp_path, files, monkeypatch, capsys)
    [warning] = [f for f in found if f["rule"] == "inventory[no-pd-hosts]"]
    lines = warning["hint"].split(".pdlint.yaml:\n", 1)[1]
    assert lines.startswith("variables:")
    (tmp_path / ".pdlint.yaml").write_text(lines + "\n")
    _, found = findings(tmp_path, files, monkeypatch, capsys)
    assert "inventory[no-pd-hosts]" not in {f["rule"] for f in found}
    _code, out, _ = run(["explain", "hosts.yml", "--format", "json"], capsys)
    [dep] = json.loads(out)["deployments"]
    assert dep["name"] == "pd" and sorted(e["role"] for e in dep["engines"]) == ["decode", "prefill"]


def test_the_fast_loaders_memo_never_hands_values_filtered_for_other_names(tmp_path) -> None:
    from pdlint.cache import filememo
    from pdlint.load import select

    write_tree(tmp_path, ROLE)
    memo = filememo.Memo()  # the language server's: it keeps variables between checks
    plain = select.load([str(tmp_path / "hosts.yml")], memo=memo, note=lambda _: None)
    assert "tp" not in plain[0].values
    kept = select.load([str(tmp_path / "hosts.yml")], memo=memo, note=lambda _: None, keep_names=frozenset({"tp"}))
    assert {hv.host: hv.values["tp"] for hv in kept} == {"d1": "6", "p1": 4}
    assert {hv.host: hv.groups for hv in kept} == {"d1": ("decode",), "p1": ("prefill",)}


def _host(**values: Any) -> HostVars:
    return HostVars("p1", values, {(k,): Origin("group_vars/prefill.yml", i + 1, 5) for i, k in enumerate(values)},
                    groups=("prefill",))


AT = Origin(".pdlint.yaml", 3, 30)


@pytest.mark.parametrize(("expression", "values", "expected"), [
    ("{{ tp }}", {"tp": 4}, 4),                    # ansible-core 2.19's native types
    ("{{ tp | int }}", {"tp": "6"}, 6),
    ("{{ tp * 2 }}", {"tp": 4}, 8),
    ("{{ inventory_hostname }}", {}, "p1"),
    ("{{ group_names | first }}", {}, "prefill"),
    ("chat", {}, "chat"),                          # not a template: the value itself
    (8, {}, 8),
    ("{{ tp | default(omit) }}", {}, None),        # omitted: left unset
    ("{{ none }}", {}, None),
])
def test_rendering(expression: Any, values: dict[str, Any], expected: Any) -> None:
    hv, found = mapping.apply(_host(**values), [Mapped("vllm_tensor_parallel_size", expression, AT)])
    assert found == [] and hv.values.get("vllm_tensor_parallel_size") == expected
    assert "tp" not in hv.values  # the role's own names only fed the mapping


def test_origins_notes_and_secrets() -> None:
    kv = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    origins = {("kv",): Origin("g.yml", 2, 5), ("kv", "kv_role"): Origin("g.yml", 3, 7), ("tp",): Origin("g.yml", 1, 5),
               ("a",): Origin("g.yml", 4, 4)}
    hv = HostVars("p1", {"kv": kv, "tp": 4, "a": 1}, origins, secrets=frozenset({("tp",)}))
    out, _ = mapping.apply(hv, [Mapped("vllm_kv_transfer_config", "{{ kv }}", AT),
                                Mapped("vllm_tensor_parallel_size", "{{ tp }}", AT),
                                Mapped("vllm_port", "{{ 8000 + a + tp }}", AT)])
    assert out.values["vllm_kv_transfer_config"] == kv
    assert out.origin("vllm_kv_transfer_config", "kv_role") == Origin("g.yml", 3, 7)  # nested lines kept
    assert out.origin("vllm_tensor_parallel_size") == Origin("g.yml", 1, 5)
    assert out.origin("vllm_port") == AT  # two variables read: the mapping's line
    assert out.notes[("vllm_tensor_parallel_size",)] == \
        "vllm_tensor_parallel_size mapped by .pdlint.yaml:3:30 from tp (g.yml:1:5)"
    assert out.secrets == {("vllm_tensor_parallel_size",), ("vllm_port",)}  # a vaulted input: a secret too
    failed, _ = mapping.apply(HostVars("p1", {"tp": Unresolved("vault")}), [Mapped("vllm_tensor_parallel_size",
                                                                                   "{{ tp }}", AT)])
    assert failed.values["vllm_tensor_parallel_size"] == Unresolved("tp cannot be rendered: vault")


def test_names_read() -> None:
    assert mapping.keep_names([Mapped("vllm_pd_role", "{{ 'p' if 'p' in group_names or x else y }}", AT),
                               Mapped("vllm_args", ["{{ a }}", {"b": "{{ b | int }}"}], AT),
                               Mapped("vllm_model", "{{ broken", AT), Mapped("vllm_pd_deployment", "chat", AT),
                               Mapped("vllm_revision", "{{ rev | regex_replace('^v') is match('x') }}", AT)]) \
        == {"x", "y", "a", "b", "rev"}  # Ansible's filters and tests, unknown to plain Jinja, hide no name


def test_no_mapping_imports_no_ansible() -> None:
    code = ("import sys; from pdlint.launch import mapping; from pdlint.hostvars import HostVars;"
            "mapping.apply(HostVars('h', {}), ()); print('ansible' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_the_play_applies_the_same_mapping(collections: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    _, cli = findings(tmp_path / "inv", ROLE, monkeypatch, capsys)
    playbook = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}", config: "%s"}
      register: r
      ignore_errors: true
    - ansible.builtin.copy: {content: "{{ r.findings | to_json }}", dest: "{{ playbook_dir }}/play.json"}
""" % (tmp_path / "inv" / ".pdlint.yaml")
    proc = play(collections, playbook, str(tmp_path / "inv" / "hosts.yml"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = json.loads((tmp_path / "play.json").read_text())
    assert shape(from_play) == shape(cli)
    where = {(f["rule"], Path(f["file"]).name, f["line"], f["column"]) for f in cli}
    assert {(f["rule"], Path(f["file"]).name, f["line"], f["column"]) for f in from_play} == where


@pytest.mark.asyncio
async def test_the_language_server_applies_the_mapping_and_hover_says_where(client: LanguageClient,  # noqa: F811
                                                                           tmp_path: Path, monkeypatch, capsys):
    _, cli = findings(tmp_path, ROLE, monkeypatch, capsys)
    decode = tmp_path / "group_vars" / "decode.yml"
    open_doc(client, decode)
    diags = await published(client, decode)
    assert sorted((str(d.code), d.range.start.line, d.range.start.character) for d in diags) == \
        sorted((f["rule"], f["line"] - 1, f["column"] - 1) for f in cli if f["file"] == "group_vars/decode.yml")
    assert "tp-ratio[moriio]" in {str(d.code) for d in diags}
    text = await hover_text(client, decode, 0, 0)  # on the role's `tp`
    assert "vllm_tensor_parallel_size mapped by" in text and ".pdlint.yaml:4:30 from tp (" in text
    assert text.rstrip().endswith(": d1")


def test_a_vaulted_input_is_unresolved_without_the_password_and_masked_with_it(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "pw").write_text("secret\n")
    vaulted = subprocess.run([str(Path(sys.executable).parent / "ansible-vault"), "encrypt_string",
                              "--vault-password-file", str(tmp_path / "pw"), "6", "--name", "tp"],
                             capture_output=True, text=True, check=True).stdout
    decode = vaulted.rstrip("\n") + "\n" + ROLE["group_vars/decode.yml"].split("\n", 1)[1]
    _, found = findings(tmp_path / "inv", {**ROLE, "group_vars/decode.yml": decode}, monkeypatch, capsys)
    [f] = [f for f in found if f["rule"] == "unresolved"]
    assert (f["file"], f["line"], f["hosts"]) == (".pdlint.yaml", 4, ["d1"])
    assert "tp cannot be rendered: vault-encrypted" in f["message"] and "--vault-password-file" in f["hint"]
    _, found = findings(tmp_path / "inv", {}, monkeypatch, capsys, "--vault-password-file", str(tmp_path / "pw"))
    [f] = [f for f in found if f["rule"] == "tp-ratio[moriio]"]
    assert (f["file"], f["line"]) == ("group_vars/decode.yml", 1)
    assert f["message"] == "decode TP <vaulted> is not a multiple of prefill TP 4 (MoRIIO needs <vaulted>/4 acks)"

"""The collection in real ansible-playbook runs: the role fails on the seed mistake, filters render."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collection import BIN, CHECK_TO_JSON, VALIDATE, play
from conftest import ROOT


def test_role_fails_on_seed_mistake(collections: Path, tmp_path: Path) -> None:
    proc = play(collections, VALIDATE, str(ROOT / "examples" / "inventory"), tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "tp-ratio[moriio]" in proc.stdout


def test_role_passes_on_valid_inventory(collections: Path, tmp_path: Path) -> None:
    proc = play(collections, VALIDATE, str(ROOT / "examples" / "ini" / "hosts.ini"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_filters_and_test_in_a_play(collections: Path, tmp_path: Path) -> None:
    playbook = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "ACKS={{ 4 | pdlint.topology.ack_count(8) }} RANKS={{ 1 | pdlint.topology.remote_ranks(2, 8, connector='nixl') | to_json }}"
    - ansible.builtin.assert:
        that:
          - 4 is pdlint.topology.valid_tp_pair(8)
          - 4 is not pdlint.topology.valid_tp_pair(6)
          - 8 is not pdlint.topology.valid_tp_pair(2, connector='nixl', num_kv_heads=4)
"""
    proc = play(collections, playbook, "localhost,", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ACKS=2 RANKS=[4, 5, 6, 7]" in proc.stdout


def test_ack_count_error(collections: Path, tmp_path: Path) -> None:
    playbook = "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n" \
               "    - ansible.builtin.debug: {msg: \"{{ 4 | pdlint.topology.ack_count(6) }}\"}\n"
    proc = play(collections, playbook, "localhost,", tmp_path)
    assert proc.returncode == 2 and "consumer tp_size 6 must be a multiple of producer tp_size 4" in proc.stdout


@pytest.mark.parametrize(("example", "code", "rule"), [("dynamo", 0, None), ("dynamo-hma", 2, "pd-mismatch[hma]")])
def test_role_on_the_dynamo_examples(collections: Path, tmp_path: Path, example: str, code: int,
                                     rule: str | None) -> None:
    """Headless workers bind no API port; PdConnector pairs through its NIXL child and its HMA flag is checked."""
    proc = play(collections, VALIDATE, str(ROOT / "examples" / example / "hosts.yml"), tmp_path)
    assert proc.returncode == code, proc.stdout + proc.stderr
    for other in ("port[collision]", "deployment[connector]", "connector[unknown]"):
        assert other not in proc.stdout
    if rule:
        assert rule in proc.stdout and "hosts.yml:34" in proc.stdout


def test_role_finds_the_seed_mistake_inside_a_command_line(collections: Path, tmp_path: Path) -> None:
    """examples/role keeps decode's TP in vllm_args: the play points at the flag's line and column, as the CLI."""
    proc = play(collections, VALIDATE, str(ROOT / "examples" / "role"), tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert "tp-ratio[moriio]" in proc.stdout and "decode.yml:8:5" in proc.stdout, proc.stdout


@pytest.mark.parametrize("inventory", ["examples/inventory", "examples/ini/hosts.ini", "examples/role",
                                       "examples/dynamo/hosts.yml", "examples/dynamo-hma/hosts.yml",
                                       "tests/fixtures/schema/bad", "tests/fixtures/schema/good",
                                       "tests/hostile/cases/vault-value/hosts.yml",
                                       "tests/hostile/cases/duplicate-keys/hosts.yml",
                                       "tests/hostile/cases/invalid-group-name/hosts.yml", "tests/fixtures/newcomer",
                                       "tests/fixtures/memory"])
def test_cli_and_play_agree(collections: Path, tmp_path: Path, inventory: str) -> None:
    playbook = CHECK_TO_JSON + """\
    - ansible.builtin.copy:
        content: "{{ hostvars | pdlint.topology.findings(groups['all']) | to_json }}"
        dest: "{{ playbook_dir }}/filter.json"
"""
    proc = play(collections, playbook, str(ROOT / inventory), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = {(f["rule"], tuple(f["hosts"])) for f in json.loads((tmp_path / "play.json").read_text())}
    cli = subprocess.run([sys.executable, "-m", "pdlint.cli", str(ROOT / inventory), "-f", "json"],
                         capture_output=True, text=True, check=False)
    from_cli = {(f["rule"], tuple(f["hosts"])) for f in json.loads(cli.stdout)}
    assert from_play == from_cli
    from_filter = {(f["rule"], tuple(f["hosts"])) for f in json.loads((tmp_path / "filter.json").read_text())}
    # The filter sees variables only: file-level findings (no hosts: duplicate keys, group names) are the action's.
    assert from_filter == {(rule, hosts) for rule, hosts in from_cli if hosts}


def test_ansible_doc(collections: Path) -> None:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections)}
    for kind, name in (("filter", "ack_count"), ("filter", "explain"), ("module", "check"), ("test", "valid_tp_pair")):
        out = subprocess.run([str(BIN / "ansible-doc"), "-t", kind, f"pdlint.topology.{name}"], env=env,
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0 and name in out.stdout, out.stderr


def test_check_skip_and_fail_on(collections: Path, tmp_path: Path) -> None:
    playbook = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}", skip: [tp-ratio, "tp[heads]"]}
"""
    inventory = str(ROOT / "examples" / "inventory")
    assert play(collections, playbook, inventory, tmp_path).returncode == 0
    bad = play(collections, playbook.replace(', "tp[heads]"', ""), inventory, tmp_path)
    assert bad.returncode == 2 and "tp[heads]" in bad.stdout and "tp-ratio[moriio]" not in bad.stdout


SKIPPING = {
    "hosts.yml": """\
        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"},
                 vllm_model: meta-llama/Llama-3.3-70B-Instruct}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 6, vllm_model: other/model}
        """,
    "group_vars/all.yml": "pdlint_skip: [gpu, \"port[collision]\", pd-mismatch]\n",
    "host_vars/d1.yml": "pdlint_skip: [pd-mismatch, \"gpu[cuont]\"]\n",
}

REPORT = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}", fail_on: warning%s}
      register: r
      ignore_errors: true
    - ansible.builtin.copy:
        content: "{{ {'findings': r.findings, 'suppressed': r.suppressed} | to_json }}"
        dest: "{{ playbook_dir }}/play.json"
"""


def keyed(rows: list[dict], suppressed: bool) -> set[tuple[object, ...]]:
    return {(f["rule"], f["severity"], tuple(f["hosts"]), f["message"], suppressed) for f in rows}


def cli_json(inventory: Path, *argv: str) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "pdlint.cli", str(inventory), "-f", "json", "--show-suppressed",
                           *argv], capture_output=True, text=True, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(("options", "argv"), [
    ("", []),
    (", select: [gpu, pd-mismatch, skip, tp-ratio]", ["--select", "gpu,pd-mismatch,skip,tp-ratio"]),
    (", skip: [skip]", ["--ignore", "skip"]),
    (', config: "{{ playbook_dir }}/pdlint.yaml"', ["--config", "{tmp}/pdlint.yaml"]),
])
def test_suppression_and_config_agree_in_cli_and_play(collections: Path, tmp_path: Path, options: str,
                                                      argv: list[str]) -> None:
    from conftest import write_tree

    inventory = write_tree(tmp_path / "inv", SKIPPING)
    (tmp_path / "pdlint.yaml").write_text("ignore: [kv-heads]\nseverity: {skip: info, tp-ratio: warning}\n"
                                          "vllm_version: '0.31.1'\n")
    proc = play(collections, REPORT % options, str(inventory), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = json.loads((tmp_path / "play.json").read_text())
    got = keyed(from_play["findings"], False) | keyed(from_play["suppressed"], True)
    cli = cli_json(inventory, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert got == {k for f in cli for k in keyed([f], f["suppressed"])}
    rules = {(k[0], k[4]) for k in got}
    assert ("gpu[count]", True) in rules and ("pd-mismatch[model]", True) in rules
    if not options:
        assert {("skip[unused]", False), ("skip[unknown]", False), ("tp-ratio[nixl]", False)} <= rules


def test_bad_config_fails_the_task_naming_the_key(collections: Path, tmp_path: Path) -> None:
    (tmp_path / "pdlint.yaml").write_text("ignore: [nosuch]\n")
    options = ', config: "{{ playbook_dir }}/pdlint.yaml"'
    proc = play(collections, REPORT.replace("      ignore_errors: true\n", "") % options,
                str(ROOT / "examples" / "inventory"), tmp_path)
    assert proc.returncode == 2 and "pdlint.yaml: ignore: unknown rule 'nosuch'" in proc.stdout, proc.stdout


def test_role_takes_select_and_config(collections: Path, tmp_path: Path) -> None:
    (tmp_path / "pdlint.yaml").write_text("ignore: [tp-ratio]\n")
    inventory = str(ROOT / "examples" / "inventory")
    with_config = VALIDATE.replace("roles: [pdlint.topology.validate]",
                                   "roles: [{role: pdlint.topology.validate, "
                                   "pdlint_validate_config: '{{ playbook_dir }}/pdlint.yaml'}]")
    proc = play(collections, with_config, inventory, tmp_path)
    assert proc.returncode == 2 and "tp[heads]" in proc.stdout and "tp-ratio[moriio]" not in proc.stdout, proc.stdout
    selected = VALIDATE.replace("roles: [pdlint.topology.validate]",
                                "roles: [{role: pdlint.topology.validate, pdlint_validate_select: [gpu]}]")
    proc = play(collections, selected, inventory, tmp_path)
    assert proc.returncode == 0, proc.stdout


def test_play_decrypts_with_the_plays_vault_password_and_never_prints_it(collections: Path, tmp_path: Path) -> None:
    """ansible-playbook --vault-password-file: the action checks the decrypted value like the CLI, masked."""
    case = ROOT / "tests" / "hostile" / "cases" / "vault-password"
    playbook = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}"}
      register: r
      ignore_errors: true
    - ansible.builtin.copy: {content: "{{ r.findings | to_json }}", dest: "{{ playbook_dir }}/play.json"}
"""
    (tmp_path / "play.yml").write_text(playbook)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(case / "hosts.yml"), "--vault-password-file",
                           str(case / "vault-pass.txt"), str(tmp_path / "play.yml")],
                          env=env, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = json.loads((tmp_path / "play.json").read_text())
    cli = subprocess.run([sys.executable, "-m", "pdlint.cli", str(case / "hosts.yml"), "-f", "json",
                          "--vault-password-file", str(case / "vault-pass.txt")],
                         capture_output=True, text=True, check=False)
    assert [(f["rule"], f["message"]) for f in from_play] == [(f["rule"], f["message"]) for f in json.loads(cli.stdout)]
    assert any("'<vaulted>'" in f["message"] for f in from_play)
    for output in (proc.stdout, proc.stderr, cli.stdout, cli.stderr, json.dumps(from_play)):
        assert "secret-port-7f3a" not in output


def test_missing_jsonschema_is_named_up_front(collections: Path, tmp_path: Path) -> None:
    """A controller with ansible-core only: the check fails on a good inventory too, saying what to install."""
    # Shadow jsonschema with a package that cannot be imported, as on a controller that lacks it.
    shadow = tmp_path / "no-jsonschema" / "jsonschema"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'jsonschema'\", name='jsonschema')\n")
    proc = play(collections, VALIDATE, str(ROOT / "examples" / "ini" / "hosts.ini"), tmp_path,
                PYTHONPATH=str(shadow.parent))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "needs the Python package jsonschema>=4.18 on the controller" in proc.stdout, proc.stdout
    assert "pip install 'jsonschema>=4.18'" in proc.stdout


def test_explain_filter_returns_the_cli_model(collections: Path, tmp_path: Path) -> None:
    playbook = """\
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.copy:
        content: "{{ hostvars | pdlint.topology.explain(ansible_play_hosts) | to_json }}"
        dest: "{{ playbook_dir }}/explain.json"
      run_once: true
      delegate_to: localhost
    - ansible.builtin.debug:
        msg: "REJECTED={{ (hostvars | pdlint.topology.explain(ansible_play_hosts)).deployments
              | map(attribute='pairs') | flatten | selectattr('status', 'eq', 'rejected')
              | map(attribute='decode') | join(',') }}"
      run_once: true
"""
    proc = play(collections, playbook, str(ROOT / "examples" / "inventory"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "REJECTED=mi-b02\"" in proc.stdout
    from_play = json.loads((tmp_path / "explain.json").read_text())
    cli = subprocess.run([str(BIN / "pdlint"), "explain", "examples/inventory", "--format", "json"], cwd=ROOT,
                         capture_output=True, text=True, check=True)

    def pairs(doc: dict) -> list[tuple[object, ...]]:
        return [(d["name"], p["prefill"], p["decode"], p["status"], p["acks"], json.dumps(p["links"]),
                 [f["rule"] for f in p["findings"]]) for d in doc["deployments"] for p in d["pairs"]]
    # llama70b-chat's two decode engines pair alike: one class of 2 pairs (--all-pairs lists 4 pairs)
    assert pairs(from_play) == pairs(json.loads(cli.stdout)) and len(pairs(from_play)) == 3


def test_role_writes_the_explain_html_even_when_the_check_fails(collections: Path, tmp_path: Path) -> None:
    report = tmp_path / "report" / "explain.html"
    report.parent.mkdir()
    playbook = ("- hosts: all\n  gather_facts: false\n  roles:\n    - role: pdlint.topology.validate\n"
                f"      vars: {{pdlint_validate_explain_html: '{report}'}}\n")
    proc = play(collections, playbook, str(ROOT / "examples" / "inventory"), tmp_path)
    assert proc.returncode == 2 and "tp-ratio[moriio]" in proc.stdout, proc.stdout + proc.stderr
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and 'data-deployment="deepseek-r1"' in page
    assert '<span class="rejected">rejected</span>' in page


def test_the_play_reads_the_same_config_json_as_the_cli(collections: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A model beside the inventory (models/ft/config.json) and one in the Hugging Face cache: the check action
    derives the same facts on the controller, so the play's findings are the CLI's."""
    from conftest import write_tree

    gqa = '{"model_type": "llama", "num_attention_heads": 24, "num_key_value_heads": 4}'
    commit = "ab" * 20
    inventory = write_tree(tmp_path / "inv", {
        "hosts.yml": """\
            all:
              vars: {vllm_pd_deployment: chat}
              hosts:
                p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 6, vllm_model: models/ft}
                d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 6, vllm_model: org/cached}
            """,
        "models/ft/config.json": gqa,
    })
    hub = write_tree(tmp_path / "hub", {"models--org--cached/refs/main": commit,
                                        f"models--org--cached/snapshots/{commit}/config.json": gqa})
    env = {"HF_HUB_CACHE": str(hub)}
    proc = play(collections, REPORT % "", str(inventory / "hosts.yml"), tmp_path, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = json.loads((tmp_path / "play.json").read_text())["findings"]
    rules = sorted(f["rule"] for f in from_play if f["rule"].startswith(("tp", "model-facts")))
    assert rules == ["tp[kv-heads]", "tp[kv-heads]"]
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))  # the CLI's subprocess inherits it
    cli = [f for f in cli_json(inventory / "hosts.yml") if not f["suppressed"]]
    assert keyed(from_play, False) == keyed(cli, False)


@pytest.mark.parametrize("kind", ["script", "compose", "copy-unit", "copy-script"])
def test_playbook_launch_kinds_agree_in_cli_and_play(collections: Path, tmp_path: Path, kind: str) -> None:
    """The check module's `playbook:` reads each launch kind as the CLI's --playbook (tests/fixtures/playbook): the
    seed's mistake, decode TP 6, at the same place in both."""
    import shutil

    fixtures = ROOT / "tests" / "fixtures" / "playbook"
    shutil.copytree(fixtures / "inventory", tmp_path / "inventory")
    shutil.copytree(fixtures / kind, tmp_path / kind)
    if kind == "copy-script":
        script = tmp_path / kind / "roles" / "vllm_decode" / "files" / "serve.sh"
        script.write_text(script.read_text().replace("--tensor-parallel-size 4", "--tensor-parallel-size 6"))
    else:
        site = tmp_path / kind / "site.yml"
        lines = site.read_text().splitlines()
        lines[12] = lines[12].replace("tp: 4", "tp: 6")
        site.write_text("\n".join(lines) + "\n")
    report = REPORT.replace("fail_on: warning%s", f'fail_on: warning, playbook: "{tmp_path / kind / "site.yml"}"')
    proc = play(collections, report, str(tmp_path / "inventory"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = json.loads((tmp_path / "play.json").read_text())["findings"]
    cli = cli_json(tmp_path / "inventory", "--playbook", str(tmp_path / kind / "site.yml"))
    # the play runs in tmp_path, the CLI here: each file as an absolute path
    placed = {(f["rule"], f["message"], os.path.abspath(f["file"]), f["line"], f["column"]) for f in cli}
    assert {(f["rule"], f["message"], os.path.join(tmp_path, f["file"]), f["line"], f["column"])
            for f in from_play} == placed
    assert ("tp-ratio[moriio]", "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)") in {
        (r, m) for r, m, *_ in placed}


@pytest.mark.parametrize("allowed", [False, True])
def test_playbook_lookups_only_with_allow_lookups(collections: Path, tmp_path: Path, allowed: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The check module's allow_lookups renders the playbook's lookups as the CLI's --allow-lookups: off, the play
    var that reads one is unresolved at the launch task; on, its decode TP 6 is the seed's mistake at that var."""
    import shutil

    fixtures = ROOT / "tests" / "fixtures" / "playbook"
    shutil.copytree(fixtures / "inventory", tmp_path / "inventory")
    shutil.copytree(fixtures / "compose", tmp_path / "compose")
    site = tmp_path / "compose" / "site.yml"
    lines = site.read_text().splitlines()
    assert lines[12] == "    tp: 4"
    lines[12] = "    tp: \"{{ lookup('env', 'PDLINT_TEST_DECODE_TP') }}\""
    site.write_text("\n".join(lines) + "\n")
    option = ", allow_lookups: true" if allowed else ""
    report = REPORT.replace("fail_on: warning%s", f'fail_on: warning, playbook: "{site}"{option}')
    monkeypatch.setenv("PDLINT_TEST_DECODE_TP", "6")  # for the play and the CLI alike
    proc = play(collections, report, str(tmp_path / "inventory"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from_play = json.loads((tmp_path / "play.json").read_text())["findings"]
    monkeypatch.chdir(tmp_path)  # where the play ran: the messages name the template relative to it
    cli = cli_json(tmp_path / "inventory", "--playbook", str(site), *(["--allow-lookups"] if allowed else []))
    placed = {(f["rule"], f["message"], os.path.abspath(f["file"]), f["line"], f["column"]) for f in cli}
    assert {(f["rule"], f["message"], os.path.join(tmp_path, f["file"]), f["line"], f["column"])
            for f in from_play} == placed
    rules = {r for r, *_ in placed}
    if allowed:
        assert ("tp-ratio[moriio]", "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)",
                str(site), 13, 9) in placed
    else:
        assert "tp-ratio[moriio]" not in rules and "unresolved" in rules

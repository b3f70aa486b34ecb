"""The collection in real ansible-playbook runs: the role fails on the seed mistake, filters render."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("galaxy")
    galaxy = str(BIN / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", str(ROOT), "--output-path", str(out)], check=True,
                   capture_output=True)
    [tarball] = out.glob("*.tar.gz")
    subprocess.run([galaxy, "collection", "install", str(tarball), "-p", str(out / "c")], check=True,
                   capture_output=True)
    return out / "c"


def play(collections: Path, playbook: str, inventory: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    (tmp / "play.yml").write_text(playbook)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_LOCALHOST_WARNING": "0"}
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", inventory, str(tmp / "play.yml")],
                          env=env, capture_output=True, text=True, check=False, cwd=tmp)


VALIDATE = "- hosts: all\n  gather_facts: false\n  roles: [pdlint.topology.validate]\n"


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


@pytest.mark.parametrize("inventory", ["examples/inventory", "examples/ini/hosts.ini",
                                       "tests/fixtures/schema/bad"])
def test_cli_and_play_agree(collections: Path, tmp_path: Path, inventory: str) -> None:
    playbook = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}", fail_on: warning}
      register: r
      ignore_errors: true
    - ansible.builtin.copy: {content: "{{ r.findings | to_json }}", dest: "{{ playbook_dir }}/play.json"}
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
    assert from_filter == from_cli


def test_ansible_doc(collections: Path) -> None:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections)}
    for kind, name in (("filter", "ack_count"), ("module", "check"), ("test", "valid_tp_pair")):
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

"""The check module's `playbook:` in a real ansible-playbook run gives the CLI's `--playbook` findings (CLI = play)."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ansible_collection import play
from conftest import ROOT

from pdlint.cli import main

EXAMPLE = ROOT / "examples" / "playbook"
CHECK = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}", fail_on: warning, playbook: PLAYBOOK}
      register: r
      ignore_errors: true
    - ansible.builtin.copy: {content: "{{ r.findings | to_json }}", dest: "{{ playbook_dir }}/play.json"}
"""


def _key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["rule"], f["severity"], f["message"], os.path.abspath(f["file"]) if f["file"] else None, f["line"],
            f["column"], tuple(f["hosts"]))


def _cli() -> set[tuple[Any, ...]]:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        saved, sys.stdout = sys.stdout, out
        try:
            main(["-i", str(EXAMPLE / "inventory"), "--playbook", str(EXAMPLE / "site.yml"), "--format", "json"])
        finally:
            sys.stdout = saved
        out.seek(0)
        return {_key(f) for f in json.loads(out.read())}


def test_play_reports_what_the_cli_reports(collections: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    expected = _cli()
    assert {f[0] for f in expected} == {"tp-ratio[moriio]", "tp[heads]"}
    proc = play(collections, CHECK.replace("PLAYBOOK", str(EXAMPLE / "site.yml")), str(EXAMPLE / "inventory"),
                tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = json.loads((tmp_path / "playbooks" / "play.json").read_text()) if (tmp_path / "playbooks").exists() \
        else json.loads((tmp_path / "play.json").read_text())
    got = set()
    for f in found:
        f["file"] = str(tmp_path / f["file"]) if f["file"] and not os.path.isabs(f["file"]) else f["file"]
        got.add(_key(f))
    assert got == expected

"""The collection as ansible-galaxy builds and installs it, and ansible-playbook runs against it.

One home for what several test modules need: conftest.py's `collections` fixture installs once per session."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

BIN = Path(sys.executable).parent

VALIDATE = "- hosts: all\n  gather_facts: false\n  roles: [pdlint.topology.validate]\n"
# The check module's findings (fail_on: warning, so every finding counts), kept in play.json beside the playbook.
CHECK_TO_JSON = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - pdlint.topology.check: {hosts: "{{ groups['all'] }}", fail_on: warning}
      register: r
      ignore_errors: true
    - ansible.builtin.copy: {content: "{{ r.findings | to_json }}", dest: "{{ playbook_dir }}/play.json"}
"""


def install(dest: Path, source: Path = ROOT) -> Path:
    """Build source's collection and install it under dest; the folder to give ANSIBLE_COLLECTIONS_PATH."""
    galaxy = str(BIN / "ansible-galaxy")
    built = dest / "build"
    subprocess.run([galaxy, "collection", "build", str(source), "--output-path", str(built)], check=True,
                   capture_output=True)
    [tarball] = built.glob("*.tar.gz")
    subprocess.run([galaxy, "collection", "install", str(tarball), "-p", str(dest / "c")], check=True,
                   capture_output=True)
    return dest / "c"


def play(collections: Path, playbook: str, inventory: str, tmp: Path,
         **extra_env: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook on playbook (written to tmp/play.yml) with the installed collection."""
    (tmp / "play.yml").write_text(playbook)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_LOCALHOST_WARNING": "0", **extra_env}
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", inventory, str(tmp / "play.yml")],
                          env=env, capture_output=True, text=True, check=False, cwd=tmp)

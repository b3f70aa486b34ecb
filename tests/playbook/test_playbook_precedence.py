"""A playbook's variables per host and role task equal what ansible-playbook itself gives (`debug` of each one).

One generated project sets each variable in one or two of the layers pdlint models (two roles' defaults, vars/main.yml,
entry `vars:` and params; group_vars, host_vars; play vars; vars_files), every pair of layers once; both roles'
tasks print every variable, and pdlint's scope for that host, play and role must give the same value.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import write_tree

from pdlint.load import select
from pdlint.load.preflight import safety
from pdlint.playbook import apply as playbook
from pdlint.playbook.engines import plain
from pdlint.playbook.patterns import matcher
from pdlint.playbook.variables import magic, scope

BIN = Path(sys.executable).parent
LAYERS = ("defaults_b", "defaults_a", "group_all", "group_g", "host_vars", "play_vars", "vars_files", "vars_b",
          "vars_a", "entry_vars_a", "params_a", "entry_vars_b", "params_b")


def _layered(kinds: tuple[str, ...]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """One variable per layer and per pair of layers, named for them, each layer setting it to the layer's name."""
    names = [f"v_{'_'.join(c)}" for n in (1, 2) for c in itertools.combinations(kinds, n)]
    layers: dict[str, dict[str, Any]] = {layer: {} for layer in kinds}
    for name in names:
        for layer in kinds:
            if f"_{layer}_" in f"_{name[2:]}_":
                layers[layer][name] = layer
    return names, layers


def _debug(names: list[str]) -> str:
    """A tasks file printing the role's name and every variable (UNSET where none is defined) as one JSON msg."""
    shown = "{{ {'__role': role_name, " + ", ".join(f"'{n}': {n} | default('UNSET')" for n in names) + "} | to_json }}"
    return yaml.safe_dump([{"ansible.builtin.debug": {"msg": shown}}])


def _project(tmp: Path) -> list[str]:
    names, layers = _layered(LAYERS)
    layers["defaults_a"]["lazy_source"] = "from defaults"
    layers["defaults_b"]["split"] = "first file"  # role_b's defaults are a main/ folder: the later file wins
    layers["play_vars"]["lazy"] = "{{ lazy_source }} via the play"  # rendered where it is read
    names += ["lazy", "split"]
    debug = _debug(names)

    def role(entry: str) -> dict[str, Any]:
        return {"role": entry, "vars": layers[f"entry_vars_{entry[-1]}"], **layers[f"params_{entry[-1]}"]}

    site = [{"hosts": "g:!nobody", "gather_facts": False, "vars": layers["play_vars"], "vars_files": ["vf.yml"],
             "roles": [role("role_b"), role("role_a")]}]
    write_tree(tmp, {
        "inv/hosts.yml": yaml.safe_dump({"all": {"children": {"g": {"hosts": {"h1": {}, "h2": {}}}}}}),
        "inv/group_vars/all.yml": yaml.safe_dump({**layers["group_all"], "ansible_connection": "local",
                                                  "ansible_python_interpreter": sys.executable}),
        "inv/group_vars/g.yml": yaml.safe_dump(layers["group_g"]),
        "inv/host_vars/h1.yml": yaml.safe_dump(layers["host_vars"]),
        "vf.yml": yaml.safe_dump(layers["vars_files"]),
        "site.yml": yaml.safe_dump(site),
        **{f"roles/role_{r}/{kind}/main.yml": yaml.safe_dump(layers[f"{kind}_{r}"])
           for r in "ab" for kind in ("defaults", "vars") if (r, kind) != ("b", "defaults")},
        "roles/role_b/defaults/main/10-all.yml": yaml.safe_dump(layers["defaults_b"]),
        "roles/role_b/defaults/main/20-later.yml": yaml.safe_dump({"split": "later file"}),
        **{f"roles/role_{r}/tasks/main.yml": debug for r in "ab"},
    })
    return names


def _ansible(tmp: Path) -> list[tuple[str, dict[str, Any]]]:
    """(host, {variable: value}) per debug task, in the order the play ran them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_STDOUT_CALLBACK="oneline", ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(tmp / "none.cfg"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "inv/hosts.yml", "site.yml"], cwd=tmp, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = []
    for line in proc.stdout.splitlines():
        match = re.match(r"^(\S+) \| SUCCESS => (\{.*\})$", line)
        if match:
            payload = json.loads(match.group(2))
            if "msg" not in payload:  # an include_role task's own line
                continue
            msg = payload["msg"]
            found.append((match.group(1), json.loads(msg) if isinstance(msg, str) else msg))
    return found


def test_every_pair_of_layers_as_ansible_playbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = _project(tmp_path)
    expected = _ansible(tmp_path)
    assert len(expected) == 4  # two hosts, two roles
    monkeypatch.chdir(tmp_path)
    safety.configure()
    project = playbook.project_of("site.yml")
    hosts = {hv.host: hv for hv in select.load(["inv/hosts.yml"], keep_names=frozenset(names))}
    [play] = project.plays
    assert matcher(list(hosts.values()))(play.hosts) == {"h1", "h2"}
    roles = {role.name: role for role in play.roles}
    for host, values in expected:
        role_name = values.pop("__role")
        role = roles[role_name]
        found = scope(hosts[host], play, role)
        variables = {**found.values, **magic(hosts[host], play, role, {})}
        got = {n: plain(variables, variables[n]) if n in variables else "UNSET" for n in names}
        assert got == values, (host, role_name, {n: (got[n], values[n]) for n in names if got[n] != values[n]})


INCLUDED = ("defaults_a", "vars_a", "defaults_c", "vars_c", "params_c", "defaults_d", "vars_d", "tvars_d",
            "defaults_e", "vars_e", "tvars_e", "play_vars", "group_all")


def _included_project(tmp: Path) -> list[str]:
    """role_a (in `roles:`) depends on role_c (its meta file, with a param); the play's tasks include role_d and
    import role_e with task `vars:`, and include role_f under `when: false`."""
    names, layers = _layered(INCLUDED)
    debug = _debug(names)
    site = [{"hosts": "g", "gather_facts": False, "vars": layers["play_vars"], "roles": ["role_a"],
             "tasks": [{"ansible.builtin.include_role": {"name": "role_d"}, "vars": layers["tvars_d"]},
                       {"import_role": {"name": "role_e"}, "vars": layers["tvars_e"]},
                       {"include_role": {"name": "role_f"}, "when": False}]}]
    write_tree(tmp, {
        "inv/hosts.yml": yaml.safe_dump({"all": {"children": {"g": {"hosts": {"h1": {}}}}}}),
        "inv/group_vars/all.yml": yaml.safe_dump({**layers["group_all"], "ansible_connection": "local",
                                                  "ansible_python_interpreter": sys.executable}),
        "site.yml": yaml.safe_dump(site),
        "roles/role_a/meta/main.yml": yaml.safe_dump({"dependencies": [{"role": "role_c", **layers["params_c"]}]}),
        **{f"roles/role_{r}/{kind}/main.yml": yaml.safe_dump(layers[f"{kind}_{r}"])
           for r in "acde" for kind in ("defaults", "vars")},
        **{f"roles/role_{r}/tasks/main.yml": debug for r in "acdef"},
    })
    return names


def test_dependencies_and_included_roles_as_ansible_playbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = _included_project(tmp_path)
    expected = _ansible(tmp_path)
    assert [values["__role"] for _host, values in expected] == ["role_c", "role_a", "role_d", "role_e"]
    monkeypatch.chdir(tmp_path)
    safety.configure()
    project = playbook.project_of("site.yml")
    hosts = {hv.host: hv for hv in select.load(["inv/hosts.yml"], keep_names=frozenset(names))}
    [play] = project.plays
    assert [role.name for role in play.roles] == ["role_c", "role_a", "role_d", "role_e"]  # role_f: when false
    roles = {role.name: role for role in play.roles}
    for host, values in expected:
        role = roles[values.pop("__role")]
        found = scope(hosts[host], play, role)
        variables = {**found.values, **magic(hosts[host], play, role, {})}
        got = {n: plain(variables, variables[n]) if n in variables else "UNSET" for n in names}
        assert got == values, (host, role.name, {n: (got[n], values[n]) for n in names if got[n] != values[n]})

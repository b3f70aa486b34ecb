"""The fast loader resolves every pdlint variable of every host to the same value and origin as ansible-core."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.load import preflight, select
from pdlint.load.errors import LoadError
from pdlint.load.fast import loader as fast
from pdlint.load.reference import loader as reference


def assert_same(sources: list[str]) -> None:
    expected = reference.load(sources)
    got = fast.load(sources)
    assert [h.host for h in got] == [h.host for h in expected]
    for e, g in zip(expected, got):
        assert g.values == e.values, e.host
        assert dict(g.origins) == dict(e.origins), e.host


@pytest.mark.parametrize("source", ["examples/inventory", "examples/ini/hosts.ini", "examples/inventory/hosts.yml"])
def test_examples(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert_same([source])


_ROLE_P = """\
vllm_pd_role: prefill
vllm_tensor_parallel_size: 4
vllm_kv_transfer_config:
  kv_connector: NixlConnector
  kv_role: kv_producer
  kv_connector_extra_config: {backends: [UCX, GDS]}
vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ inventory_hostname }}.fleet"}
"""
_ROLE_D = "vllm_pd_role: decode\nvllm_tensor_parallel_size: 8\nvllm_kv_transfer_config: {kv_connector: NixlConnector}\n"
_TUNE = "vllm_port: 8000\nvllm_block_size: 16\nvllm_port: 8001\n"
# A role's engine as a command line (examples/role), once folded, once a list; the prefill one reads the host's name.
_ARGS_P = """\
vllm_pd_role: prefill
vllm_args: >-
  vllm serve m --tensor-parallel-size 4
  --kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_producer"}'
  --served-model-name "{{ inventory_hostname }}-m"
"""
_ARGS_D = """\
vllm_pd_role: decode
vllm_args: [vllm, serve, m, --tensor-parallel-size, "8", --kv-transfer-config, '{"kv_connector": "NixlConnector"}']
"""

CASES: dict[str, dict[str, str]] = {
    "priority-and-ties": {
        "hosts.yml": """
            all:
              vars: {vllm_port: 1, vllm_model: all-inv}
              children:
                b: {vars: {vllm_port: 2, ansible_group_priority: 5}, hosts: {h1: }}
                a: {vars: {vllm_port: 3}, hosts: {h1: , h2: }}
                c: {vars: {vllm_port: 4, ansible_group_priority: "0"}, hosts: {h2: }}
            """,
        "group_vars/a.yml": "vllm_model: a-file\n",
        "group_vars/all/10.yml": "vllm_model: all-file\nvllm_dtype: x\n",
        "group_vars/all/20": "vllm_dtype: y\n",
    },
    "depth-and-host-over-group": {
        "hosts.yml": """
            top:
              vars: {vllm_tensor_parallel_size: 1}
              children:
                mid:
                  vars: {vllm_tensor_parallel_size: 2}
                  children:
                    leaf: {hosts: {"gpu[01:03]": {vllm_node: n}}}
            shallow: {vars: {vllm_tensor_parallel_size: 9}, hosts: {gpu02: }}
            """,
        "group_vars/leaf.yaml": "vllm_tensor_parallel_size: 4\nvllm_env: {A: '1'}\n",
        "host_vars/gpu03/a.yml": "vllm_env:\n  B: 2\n",
        "host_vars/gpu03/b.json": '{"vllm_port": 9000, "vllm_flag": true}',
        "host_vars/gpu01": "vllm_port: 1\n",
    },
    "inventory-vars-vs-group-vars-files": {
        # group_vars files (all's included) beat inventory-file vars of every group (Ansible's default precedence).
        "hosts.yml": """
            all:
              children:
                shallow: {hosts: {h: }}
                p: {children: {deep: {vars: {vllm_dtype: deep-inventory, vllm_model: deep}, hosts: {h: }}}}
            """,
        "group_vars/shallow.yml": "vllm_dtype: shallow-file\n",
        "group_vars/all.yml": "vllm_model: all-file\n",
        "host_vars/h.yml": "",
    },
    "ini-typed-values-and-ranges": {
        "hosts.ini": """
            solo vllm_port=8001 vllm_model="a model" vllm_x=b'bytes' vllm_s={1,2}
            [p]
            gpu[a:c] vllm_tensor_parallel_size=4 vllm_f=1.5 vllm_n=None vllm_t=True
            node[01:09:4] vllm_env={'CUDA_VISIBLE_DEVICES':'0,1'}
            [d]
            node05
            [all:vars]
            vllm_dtype = bfloat16 # comment
            [p:vars]
            vllm_kv_transfer_config={"kv_connector": "NixlConnector", "kv_role": "kv_both"}
            ansible_group_priority=7
            vllm_list=[1, None, 'x', (2, 3)]
            [pd:children]
            p
            d
            [pd:vars]
            vllm_pd_deployment=dep
            vllm_tensor_parallel_size=2
            """,
        "group_vars/d": "---\nvllm_tensor_parallel_size: 8\n",
    },
    "json-inventory-and-duplicates": {
        "hosts.json": json.dumps({"all": {"hosts": {"j1": {"vllm_port": 1, "vllm_env": {"X": [1, 2]}}}},
                                  "g": {"hosts": "j2", "vars": {"vllm_port": 2}}}),
        "group_vars/g.yml": "vllm_port: 3\nvllm_port: 4\nvllm_x: {a: [1, {b: 2}], a: 5}\n",
    },
    "yaml-1.1-scalars-and-odd-keys": {
        "hosts.yml": """
            all:
              hosts:
                h1:
                  ansible_group_priority: 3
                  vllm_a: [1:30, 0o10, 010, +1, 1_000, .inf, 0b101, ~, Yes, on, 'on', "0x1F", 1e3, -.5]
                  vllm_b: {1: one, true: t, null: n}
                  vllm_c: !!str 12
                  vllm_d: &anchor {x: 1}
                  vllm_e: *anchor
                  vllm_f: >
                    folded
                    text
                  ansible_password: !vault |
                    $ANSIBLE_VAULT;1.1;AES256
                    3131
            shared:
              hosts:
                h1:
              vars: {vllm_g: 1}
            """,
        "host_vars/h1.yml": "# only a comment\n",
        "group_vars/shared.yml": "---\n...\n",
    },
    "inventory-directory": {
        "inv/10-hosts.yml": "all:\n  hosts:\n    h1:\n      vllm_port: 1\n",
        "inv/20-more": "[extra]\nh1 vllm_port=2\nh2\n",
        "inv/notes.md": "ignored\n",
        "inv/group_vars/extra.yml": "vllm_model: m\n",
        "inv/host_vars/h2.yml": "vllm_port: 7\n",
    },
    # A fleet: the role files of every deployment are one text (the preflight scans it once and gives each file
    # its own origins), a template reads inventory_hostname, a repeated key in identical files, few host_vars.
    "fleet-of-identical-role-files": {
        "hosts.yml": """
            all:
              children:
                dep0:
                  children:
                    dep0_prefill: {hosts: {p0: , p1: }}
                    dep0_decode: {hosts: {d0: , d1: , d2: }}
                dep1:
                  children:
                    dep1_prefill: {hosts: {p2: , p3: }}
                    dep1_decode: {hosts: {d3: , d4: , d5: }}
            """,
        "group_vars/all.yml": "vllm_version: 0.32.0\n",
        "group_vars/dep0.yml": "vllm_pd_deployment: dep0\nvllm_model: m\n",
        "group_vars/dep1.yml": "vllm_pd_deployment: dep1\nvllm_model: m\n",
        "group_vars/dep0_prefill.yml": _ROLE_P,
        "group_vars/dep1_prefill.yml": _ROLE_P,
        "group_vars/dep0_decode/role.yml": _ROLE_D,
        "group_vars/dep1_decode/role.yml": _ROLE_D,
        "group_vars/dep0_decode/tune.yml": _TUNE,
        "group_vars/dep1_decode/tune.yml": _TUNE,
        "host_vars/d4.yml": "vllm_node: n4\n",
    },
    # Profiles: hosts of one chain share one resolved set unless they have values of their own (inline
    # or a host_vars file, one overriding the chain's template); hosts in two groups listed in either order.
    "shared-profiles": {
        "hosts.yml": """
            all:
              children:
                dep:
                  children:
                    p: {hosts: {p0: , p1: , p2: {vllm_port: 7}, x1: , x2: }}
                    d: {hosts: {d0: , d1: , d2: {vllm_env: {A: b}}}}
                extra: {hosts: {x2: , x1: }, vars: {vllm_port: 5}}
            """,
        "group_vars/dep.yml": "vllm_pd_deployment: dep\nvllm_model: m\nvllm_port: 8000\n",
        "group_vars/p.yml": _ROLE_P,
        "group_vars/d.yml": _ROLE_D,
        "host_vars/p1.yml": "vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: own}\n",
        "host_vars/d1.yml": "vllm_port: 8002\n",
    },
    # The same with each role's engine a vllm_args command line in its group_vars (one text per role in every
    # deployment), a host_vars file with a command line of its own, and one overriding only the port.
    "shared-profiles-with-command-lines": {
        "hosts.yml": """
            all:
              children:
                dep0:
                  children:
                    dep0_p: {hosts: {p0: , p1: , p2: }}
                    dep0_d: {hosts: {d0: , d1: , d2: , d3: {vllm_port: 7}}}
                dep1:
                  children:
                    dep1_p: {hosts: {p3: , p4: }}
                    dep1_d: {hosts: {d4: , d5: }}
            """,
        "group_vars/all.yml": "vllm_version: 0.32.0\n",
        "group_vars/dep0.yml": "vllm_pd_deployment: dep0\n",
        "group_vars/dep1.yml": "vllm_pd_deployment: dep1\n",
        "group_vars/dep0_p.yml": _ARGS_P,
        "group_vars/dep1_p.yml": _ARGS_P,
        "group_vars/dep0_d.yml": _ARGS_D,
        "group_vars/dep1_d.yml": _ARGS_D,
        "host_vars/p1.yml": "vllm_args: vllm serve m --tensor-parallel-size 2\n",
        "host_vars/d5.yml": "vllm_port: 8002\n",
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture_trees(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, CASES[case])
    source = "inv" if case == "inventory-directory" else next(n for n in CASES[case] if "/" not in n)
    assert_same([source])


def test_several_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {**{"a/" + k: v for k, v in CASES["priority-and-ties"].items()},
                          **{"b/" + k: v for k, v in CASES["ini-typed-values-and-ranges"].items()}})
    assert_same(["a/hosts.yml", "b/hosts.ini"])


def test_same_load_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"hosts.yml": "all:\n  hosts: {h: }\n", "group_vars/all.yml": "vllm_port: [1,\n  vllm: 2\n"})
    with pytest.raises(LoadError) as ref:
        reference.load(["hosts.yml"])
    with pytest.raises(LoadError) as got:
        fast.load(["hosts.yml"])
    assert got.value.finding == ref.value.finding
    assert got.value.finding.origin.line is not None


BOMB = "all:\n  vars:\n    a: &a [x, x, x]\n    b: &b [*a, *a, *a]\n    vllm_c: [*b, *b, *b]\n  hosts: {h: }\n"


def test_dynamic_source_is_refused_before_either_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An inventory plugin configuration is the preflight's load-error for both loaders, not a fallback."""
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"inv.yml": "plugin: constructed\nstrict: false\n"})
    notes: list[str] = []
    with pytest.raises(LoadError) as ref:
        reference.load(["inv.yml"])
    with pytest.raises(LoadError) as got:
        select.load(["inv.yml"], note=notes.append)
    assert got.value.finding == ref.value.finding and "inventory plugin configuration" in got.value.finding.message
    assert notes == []


@pytest.mark.parametrize(("files", "source", "reason"), [
    ({"hosts.yml": BOMB}, "hosts.yml", "alias"),
    ({"hosts.yml": "all:\n  hosts: {h: }\n"}, "h1,h2", "host list"),
    ({"hosts.yml": "all:\n  hosts:\n    h:\n      vllm_port: !vault |\n        $ANSIBLE_VAULT;1.1;AES256\n        3131\n"},
     "hosts.yml", "tag"),
])
def test_fallback_notes_and_uses_ansible(files: dict[str, str], source: str, reason: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, files)
    with pytest.raises(fast.Unsupported, match=reason):
        fast.load([source])
    notes: list[str] = []
    try:
        expected: Any = reference.load([source])
    except LoadError as exc:
        expected = exc.finding
    try:
        got: Any = select.load([source], note=notes.append)
    except LoadError as exc:
        got = exc.finding
    assert got == expected
    assert len(notes) == 1 and "ansible-core's loader" in notes[0]


def test_nondefault_hash_behaviour_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"hosts.yml": "all:\n  hosts: {h: }\n", "ansible.cfg": "[defaults]\nhash_behaviour = merge\n"})
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    with pytest.raises(fast.Unsupported, match="hash_behaviour"):
        fast.load(["hosts.yml"])


def test_executable_inventory_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"inv": "#!/bin/sh\necho '{}'\n"})
    os.chmod(tmp_path / "inv", 0o755)
    with pytest.raises(LoadError, match="executable inventory script: not run"):  # the preflight refuses it
        fast.load(["inv"])
    trusted = preflight.check([str(tmp_path / "inv")], allow_dynamic=True)  # --allow-inventory-plugins
    with pytest.raises(fast.Unsupported, match="executable"):
        fast.load(["inv"], checked=trusted)


def test_cli_fast_path_never_imports_ansible(tmp_path: Path) -> None:
    write_tree(tmp_path, CASES["depth-and-host-over-group"])
    code = ("import sys; from pdlint import cli; rc = cli.main(['hosts.yml']); "
            "print('ansible' in sys.modules, rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    imported, code = out.stdout.split()[-2:]
    assert imported == "False" and code in ("0", "1"), out.stdout + out.stderr
    assert "pdlint: info" not in out.stderr


def test_cli_loader_flag(tmp_path: Path) -> None:
    vaulted = "all:\n  hosts:\n    h:\n      vllm_port: !vault |\n        $ANSIBLE_VAULT;1.1;AES256\n        3131\n"
    write_tree(tmp_path, {"hosts.yml": "all:\n  hosts: {h: }\n", "inv.yml": vaulted})
    run = [sys.executable, "-m", "pdlint.cli"]
    fast_out = subprocess.run([*run, "inv.yml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "pdlint: info: the fast loader does not cover this inventory" in fast_out.stderr
    forced = subprocess.run([*run, "--loader", "ansible", "hosts.yml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert forced.returncode == 0 and "pdlint: info" not in forced.stderr


# --- generated inventories -------------------------------------------------------------------------------

NAMES = ["vllm_port", "vllm_model", "vllm_env", "pdlint_skip"]
YAML_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.sampled_from([1.5, 0.0]),
              st.sampled_from(["a", "8000", "yes", "0x1f", "", "a b", "null"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["k", "v", "1"]), inner,
                                                                         max_size=3)),
    max_leaves=5)
INI_VALUES = st.sampled_from(["1", "0x10", "1.5", "True", "None", "'q'", "[1, 'a']", "{'a': 1}", "plain", "a b",
                              "b'x'", "{1, 2}", "1e3", "-3", "'8000'", "x=y"])


@st.composite
def inventories(draw: st.DrawFn) -> tuple[dict[str, str], str]:
    n_groups = draw(st.integers(1, 5))
    groups = [f"g{i}" for i in range(n_groups)]
    hosts = [f"h{i}" for i in range(draw(st.integers(1, 4)))]
    parents = {g: draw(st.lists(st.sampled_from(groups[:i]), max_size=2, unique=True)) if i else []
               for i, g in enumerate(groups)}
    members = {g: draw(st.lists(st.sampled_from(hosts), max_size=3, unique=True)) for g in groups}
    priority = {g: draw(st.one_of(st.none(), st.integers(0, 3))) for g in groups}
    ini = draw(st.booleans())
    values = INI_VALUES if ini else YAML_VALUES

    def assignments() -> dict[str, Any]:
        return draw(st.dictionaries(st.sampled_from(NAMES), values, max_size=2))

    group_vars = {g: assignments() for g in [*groups, "all"]}
    host_vars = {h: assignments() for h in hosts}
    ranged = draw(st.booleans())
    files: dict[str, str] = {}
    for entity, subdir in [*[(g, "group_vars") for g in [*groups, "all"]], *[(h, "host_vars") for h in hosts]]:
        kind = draw(st.sampled_from(["none", ".yml", ".json", "", "dir"]))
        data = draw(st.dictionaries(st.sampled_from(NAMES), YAML_VALUES, max_size=2))
        if kind == "dir":
            files[f"{subdir}/{entity}/a.yml"] = yaml.safe_dump(data)
            files[f"{subdir}/{entity}/b"] = yaml.safe_dump(draw(st.dictionaries(st.sampled_from(NAMES), YAML_VALUES,
                                                                                max_size=1)))
        elif kind == ".json":
            files[f"{subdir}/{entity}.json"] = json.dumps(data)
        elif kind != "none":
            files[f"{subdir}/{entity}{kind}"] = yaml.safe_dump(data, default_flow_style=draw(st.booleans()))
    if ini:
        lines = []
        for g in groups:
            lines.append(f"[{g}]")
            for h in members[g]:
                extra = " ".join(f"{k}={shlex.quote(v)}" for k, v in host_vars[h].items())
                lines.append(f"{h} {extra}".strip())
            if ranged and g == groups[-1]:
                lines.append("r[1:3] vllm_port=5")
            lines.append(f"[{g}:vars]")
            lines += [f"{k}={v}" for k, v in group_vars[g].items()]
            if priority[g] is not None:
                lines.append(f"ansible_group_priority={priority[g]}")
            kids = [c for c in groups if g in parents[c]]
            if kids:
                lines += [f"[{g}:children]", *kids]
        lines += ["[all:vars]", *[f"{k}={v}" for k, v in group_vars["all"].items()]]
        files["hosts.ini"] = "\n".join(lines) + "\n"
        return files, "hosts.ini"

    def group(g: str) -> dict[str, Any]:
        body: dict[str, Any] = {}
        gv = dict(group_vars[g])
        if priority[g] is not None:
            gv["ansible_group_priority"] = priority[g]
        if gv:
            body["vars"] = gv
        hs = {h: (host_vars[h] or None) for h in members[g]}
        if ranged and g == groups[-1]:
            hs["r[a:c]"] = {"vllm_port": 5}
        if hs:
            body["hosts"] = hs
        kids = {c: group(c) for c in groups if g in parents[c]}
        if kids:
            body["children"] = kids
        return body

    top = {g: group(g) for g in groups if not parents[g]}
    doc = {"all": {"vars": group_vars["all"], "children": top}} if group_vars["all"] else top
    files["hosts.yml"] = yaml.safe_dump(doc, default_flow_style=draw(st.booleans()))
    return files, "hosts.yml"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inventories())
def test_generated_inventories(case: tuple[dict[str, str], str]) -> None:
    files, source = case
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(Path(tmp), files)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            assert_same([source])
        finally:
            os.chdir(cwd)

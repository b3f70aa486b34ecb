"""Work done once per distinct engine: identical engines share one memo, identical vars files are
scanned once, and neither changes a finding, an origin or a host list."""
from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, write_tree

from pdlint.config import configuration
from pdlint.config.variables import Mapped
from pdlint.engine import core
from pdlint.finding import Origin
from pdlint.hostvars import KEY, HostVars, Unresolved
from pdlint.launch import command
from pdlint.load import preflight, select
from pdlint.load.fast.variables import vars_events
from pdlint.schema import check as schema_check
from pdlint.topology import build as build_module
from pdlint.topology.build import build

sys.path.insert(0, str(ROOT / "bench"))
from generate import SHAPES, generate

PKG = ROOT / "plugins" / "plugin_utils" / "pdlint"


def _host(name: str, file: str, **values: object) -> HostVars:
    base = {"vllm_pd_deployment": "dep", "vllm_kv_transfer_config": {"kv_connector": "NixlConnector"}, **values}
    return HostVars(name, {f"vllm_{k}" if not k.startswith("vllm_") else k: v for k, v in base.items()},
                    {(k if k.startswith("vllm_") else f"vllm_{k}",): Origin(file, i + 1, 1)
                     for i, k in enumerate(base)})


def test_identical_engines_share_one_memo_and_others_do_not() -> None:
    hosts = [_host(f"p{i}", f"g{i % 2}.yml", pd_role="prefill", tensor_parallel_size=4) for i in range(6)]
    hosts += [_host("p9", "g0.yml", pd_role="prefill", tensor_parallel_size=8),  # another TP
              _host("p10", "g0.yml", pd_role="prefill", tensor_parallel_size=True),  # True is not 1 (nor 4)
              _host("d0", "g0.yml", pd_role="decode", tensor_parallel_size=4),
              _host("d1", "g1.yml", pd_role="decode", tensor_parallel_size=4, node_rank=0)]  # one more origin
    topo, _unused = build(hosts)
    shared = {i.host: id(i.shared) for i in topo.instances}
    # the same body from other files (the origins' places are no part of it) shares; any other field does not
    assert len({shared[f"p{i}"] for i in range(6)}) == 1
    assert len(set(shared.values())) == 5
    assert len({id(i.memo) for i in topo.instances}) == len(topo.instances)  # per-instance answers stay apart


def _findings(hosts: list[HostVars]) -> list[object]:
    return [f.as_dict() for f in core.lint(hosts).findings]


_EDITS = {"dep0000_decode.yml": "vllm_tensor_parallel_size: 3\n", "dep0002_prefill.yml": "vllm_version: 0.31.0\n",
          "dep0004.yml": "vllm_disable_hybrid_kv_cache_manager: false\nvllm_port: 8000\n",
          "dep0005_decode.yml": "vllm_kv_transfer_config: {kv_connector: MoRIIOConnector, kv_role: kv_consumer}\n"}


@pytest.mark.parametrize("shape", SHAPES)
def test_sharing_changes_no_finding(shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every finding of a generated fleet (most engines identical) is the same with every instance alone."""
    inv = tmp_path / shape
    generate(96, inv, shape)
    for name, text in _EDITS.items():  # a few engines wrong, in deployments that have twins elsewhere
        with open(inv / "group_vars" / name, "a", encoding="utf-8") as fh:
            fh.write(text)
    monkeypatch.chdir(inv)
    hosts = select.load(["."])
    shared = _findings(hosts)
    assert shared, "the generated fleets have findings to compare"
    monkeypatch.setattr(build_module, "share_bodies", lambda instances, *copies: None)
    assert _findings(hosts) == shared


_PLACES = {"host", "node", "instance_id", "label", "deployment"}
# rule helpers whose answers are kept per body (per_body), besides every function of the vllm layer
_RULE_HELPERS = {"connector.py": ("_config_problems", "_other_problems", "_moriio_problems", "_hma_problems"),
                 "pairs.py": ("_side_of", "pair_key"), "parallel.py": ("_violations",),
                 "connector_keys.py": ("_no_effect",)}
# what each_body asks once per body (rules/base.py): the same holds
_DECIDED = {"connector.py": ("_unknown_problems", "_unknown_hint", "_out_of_tree", "_known_config_problems"),
            "env.py": ("_ignored", "_invalid"), "version.py": ("_note", "_prerelease"),
            "kv_role.py": ("_unset", "_not_a_role", "_wrong_side", "_moriio_both"),
            "tp.py": ("_heads", "_kv_heads", "_facts_missing", "_said", "_missing", "_unknown")}


def _reads(tree: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} & _PLACES


def test_what_is_kept_per_body_never_reads_where_an_engine_runs() -> None:
    """per_body answers are shared by instances that differ in host, node, instance id and deployment."""
    for path in sorted((PKG / "vllm").rglob("*.py")):
        assert not _reads(ast.parse(path.read_text())), path.name
    for name, functions in (*_RULE_HELPERS.items(), *_DECIDED.items()):
        tree = ast.parse(next((PKG / "rules").rglob(name)).read_text())
        found = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        for function in functions:
            assert not _reads(found[function]), (name, function)
    decorated = {f.name for path in PKG.rglob("*.py") for f in ast.walk(ast.parse(path.read_text()))
                 if isinstance(f, ast.FunctionDef) and any(isinstance(d, ast.Name) and d.id == "per_body"
                                                          for d in f.decorator_list)
                 and "rules" in path.relative_to(PKG).parts}
    assert decorated <= {f for fs in _RULE_HELPERS.values() for f in fs}


_ROLE = "vllm_pd_role: prefill\nvllm_kv_transfer_config:\n  kv_connector: NixlConnector\n  extra: {a: [1, 2.0]}\n"


def test_identical_vars_files_are_scanned_once_each_with_its_own_origins(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    write_tree(tmp_path, {
        "hosts.yml": "all:\n  children:\n    a: {hosts: {h1: }}\n    b: {hosts: {h2: }}\n    c: {hosts: {h3: }}\n",
        "group_vars/a.yml": _ROLE, "group_vars/b.yml": _ROLE, "group_vars/c.yml": "vllm_port: 1\nvllm_port: 2\n",
        "host_vars/h3.yml": "vllm_port: 1\nvllm_port: 2\n",  # a repeated key in two identical files: both warned
    })
    monkeypatch.chdir(tmp_path)
    calls: list[str] = []
    scan = vars_events.scan_vars
    monkeypatch.setattr(vars_events, "scan_vars", lambda text, path, *a: calls.append(path) or scan(text, path, *a))
    found = preflight.check(["hosts.yml"])
    assert len(calls) == 3  # a.yml and b.yml are one text; the files with a repeated key are scanned each
    assert sorted(f.origin.file for f in found.findings) == ["group_vars/c.yml", "host_vars/h3.yml"]
    a, b = (next(v for k, v in found.values.items() if k.endswith(f"group_vars/{n}")) for n in ("a.yml", "b.yml"))
    assert (a[0], b[0]) == ("group_vars/a.yml", "group_vars/b.yml")
    assert {o.file for _v, origins in b[1].values() for o in origins.values()} == {"group_vars/b.yml"}
    assert [(o.line, o.column) for _v, origins in b[1].values() for o in origins.values()] == \
        [(o.line, o.column) for _v, origins in a[1].values() for o in origins.values()]
    assert b[1]["vllm_kv_transfer_config"][0] == a[1]["vllm_kv_transfer_config"][0]
    assert b[1]["vllm_kv_transfer_config"][0] is not a[1]["vllm_kv_transfer_config"][0]  # no value shared
    hosts = select.load(["hosts.yml"])
    assert [h.origin("vllm_kv_transfer_config", "extra").file for h in hosts[:2]] == \
        ["group_vars/a.yml", "group_vars/b.yml"]


def test_hosts_of_one_profile_share_one_resolved_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hosts of one group chain without variables of their own get one resolved set; a host
    with its own values, and a chain whose template reads inventory_hostname, are resolved per host; a whole
    check writes nothing into the shared set."""
    write_tree(tmp_path, {
        "hosts.yml": "all:\n  children:\n    dep:\n      children:\n"
                     "        a: {hosts: {h1: , h2: , h3: , h4: {vllm_port: 9}}}\n"
                     "        t: {hosts: {t1: , t2: , t3: {vllm_node: own}}}\n",
        "group_vars/dep.yml": "vllm_version: 0.32.0\nvllm_pd_deployment: dep\nvllm_model: m\n",
        "group_vars/a.yml": _ROLE + "vllm_port: 8000\n",
        "group_vars/t.yml": _ROLE.replace("prefill", "decode") + "vllm_node: \"{{ inventory_hostname }}-n\"\n",
        "host_vars/h3.yml": "vllm_port: 8001\n",
    })
    monkeypatch.chdir(tmp_path)
    hosts = {hv.host: hv for hv in select.load(["hosts.yml"], loader="fast")}
    h1, h2, h3, h4 = (hosts[n] for n in ("h1", "h2", "h3", "h4"))
    assert h1.values is h2.values and h1.origins is h2.origins and h1.groups == h2.groups == ("a", "dep")
    assert h3.values is not h1.values and h4.values is not h1.values
    assert (h3.values["vllm_port"], h4.values["vllm_port"], h1.values["vllm_port"]) == (8001, 9, 8000)
    assert (h3.origin("vllm_port").file, h1.origin("vllm_port").file) == ("host_vars/h3.yml", "group_vars/a.yml")
    assert [hosts[n].values["vllm_node"] for n in ("t1", "t2", "t3")] == ["t1-n", "t2-n", "own"]
    assert hosts["t1"].values is not hosts["t2"].values
    before = {n: (dict(hv.values), dict(hv.origins)) for n, hv in hosts.items()}
    core.lint(list(hosts.values()))
    assert {n: (dict(hv.values), dict(hv.origins)) for n, hv in hosts.items()} == before


def _alone(hosts: list[HostVars]) -> list[HostVars]:
    """The hosts with dicts of their own: no two share a profile, so each is built, checked and launched alone."""
    return [dataclasses.replace(hv, values=dict(hv.values), origins=dict(hv.origins)) for hv in hosts]


def _profile(names: list[str], values: dict[str, Any], file: str = "group_vars/p.yml",
             groups: tuple[str, ...] = ("p",)) -> list[HostVars]:
    origins = {(k,): Origin(file, i + 1, 1) for i, k in enumerate(values)}
    origins.update({(k, KEY): Origin(file, i + 1, 1) for i, k in enumerate(values)})
    return [HostVars(n, values, origins, groups=groups) for n in names]  # one values and one origins dict


_BASE = {"vllm_version": "0.32.0", "vllm_pd_deployment": "dep", "vllm_model": "Qwen/Qwen3-8B",
         "vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}}


def test_a_shared_profile_with_a_schema_error_is_checked_once_and_reported_for_each_host(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One check and one build per profile; every host is named, at the profile's file:line:col, as alone."""
    bad = {**_BASE, "vllm_pd_role": "decode", "vllm_tensor_parallel_size": "four", "vllm_port": 8.0,
           "vllm_instance_id": "e7", "vllm_env": {"N": "\u0663"}}
    hosts = _profile(["d3", "d1", "d2"], bad) + _profile(["p1", "p2"], {**_BASE, "vllm_pd_role": "prefill"}, "g.yml")
    hosts += _profile(["u1", "u2"], {**_BASE, "vllm_pd_role": Unresolved("template"), "vllm_node": "n"}, "u.yml")
    calls = {"check": 0, "instance": 0}
    check, instance = schema_check.check, build_module._instance
    monkeypatch.setattr(schema_check, "check", lambda *a: calls.__setitem__("check", calls["check"] + 1) or check(*a))
    monkeypatch.setattr(build_module, "_instance",
                        lambda *a: calls.__setitem__("instance", calls["instance"] + 1) or instance(*a))
    result = core.lint(hosts)
    assert calls == {"check": 3, "instance": 3}  # one per profile, not one per host
    assert [i.host for i in result.topology.instances] == ["d3", "d1", "d2", "p1", "p2"]
    assert [(i.node, i.instance_id) for i in result.topology.instances[:2]] == [("d3", "e7"), ("d1", "e7")]
    assert [u.host for u in result.topology.undecided] == ["u1", "u2"]
    schema = [f for f in result.findings if f.rule == "schema"]
    assert schema and all(f.hosts == ("d1", "d2", "d3") and f.origin.file == "group_vars/p.yml" for f in schema)
    assert [f.as_dict() for f in core.lint(_alone(hosts)).findings] == [f.as_dict() for f in result.findings]


def test_a_shared_profile_whose_mapping_reads_inventory_hostname_is_mapped_per_host() -> None:
    """The config's mapping renders inventory_hostname per host; group_names and the rest once per profile."""
    hosts = _profile(["h1", "h2"], {"role": "prefill", "dep": "chat", "vllm_version": "0.32.0",
                                    "vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}})
    at = Origin(".pdlint.yaml", 2, 3)
    config = dataclasses.replace(configuration.DEFAULT, variables=(
        Mapped("vllm_pd_role", "{{ role }}", at), Mapped("vllm_pd_deployment", "{{ dep }}", at),
        Mapped("vllm_node", "{{ inventory_hostname }}-n", at), Mapped("vllm_instance_id", "{{ group_names[0] }}", at),
        Mapped("vllm_tensor_parallel_size", "{{ 'x' ~ inventory_hostname }}", at)))
    result = core.lint(hosts, config)
    assert [(i.host, i.node, i.instance_id) for i in result.topology.instances] == \
        [("h1", "h1-n", "p"), ("h2", "h2-n", "p")]
    assert {f.message for f in result.findings if f.rule == "schema" and f.hosts == ("h1",)} == \
        {"vllm_tensor_parallel_size: 'xh1' is not an integer >= 1 and <= 65536"}
    assert [f.as_dict() for f in core.lint(_alone(hosts), config).findings] == [f.as_dict() for f in result.findings]


def test_a_vllm_args_line_is_parsed_once_per_text_and_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """One parse per distinct line and release, whether hosts share a profile or only the line; the findings
    (the flag's own line and column) are each host's, as alone."""
    line = "--tensor-parallel-size 4 --max-model-len 8k --bogus-flag 1"
    common = {**_BASE, "vllm_pd_role": "prefill", "vllm_args": line}
    hosts = _profile(["a1", "a2", "a3"], common) + _profile(["b1"], {**common, "vllm_port": 9000}) + \
        _profile(["c1"], {**common, "vllm_version": "0.31.0"})
    calls: list[str] = []
    parse = command.cmdline.parse
    monkeypatch.setattr(command.cmdline, "parse", lambda t, r, **k: calls.append(str(r)) or parse(t, r, **k))
    result = core.lint(hosts)
    assert sorted(calls) == ["0.31.0", "0.32.0"]
    wrong = [f for f in result.findings if f.rule == "vllm-args[invalid]"]
    assert wrong and {f.origin.file for f in wrong} == {"group_vars/p.yml"}
    assert {h for f in wrong for h in f.hosts} == {"a1", "a2", "a3", "b1", "c1"}
    assert [i.tp for i in result.topology.instances] == [4] * 5
    calls.clear()
    assert [f.as_dict() for f in core.lint(_alone(hosts)).findings] == [f.as_dict() for f in result.findings]

"""A run after an edit (incremental.py) says exactly what a whole run says, and the units it rests on are real.

units.py claims no rule looks across units (hosts linked by host, node, deployment or explicit engine_id): the
findings of checking each unit alone, merged, are the whole check's, and each unit's share of the whole check is
what checking it alone finds. That is held here on every example, fixture and hostile inventory that loads, and
on random fleets built to link units every way (shared nodes, shared engine_ids, a host serving two deployments).
Then, over random edit sequences of an on-disk inventory of seven deployments, a cached run (the incremental path
whenever it can answer) gives the output and exit code of --no-cache in text and JSON; a spy on
incremental._outcome shows the incremental path did answer, so the comparison cannot pass by always falling back.
Targeted cases: what it must answer, what it must refuse, a damaged state, and a racily clean edit.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.cache import incremental, runs, store, units
from pdlint.cli import main
from pdlint.cli.options import parser
from pdlint.engine import core as engine
from pdlint.finding import Origin
from pdlint.hostvars import HostVars, Unresolved
from pdlint.load import select
from pdlint.load.preflight import fingerprints, safety

ROOT = Path(__file__).resolve().parents[2]


def _hostile_loadable(case: Path) -> bool:
    """A hostile case pdlint reads (its expected exit is not 2, unusable input), built from files alone."""
    if not (case / "case.yml").is_file():
        return False
    spec = yaml.safe_load((case / "case.yml").read_text())
    return "make" not in spec and spec.get("exit") != 2


_LOADABLE = (sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir() and p.name != "kubernetes")  # no inventory
             + sorted(p.parent for p in (ROOT / "tests" / "fixtures").rglob("hosts.y*ml"))
             + sorted(p for p in (ROOT / "tests" / "hostile" / "cases").iterdir() if _hostile_loadable(p)))
_TIME = re.compile(r"\(\d+\.\d+ s\)")


# ---- the units decompose the rules ----------------------------------------------------------------------------

def _assert_decomposes(hosts: Sequence[HostVars]) -> int:
    """Check every unit alone; the merged findings must be the whole check's. Returns the number of units."""
    whole = engine.lint(hosts)
    parts = units.partition([hv.host for hv in hosts], whole.topology)
    members = [h for unit, _ in parts for h in unit]
    assert sorted(members) == sorted(hv.host for hv in hosts)  # every host in exactly one unit
    by_name = {hv.host: hv for hv in hosts}
    alone = [engine.lint([by_name[h] for h in unit]).found for unit, _ in parts]
    assert engine.merge(f for found in alone for f in found) == whole.found
    # What incremental.py keeps of a whole run for a unit it does not check again must be what checking it gives.
    share = units.split(whole.found, {h: i for i, (unit, _) in enumerate(parts) for h in unit})
    if share is not None:
        assert [engine.merge(share.get(i, [])) for i in range(len(parts))] == alone
    return len(parts)


@pytest.mark.parametrize("case", _LOADABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_units_decompose_the_rules_on_every_inventory(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)
    for key, value in safety._PINNED.items():  # as the CLI pins them (an ansible.cfg beside a hostile case)
        monkeypatch.setenv(key, value)
    spec = case / "case.yml"  # a hostile case names its inventory and options (case.yml is no inventory file)
    args = parser().parse_args(yaml.safe_load(spec.read_text())["args"] if spec.is_file() else ["."])
    hosts = select.load(args.inventory or args.paths, notes=[], note=lambda _: None,
                        vault_password_file=args.vault_password_file)
    assert hosts
    _assert_decomposes(hosts)


_CONNECTORS = ["NixlConnector", "MoRIIOConnector", "MooncakeConnector"]
_MODELS = ["meta-llama/Llama-3.3-70B-Instruct", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-32B"]
_SKIPS = ["gpu", "gpu[oversubscribed]", "port[collision]", "tp-ratio", "engine-id[duplicate]", "pd-mismatch",
          "schema", "no-such-rule"]
_BAD = [("vllm_tensor_parallel_size", "four"), ("vllm_port", 0), ("vllm_dtype", "fp7"), ("vllm_bogus_knob", 1),
        ("vllm_kv_transfer_config", "{not json"), ("vllm_host_gpu_count", -1)]


class _Values:
    """Values with origins, as a loader gives them: each at its own line of the file it was written in."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.values: dict[str, Any] = {}

    def set(self, name: str, value: Any) -> None:
        self.values[name] = value

    def origins(self) -> dict[tuple[Any, ...], Origin]:
        return {(name,): Origin(self.file, line, 1) for line, name in enumerate(self.values, 1)}


@st.composite
def _fleet(draw: st.DrawFn) -> list[HostVars]:
    """Hosts of up to four deployments, linked across them by shared nodes, engine_ids and two-deployment hosts."""
    deployments = [f"d{i}" for i in range(draw(st.integers(1, 4)))]
    common = _Values("group_vars/all.yml")
    common.set("vllm_host_gpu_count", 8)
    if draw(st.booleans()):
        common.set(*draw(st.sampled_from(_BAD)))  # one bad value every host reads: a finding across units
    if draw(st.booleans()):
        common.set("pdlint_skip", draw(st.lists(st.sampled_from(_SKIPS), max_size=2, unique=True)))
    groups: dict[str, _Values] = {}
    for dep in deployments:
        group = groups[dep] = _Values(f"group_vars/{dep}.yml")
        group.set("vllm_pd_deployment", dep)
        group.set("vllm_model", draw(st.sampled_from(_MODELS)))
        group.set("vllm_version", draw(st.sampled_from(["0.32.0", "0.25.0", "0.19.0", "0.8.5", "9.9.9"])))
        group.set("vllm_kv_transfer_config", {"kv_connector": draw(st.sampled_from(_CONNECTORS)), "kv_role": "kv_both"})
        if draw(st.booleans()):
            group.set("vllm_dtype", draw(st.sampled_from(["bfloat16", "float16"])))
    hosts = []
    for i in range(draw(st.integers(1, 8))):
        name, dep = f"h{i}", draw(st.sampled_from(deployments))
        own = _Values(f"host_vars/{name}.yml")
        kind = draw(st.sampled_from(["engine", "engine", "engine", "instances", "no-role"]))
        engine_id = draw(st.sampled_from([None, None, "e0", "e1"]))
        kv = {**groups[dep].values["vllm_kv_transfer_config"],
              **({"kv_connector": draw(st.sampled_from(_CONNECTORS))} if draw(st.booleans()) else {}),
              **({"engine_id": engine_id} if engine_id else {})}
        if kind == "engine":
            own.set("vllm_pd_role", draw(st.sampled_from(["prefill", "decode"])))
            own.set("vllm_tensor_parallel_size", draw(st.sampled_from([1, 2, 3, 4, 8])))
            own.set("vllm_kv_transfer_config", kv)
        elif kind == "instances":  # one host serving two deployments (or one deployment twice)
            own.set("vllm_instances", [
                {"pd_role": role, "pd_deployment": draw(st.sampled_from(deployments)), "port": port,
                 "tensor_parallel_size": draw(st.sampled_from([1, 2, 4])),
                 "kv_transfer_config": {**kv, "kv_connector": draw(st.sampled_from(_CONNECTORS))},
                 **({"env": {"CUDA_VISIBLE_DEVICES": draw(st.sampled_from(["0", "0,1", "1"]))}}
                    if draw(st.booleans()) else {}),
                 **({"node": draw(st.sampled_from(["n0", "n1"]))} if draw(st.booleans()) else {})}
                for role, port in (("prefill", 8100), ("decode", draw(st.sampled_from([8100, 8200]))))])
        if draw(st.booleans()):
            own.set("vllm_node", draw(st.sampled_from(["n0", "n1", "h0"])))  # h0: another host's default node
        if draw(st.booleans()):
            own.set("vllm_port", draw(st.sampled_from([8000, 8100])))
        if draw(st.booleans()):
            own.set("vllm_env", {"CUDA_VISIBLE_DEVICES": draw(st.sampled_from(["0", "0,1", "0,1,2,3"]))})
        if draw(st.booleans()):
            own.set("pdlint_skip", draw(st.lists(st.sampled_from(_SKIPS), min_size=1, max_size=2, unique=True)))
        if draw(st.booleans()):  # engines over two hosts, by instance_id within a deployment
            own.set("vllm_instance_id", draw(st.sampled_from(["i0", "i1"])))
            own.set("vllm_nnodes", 2)
            own.set("vllm_node_rank", draw(st.sampled_from([0, 1])))
        if draw(st.booleans()):
            own.set("vllm_block_size", draw(st.sampled_from([16, 32])))
        if draw(st.booleans()):
            own.set(*draw(st.sampled_from(_BAD)))
        layers = (common, groups[dep], own)
        hosts.append(HostVars(name, {k: v for layer in layers for k, v in layer.values.items()},
                              {k: o for layer in layers for k, o in layer.origins().items()}))
    return hosts


def test_units_decompose_the_rules_on_random_fleets() -> None:
    tally: Counter[str] = Counter()

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(hosts=_fleet())
    def check(hosts: list[HostVars]) -> None:
        tally["several" if _assert_decomposes(hosts) > 1 else "one"] += 1

    check()
    assert tally["several"] >= 50  # not all one unit, where the claim would hold trivially


def _pair(dep: str, own: dict[str, dict[str, Any]]) -> list[HostVars]:
    """A NIXL prefill and decode of TP 8 on 8-GPU hosts, named after dep, with own values per role."""
    kv = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    return [HostVars(f"{dep}-{role}", {"vllm_pd_deployment": dep, "vllm_pd_role": role, "vllm_version": "0.32.0",
                                       "vllm_model": _MODELS[0], "vllm_host_gpu_count": 8,
                                       "vllm_tensor_parallel_size": 8, "vllm_kv_transfer_config": kv,
                                       **own.get(role, {})},
                     {("vllm_pd_role",): Origin(f"host_vars/{dep}-{role}.yml", 1, 1)})
            for role in ("prefill", "decode")]


_SHARED = {"kv_connector": "NixlConnector", "kv_role": "kv_both", "engine_id": "shared"}


@pytest.mark.parametrize(("link", "rule"), [
    # a and b's decodes on one node: 16 GPUs on a node of 8
    ({"decode": {"vllm_node": "n0"}}, "gpu[oversubscribed]"),
    ({"decode": {"vllm_kv_transfer_config": _SHARED}}, "engine-id[duplicate]"),
    ({"decode": {"vllm_env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, "vllm_node": "n0"}}, "gpu[overlap]"),
])
def test_each_link_kind_joins_two_deployments(link: dict[str, dict[str, Any]], rule: str) -> None:
    """Two deployments linked only by a node or an engine_id: one unit, and a finding across both that checking
    either alone would miss (so a link kind units.keys() forgot fails here, whatever the random fleets draw)."""
    hosts = _pair("a", link) + _pair("b", link)
    assert _assert_decomposes(hosts) == 1
    across = [f for f in engine.lint(hosts).found if f.rule == rule]
    assert across and all({h[0] for h in f.hosts} == {"a", "b"} for f in across)


def test_a_host_serving_two_deployments_joins_them() -> None:
    """vllm_instances of two deployments on one host (their ports collide): one unit."""
    items = [{"pd_deployment": dep, "pd_role": "prefill", "port": 8100, "tensor_parallel_size": 4}
             for dep in ("a", "b")]
    shared = HostVars("shared", {"vllm_version": "0.32.0", "vllm_host_gpu_count": 8, "vllm_instances": items,
                                 "vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_role": "kv_both"}})
    hosts = [shared, *(hv for dep in ("a", "b") for hv in _pair(dep, {}) if hv.host.endswith("decode"))]
    assert _assert_decomposes(hosts) == 1
    assert any(f.rule == "port[collision]" for f in engine.lint(hosts).found)


@pytest.mark.parametrize("other", [
    {"vllm_pd_role": Unresolved("template"), "vllm_pd_deployment": "a"},
    {"vllm_pd_role": "decode", "vllm_pd_deployment": Unresolved("vault-encrypted value")},
    {"vllm_pd_role": Unresolved("template"), "vllm_pd_deployment": Unresolved("template")},
])
def test_a_host_that_may_be_a_missing_side_joins_the_deployment(other: dict[str, Any]) -> None:
    """deployment[incomplete] is skipped for a one-sided deployment a host of unresolved side may complete:
    that host is in the deployment's unit (checked alone, the deployment would be called incomplete)."""
    hosts = [HostVars("a-prefill", {"vllm_pd_role": "prefill", "vllm_pd_deployment": "a"}), HostVars("o", other),
             *_pair("b", {})]
    assert not [f for f in engine.lint(hosts).found if f.rule == "deployment[incomplete]"]
    _assert_decomposes(hosts)


# ---- an on-disk fleet: incremental runs against whole runs ----------------------------------------------------

_DEPLOYMENTS = {  # connector, decode TP (d2: more GPUs than its node has, which all.yml's pdlint_skip hides)
    "d0": ("NixlConnector", 8), "d1": ("MoRIIOConnector", 4), "d2": ("MooncakeConnector", 16),
    "d3": ("NixlConnector", 4), "d4": ("NixlConnector", 4), "d5": ("MoRIIOConnector", 4),
    "d6": ("NixlConnector", 8)}
_SHARED_ID = "vllm_kv_transfer_config:\n  kv_connector: NixlConnector\n  kv_role: kv_both\n  engine_id: shared\n"
_OWN_HOST_VARS = {
    "d1-p0": "vllm_port: 8000\nvllm_port: 8100\n",  # a duplicate key (yaml[key-duplicates])
    "d4-p0": "vllm_port: 8000\nvllm_node: shared\n",  # d4 and d5 share a node: one unit
    "d5-d0": "vllm_port: 8000\nvllm_node: shared\n",
    "d0-d0": "vllm_port: 8000\n" + _SHARED_ID,  # d0 and d6 share an explicit engine_id: one unit
    "d6-d0": "vllm_port: 8000\n" + _SHARED_ID,
}


def _deployment_file(dep: str, what: str) -> str:
    """The file that sets a deployment's dtype (what='main') or connector ('kv'): d5 keeps them in a directory."""
    return f"group_vars/d5/{what}.yml" if dep == "d5" else f"group_vars/{dep}.yml"


def _fleet_on_disk(base: Path) -> Path:
    """Seven deployments of two hosts (d3 three: d3-x is in both its role groups, a role conflict), a host_vars
    file per host and one of no host, a group across two deployments (rack: d1-p0, d2-d0), d5's group_vars as a
    directory, d6 without vllm_version; group_vars/all.yml has a schema error every host reads and a pdlint_skip
    entry only d2 uses."""
    inv = base / "inv"
    (inv / "group_vars" / "d5").mkdir(parents=True)
    (inv / "host_vars").mkdir()
    (inv / "group_vars" / "all.yml").write_text(
        "vllm_host_gpu_count: 8\nvllm_bogus_knob: 1\npdlint_skip:\n  - gpu[oversubscribed]\n")
    (inv / "group_vars" / "rack.yml").write_text("vllm_host_gpu_count: 8\n")
    lines = ["all:", "  children:", "    rack:", "      hosts:", "        d1-p0:", "        d2-d0:"]
    for dep, (connector, decode_tp) in _DEPLOYMENTS.items():
        (inv / _deployment_file(dep, "main")).write_text(
            f"vllm_pd_deployment: {dep}\nvllm_model: meta-llama/Llama-3.3-70B-Instruct\nvllm_dtype: bfloat16\n"
            + ("vllm_version: 0.32.0\n" if dep != "d6" else ""))  # d6: the release pdlint assumes
        kv = inv / _deployment_file(dep, "kv")
        kv.write_text((kv.read_text() if kv.exists() else "")
                      + f"vllm_kv_transfer_config:\n  kv_connector: {connector}\n  kv_role: kv_both\n")
        lines += [f"    {dep}:", "      children:"]
        for role, tp in (("prefill", 4), ("decode", decode_tp)):
            (inv / "group_vars" / f"{dep}_{role}.yml").write_text(
                f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {tp}\n")
            hosts = [f"{dep}-{role[0]}0"] + (["d3-x"] if dep == "d3" else [])
            lines += [f"        {dep}_{role}:", "          hosts:"] + [f"            {h}:" for h in hosts]
            for host in hosts:
                (inv / "host_vars" / f"{host}.yml").write_text(_OWN_HOST_VARS.get(host, "vllm_port: 8000\n"))
    (inv / "host_vars" / "ghost.yml").write_text("vllm_port: 8000\n")  # inventory[unmatched-vars]
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    return inv


_HOSTS = sorted({f"{dep}-{side}0" for dep in _DEPLOYMENTS for side in "pd"} | {"d3-x"})
_VARS = sorted({_deployment_file(dep, what) for dep in _DEPLOYMENTS for what in ("main", "kv")}
               | {f"group_vars/{dep}_{role}.yml" for dep in _DEPLOYMENTS for role in ("prefill", "decode")}
               | {f"host_vars/{host}.yml" for host in [*_HOSTS, "ghost"]} | {"group_vars/rack.yml"})
_ANY_FILE = [*_VARS, "group_vars/all.yml", "hosts.yml"]
_DEPS = st.sampled_from(sorted(_DEPLOYMENTS))
_VARS_FILES = st.sampled_from(_VARS)
# A few files, so that a sequence adds and drops in the same one; not ghost.yml: a positioned finding in a file
# with a file-level one crashes pdlint's sort (a test at the end).
_DUPLICATES = st.sampled_from(["host_vars/d1-p0.yml", "host_vars/d4-p0.yml", "group_vars/d2_decode.yml",
                               "group_vars/d5/kv.yml"])
_HOSTILE = ROOT / "tests" / "hostile" / "cases"
_EDIT = st.one_of(
    st.tuples(st.just("tp"), _DEPS, st.sampled_from([1, 2, 4, 8, 16])),
    st.tuples(st.just("same-size"), _DEPS, st.sampled_from([1, 2, 4, 8])),
    st.tuples(st.just("dtype"), st.sampled_from([*(_deployment_file(d, "main") for d in _DEPLOYMENTS),
                                                 *(f"group_vars/{d}_prefill.yml" for d in _DEPLOYMENTS)]),
              st.sampled_from(["bfloat16", "float16"])),
    st.tuples(st.just("connector"), _DEPS, st.sampled_from(_CONNECTORS)),
    st.tuples(st.just("version"), _DEPS, st.sampled_from(["0.32.0", "0.25.0", None])),
    st.tuples(st.just("port"), st.sampled_from([*_HOSTS, "ghost"]), st.sampled_from([8000, 8100, 8200])),
    st.tuples(st.just("rack"), st.just("group_vars/rack.yml"), st.sampled_from([4, 8, 16])),
    st.tuples(st.just("add-duplicate"), _DUPLICATES, st.none()),
    st.tuples(st.just("drop-duplicate"), _DUPLICATES, st.none()),
    # another deployment's name links the host's unit to that deployment's; a new name links nothing
    st.tuples(st.just("move"), st.sampled_from(_HOSTS), st.sampled_from([*_DEPLOYMENTS, "d9"])),
    # a shared node, another host's (default) node, or a node of its own
    st.tuples(st.just("node"), st.sampled_from(_HOSTS), st.sampled_from(["shared", "d2-p0", "d2-d0", "own", None])),
    st.tuples(st.just("engine-id"), st.sampled_from(_HOSTS), st.sampled_from(["shared", "own", None])),
    # two engines on the host: the second in its own deployment, or in another (which links the two)
    st.tuples(st.just("instances"), st.sampled_from(_HOSTS), st.sampled_from([None, *_DEPLOYMENTS])),
    st.tuples(st.just("host-skip"), st.sampled_from(_HOSTS),
              st.sampled_from(["[gpu]", "[tp-ratio, engine-id]", "[nosuch]", "[]"])),
    st.tuples(st.just("template"), _VARS_FILES, st.none()),
    st.tuples(st.just("vault-value"), _VARS_FILES, st.none()),
    st.tuples(st.just("vault-file"), _VARS_FILES, st.none()),
    st.tuples(st.just("invalid"), st.sampled_from(_ANY_FILE), st.none()),
    st.tuples(st.just("restore"), st.sampled_from(_ANY_FILE), st.none()),
    st.tuples(st.just("touch"), st.sampled_from(_ANY_FILE), st.none()),
    st.tuples(st.just("skip"), st.just("group_vars/all.yml"), st.sampled_from(["gpu[oversubscribed]", "tp-ratio"])),
)


def _set(path: Path, key: str, value: str) -> None:
    """key: value at the top level of a vars file (replacing key's first line, else appended)."""
    text = path.read_text()
    line = f"{key}: {value}\n"
    text, n = re.subn(rf"^{re.escape(key)}: .*\n", line, text, count=1, flags=re.MULTILINE)
    path.write_text(text if n else text + line)


def _drop(path: Path, key: str) -> None:
    """Remove key (with its indented lines) from the top level of a vars file."""
    path.write_text(re.sub(rf"^{re.escape(key)}:.*\n(?:[ ].*\n)*", "", path.read_text(), flags=re.MULTILINE))


def _apply(inv: Path, originals: dict[str, str], edit: tuple[str, str, Any]) -> None:
    kind, target, arg = edit
    host_vars = inv / "host_vars" / f"{target}.yml"
    if kind in ("tp", "same-size"):  # same-size: one digit for another
        path = inv / "group_vars" / f"{target}_decode.yml"
        if kind == "tp" or re.search(r"tensor_parallel_size: \d\n", path.read_text()):
            _set(path, "vllm_tensor_parallel_size", str(arg))
    elif kind == "dtype":
        _set(inv / target, "vllm_dtype", arg)
    elif kind == "connector":
        path = inv / _deployment_file(target, "kv")
        path.write_text(re.sub(r"kv_connector: \w+", f"kv_connector: {arg}", path.read_text()))
    elif kind == "version":
        _drop(inv / _deployment_file(target, "main"), "vllm_version")
        if arg is not None:
            _set(inv / _deployment_file(target, "main"), "vllm_version", arg)
    elif kind == "port":
        _set(host_vars, "vllm_port", str(arg))
    elif kind == "rack":
        _set(inv / target, "vllm_host_gpu_count", str(arg))
    elif kind == "add-duplicate":
        (inv / target).write_text((inv / target).read_text() + "vllm_block_size: 16\nvllm_block_size: 32\n")
    elif kind == "drop-duplicate":  # every top-level key once, its last line kept (the value Ansible keeps)
        lines = (inv / target).read_text().splitlines(keepends=True)
        keys = [line.split(":")[0] if line[:1].isalpha() else None for line in lines]
        (inv / target).write_text("".join(line for i, (line, key) in enumerate(zip(lines, keys))
                                          if key is None or key not in keys[i + 1:]))
    elif kind == "move":
        _set(host_vars, "vllm_pd_deployment", arg)
    elif kind == "node":
        _drop(host_vars, "vllm_node")
        if arg is not None:
            _set(host_vars, "vllm_node", f"{target}-node" if arg == "own" else arg)
    elif kind == "engine-id":
        _drop(host_vars, "vllm_kv_transfer_config")
        if arg is not None:
            host_vars.write_text(host_vars.read_text() + _SHARED_ID.replace("shared", target if arg == "own" else arg))
    elif kind == "instances":
        _drop(host_vars, "vllm_instances")
        other = f", pd_deployment: {arg}" if arg else ""
        host_vars.write_text(host_vars.read_text() + "vllm_instances:\n  - {port: 8100, tensor_parallel_size: 4}\n"
                             f"  - {{port: 8200, pd_role: decode, tensor_parallel_size: 2{other}}}\n")
    elif kind == "host-skip":
        _set(host_vars, "pdlint_skip", arg)
    elif kind == "template":  # a variable no other file sets, so the template is what hosts get; by default one
        # the fast loader hands to ansible-core (load/fast/variables/render.py), so the reference loader takes part
        _set(inv / target, "vllm_kv_cache_dtype", arg or "\"{{ 'fp8' if true else 'auto' }}\"")
    elif kind == "vault-value":
        _drop(inv / target, "vllm_port")
        (inv / target).write_text((inv / target).read_text()
                                  + (_HOSTILE / "vault-value" / "group_vars" / "all.yml").read_text())
    elif kind == "vault-file":
        (inv / target).write_text((_HOSTILE / "vault-file" / "group_vars" / "all.yml").read_text())
    elif kind == "invalid":
        (inv / target).write_text((inv / target).read_text() + "vllm_port: [unclosed\n")
    elif kind == "restore":
        (inv / target).write_text(originals[target])
    elif kind == "touch":
        os.utime(inv / target)
    elif kind == "skip":  # all.yml's pdlint_skip entry toggled
        path = inv / target
        text, entry = path.read_text(), f"  - {arg}\n"
        path.write_text(text.replace(entry, "") if entry in text else text.replace("pdlint_skip:\n",
                                                                                   "pdlint_skip:\n" + entry))


def _cli(source: Path, capsys: pytest.CaptureFixture[str], fmt: str, *extra: str) -> tuple[int, str, str]:
    """pdlint's exit code, output (text also lists what pdlint_skip suppressed; the time masked) and stderr."""
    capsys.readouterr()
    code = main([*extra, "--format", fmt, *(["--show-suppressed"] if fmt == "text" else []), str(source)])
    out, err = capsys.readouterr()
    return code, _TIME.sub("(T s)", out), err


class _Spy:
    """Wraps incremental._outcome: whether each run after an edit was answered incrementally, or why not."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        real = incremental._outcome

        def spy(*args: Any, **kwargs: Any) -> runs.Outcome:
            try:
                found = real(*args, **kwargs)
            except Exception as exc:
                self.calls.append(type(exc).__name__)
                raise
            self.calls.append("answered")
            return found

        monkeypatch.setattr(incremental, "_outcome", spy)

    def take(self) -> list[str]:
        calls, self.calls = self.calls, []
        return calls


class _Fleet:
    """The on-disk fleet, with a cache per output format (so each format's first run after an edit is one the
    incremental path may answer), checked against --no-cache."""

    def __init__(self, base: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                 by_file: bool = False) -> None:
        base.mkdir()
        self.base, self.capsys, self.monkeypatch = base, capsys, monkeypatch
        monkeypatch.delenv("PDLINT_NO_CACHE", raising=False)
        monkeypatch.chdir(base)
        self.inv = _fleet_on_disk(base)
        self.source = self.inv / "hosts.yml" if by_file else self.inv
        self.originals = {str(p.relative_to(self.inv)): p.read_text() for p in self.inv.rglob("*.yml")}

    def edit(self, *edit: Any) -> None:
        _apply(self.inv, self.originals, edit)  # type: ignore[arg-type]

    def cached(self, fmt: str = "text") -> tuple[int, str, str]:
        self.monkeypatch.setenv("PDLINT_CACHE_DIR", str(self.base / f"cache-{fmt}"))
        return _cli(self.source, self.capsys, fmt)

    def uncached(self, fmt: str = "text") -> tuple[int, str, str]:
        return _cli(self.source, self.capsys, fmt, "--no-cache")

    def check(self, why: object = None) -> list[tuple[int, str, str]]:
        """Cached runs (the first, then again from what it stored) give what uncached runs give, text and JSON."""
        found = []
        for fmt in ("text", "json"):
            first = self.cached(fmt)
            assert first == self.uncached(fmt), (fmt, why)
            assert self.cached(fmt) == first, (fmt, why)
            found.append(first)
        return found


def test_incremental_equals_whole_run_over_random_edits(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy(monkeypatch)
    tally: Counter[str] = Counter()

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(edits=st.lists(_EDIT, min_size=1, max_size=6), by_file=st.booleans())
    def check(edits: list[tuple[str, str, Any]], by_file: bool) -> None:
        fleet = _Fleet(tmp_path / f"run{len(list(tmp_path.iterdir()))}", capsys, monkeypatch, by_file)
        fleet.check()
        spy.take()
        for step, edit in enumerate(edits):
            fleet.edit(*edit)
            fleet.check((step, edits))
            tally.update(spy.take())

    check()
    assert tally["answered"] >= 1, tally  # the comparison is not of whole runs only
    assert tally["answered"] * 10 >= sum(tally.values()), tally  # a good share (30 - 57% in six runs)


# ---- what the incremental path answers, and what it leaves to a whole run ---------------------------------------

@pytest.fixture
def fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> _Fleet:
    return _Fleet(tmp_path / "fleet", capsys, monkeypatch)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> _Spy:
    return _Spy(monkeypatch)


@pytest.fixture
def checked_hosts(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The hosts of every engine.lint call."""
    calls: list[list[str]] = []
    real = engine.lint

    def lint(hosts: Sequence[HostVars], *args: Any, **kwargs: Any) -> engine.Result:
        calls.append(sorted(hv.host for hv in hosts))
        return real(hosts, *args, **kwargs)

    monkeypatch.setattr(engine, "lint", lint)
    return calls


def test_an_edit_to_one_deployment_checks_only_its_unit(fleet: _Fleet, spy: _Spy,
                                                        checked_hosts: list[list[str]]) -> None:
    """d2's decode TP 16 -> 8: d2 (alone in its unit) is checked again, nothing else; its node no longer lacks
    GPUs, so all.yml's pdlint_skip entry, used by d2 only, now suppresses nothing anywhere (skip[unused])."""
    before = fleet.cached()
    assert "skip[unused]" not in before[1]
    spy.take()
    checked_hosts.clear()
    fleet.edit("tp", "d2", 8)
    after = fleet.cached()
    assert spy.take() == ["answered"]
    assert checked_hosts == [["d2-d0", "d2-p0"]]
    assert after == fleet.uncached()
    assert after != before
    assert "skip[unused]" in after[1]


@pytest.mark.parametrize(("edit", "changes"), [
    (("port", "d1-p0", 8200), False),  # the host_vars file with a duplicate key
    (("drop-duplicate", "host_vars/d1-p0.yml", None), True),  # ... which goes
    (("host-skip", "d1-p0", "[connector]"), True),  # its connector[config] suppressed
    (("connector", "d5", "NixlConnector"), True),  # a file of d5's group_vars directory
    (("rack", "group_vars/rack.yml", 16), True),  # a group across two units: both checked again
    (("node", "d4-p0", "own"), False),  # d4 no longer shares d5's node: the unit splits in two
    (("move", "d0-p0", "d9"), True),  # a deployment of its own links it to nothing
    (("port", "ghost", 8100), False),  # a file no host reads
    (("touch", "group_vars/d3_prefill.yml", None), False),  # the role conflict's group, unchanged
    (("version", "d6", "0.32.0"), True),  # no instance left without vllm_version: the summary says no more
    (("template", "group_vars/d1_decode.yml", "\"{{ 'fp' ~ 8 }}\""), True),  # the fast loader renders it
])
def test_edits_the_incremental_path_answers(edit: tuple[str, str, Any], changes: bool, fleet: _Fleet,
                                            spy: _Spy) -> None:
    before = fleet.check()
    spy.take()
    fleet.edit(*edit)
    after = fleet.check(edit)
    assert spy.take() == ["answered", "answered"]  # text's cache, json's cache
    assert (after != before) == changes


@pytest.mark.parametrize("edit", [
    ("invalid", "hosts.yml", None),
    ("touch", "hosts.yml", None),  # an inventory file changed: the kept inventory is not trusted
    ("skip", "group_vars/all.yml", "tp-ratio"),  # every host reads all.yml
    ("move", "d1-d0", "d2"),  # d1-d0 joins d2's deployment: the edit links two units
    ("node", "d1-d0", "d2-d0"),  # d1-d0 on d2-d0's node
    ("engine-id", "d1-d0", "shared"),  # the engine_id d0 and d6 share
    ("instances", "d1-d0", "d2"),  # a second engine, in d2
    ("template", "group_vars/d1_decode.yml", None),
    ("vault-value", "host_vars/d1-d0.yml", None),
    ("vault-file", "group_vars/d1_decode.yml", None),
    ("invalid", "group_vars/d1_decode.yml", None),
])
def test_edits_left_to_a_whole_run(edit: tuple[str, str, Any], fleet: _Fleet, spy: _Spy) -> None:
    before = fleet.check()
    spy.take()
    fleet.edit(*edit)
    after = fleet.check(edit)
    calls = spy.take()  # twice more when the whole run fails to load: nothing is stored then
    assert calls in (["_Stale"] * 2, ["_Stale"] * 4)
    assert after != before or edit[0] == "touch"


def test_a_file_added_is_left_to_a_whole_run(fleet: _Fleet, spy: _Spy) -> None:
    before = fleet.check()
    spy.take()
    (fleet.inv / "host_vars" / "stray.yml").write_text("vllm_port: 8000\n")  # inventory[unmatched-vars]
    assert fleet.check() != before
    assert spy.take() == ["_Stale", "_Stale"]


def test_touching_most_hosts_is_left_to_a_whole_run(fleet: _Fleet, spy: _Spy) -> None:
    """Most hosts' files changed: checking them again would cost what the whole run costs."""
    fleet.check()
    spy.take()
    for dep in ("d0", "d1", "d2", "d3", "d4"):
        fleet.edit("dtype", _deployment_file(dep, "main"), "float16")
    fleet.check()
    assert spy.take() == ["_Stale", "_Stale"]


def test_the_run_after_a_whole_run_is_answered_again(fleet: _Fleet, spy: _Spy) -> None:
    """A whole run after an edit that linked two units leaves a state the next edit can use."""
    fleet.check()
    fleet.edit("move", "d1-d0", "d2")
    fleet.check()
    spy.take()
    fleet.edit("tp", "d3", 2)
    fleet.check()
    assert spy.take() == ["answered", "answered"]


# ---- a damaged state --------------------------------------------------------------------------------------------

def _garbage(key: str, folder: str) -> None:
    Path(folder, key).write_bytes(os.urandom(4096))


def _truncated(key: str, folder: str) -> None:
    path = Path(folder, key)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _shape(value: Callable[[Any], Any]) -> Callable[[str, str], None]:
    """An intact entry of this code under the state's key, holding value(the real state) instead."""
    def write(key: str, folder: str) -> None:
        store.write(key, value(store.read(key, folder)), folder)
    write.__name__ = value.__name__
    return write


def _not_a_tuple(kept: Any) -> Any:
    return ["paths", "stats", "racy", "state"]


def _other_version(kept: Any) -> Any:
    paths, stats, racy, state = kept
    return paths, stats, racy, (incremental._VERSION + 1, *state[1:])


def _short_state(kept: Any) -> Any:
    paths, stats, racy, state = kept
    return paths, stats, racy, state[:3]


def _unit_missing(kept: Any) -> Any:  # the edited host belongs to no unit
    paths, stats, racy, state = kept
    return paths, stats, racy, (*state[:5], [row for row in state[5] if "d2-d0" not in row[0]])


def _rows_of_another_shape(kept: Any) -> Any:
    paths, stats, racy, state = kept
    return paths, stats, racy, (*state[:5], [(row[0], row[1], "not rows", 7) for row in state[5]])


def _unknown_host(kept: Any) -> Any:  # a unit naming a host the inventory does not have
    paths, stats, racy, state = kept
    rows = [([*row[0], "nowhere"], *row[1:]) if "d2-d0" in row[0] else row for row in state[5]]
    return paths, stats, racy, (*state[:5], rows)


def _inventory_of_another_shape(kept: Any) -> Any:
    paths, stats, racy, state = kept
    return paths, stats, racy, (state[0], ("groups", "hosts"), *state[2:])


@pytest.mark.parametrize("damage", [
    _garbage, _truncated, _shape(_not_a_tuple), _shape(_other_version), _shape(_short_state),
    _shape(_unit_missing), _shape(_rows_of_another_shape), _shape(_unknown_host),
    _shape(_inventory_of_another_shape)], ids=lambda d: d.__name__)
def test_a_damaged_state_is_not_trusted(damage: Callable[[str, str], None], fleet: _Fleet, spy: _Spy,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    entries: list[runs.Entry] = []
    real_put = runs.put
    monkeypatch.setattr(runs, "put", lambda e, outcome: entries.append(e) or real_put(e, outcome))
    fleet.cached()
    folder = str(fleet.base / "cache-text" / "units")
    key = runs.units_key(entries[-1])
    assert isinstance(store.read(key, folder), tuple)  # the whole run left a state
    damage(key, folder)
    spy.take()
    fleet.edit("tp", "d2", 8)
    assert fleet.cached() == fleet.uncached()
    calls = spy.take()
    assert len(calls) == 1 and calls != ["answered"]  # raised: _Stale, or what reading a foreign shape raises
    fleet.edit("tp", "d3", 2)  # the whole run wrote a good state again
    assert fleet.cached() == fleet.uncached()
    assert spy.take() == ["answered"]


# ---- racily clean -----------------------------------------------------------------------------------------------

def test_a_racily_clean_edit_to_a_group_vars_file_is_seen(fleet: _Fleet, spy: _Spy,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A same-size edit whose mtime is put back, on a file system that shows no ctime change (as within one
    tick of a coarse clock): every stat field of the state's fingerprint is the same, and the content digest of
    the recently modified file is what tells the edit (as in tests/cache/test_cache.py for the whole run)."""
    real = fingerprints.fingerprints

    def no_ctime(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        return None if found is None else [(p, m, s, mt, 0, i, d) for p, m, s, mt, _, i, d in found]

    monkeypatch.setattr(runs.fingerprints, "fingerprints", no_ctime)
    monkeypatch.setattr(fingerprints, "RACY_NS", 10**12)  # every file counts as recent however slow this machine is
    clean = fleet.cached()
    path = fleet.inv / "group_vars" / "d2_decode.yml"
    before = os.stat(path)
    fingerprint = [f for f in no_ctime([str(fleet.inv)]) if f[0] == str(path)]
    path.write_text(path.read_text().replace("tensor_parallel_size: 16", "tensor_parallel_size: 32"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [f for f in no_ctime([str(fleet.inv)]) if f[0] == str(path)] == fingerprint
    spy.take()
    edited = fleet.cached()
    assert spy.take() == ["answered"]
    assert edited != clean and edited == fleet.uncached()  # text: the suppressed finding's GPU count


def test_a_model_config_json_edited_with_a_vars_file_is_left_to_a_whole_run(
        fleet: _Fleet, spy: _Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unit's facts come from the cached config.json: the units the vars edit does not touch must not keep
    findings made with its old numbers."""
    import json

    commit = "12" * 20
    snapshot = tmp_path / "hub" / "models--meta-llama--Llama-3.3-70B-Instruct" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text(commit)
    config = {"model_type": "llama", "num_attention_heads": 64, "num_key_value_heads": 8}
    (snapshot / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    before = fleet.check()
    spy.take()
    (snapshot / "config.json").write_text(json.dumps({**config, "num_key_value_heads": 6}))  # TP 4 cannot split 6
    fleet.edit("port", "d1-p0", 8200)
    after = fleet.check()
    assert spy.take() == ["_Stale", "_Stale"]
    assert "tp[kv-heads]" in after[0][1] and "tp[kv-heads]" not in before[0][1]

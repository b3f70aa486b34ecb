"""pdlint's MoRIIO knowledge against every release's own source (MoRIIOConnector is registered from 0.14.0).

Each test is parametrized by release and loops over its grid, calling the
release's own functions where they exist (rank map, ack count, KV-head guard,
0.33.0's WRITE topology, port offsets, mode switch) and reading the statements
that decide the rest (which keys are read with [], which call dials the
handshake). Where a release has no check, the expected verdict is the inferred
failure documented in docs/rules-provenance.md, and the test pins the source
statement that makes it so.
"""
from __future__ import annotations

import ast
import functools
import itertools
import types
from pathlib import Path
from typing import Any

import pytest
import vllm_source

from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.topology.build import build
from pdlint.vllm.connectors import families, moriio
from pdlint.vllm.connectors import pair as vpair
from pdlint.vllm.connectors.moriio import config as moriio_config
from pdlint.vllm.connectors.ranks import remote_ranks
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

FIRST = R("0.14.0")  # factory.py registers MoRIIOConnector from here on
RELEASES = [r for r in KNOWN if r >= FIRST]
ROOTS = vllm_source.roots(KNOWN)  # fetched when a test first reads it
DIR = f"{vllm_source.KV}/v1/moriio"
CONNECTOR, COMMON = f"{DIR}/moriio_connector.py", f"{DIR}/moriio_common.py"
SIZES = [1, 2, 3, 4, 6, 8, 12, 16]
KV_HEADS = [1, 2, 4, 8, 16]
READ_EXTRA = (("http_port", "8000"), ("read_mode", "true"))
READ_ENV = (("VLLM_MORIIO_CONNECTOR_READ_MODE", "1"),)


def _root(release: Release) -> Path:
    root = ROOTS[release]
    assert root is not None
    return root


def _raises(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except (ValueError, NotImplementedError):
        return True
    return False


def _side(role: str, release: Release, tp: int, k: int = 8, mla: bool = False, read: bool = True,
          **more: Any) -> vpair.Side:
    extra = READ_EXTRA if read else (("http_port", "8000"),)
    return vpair.Side(role=role, release=release, connector="MoRIIOConnector", tp=tp, kv_heads=k, mla=mla,
                      extra=extra, env=READ_ENV if read else (), **more)


def _rules(release: Release, p: int, d: int, k: int, mla: bool, read: bool, **more: Any) -> set[str]:
    sp = _side("prefill", release, p, k, mla, read, **more)
    sd = _side("decode", release, d, k, mla, read, **more)
    return {problem.rule for problem in families.problems(sp, sd)}


@functools.cache
def _tree(release: Release, relpath: str) -> ast.Module:
    return ast.parse((_root(release) / relpath).read_text(encoding="utf-8"))


def _method(tree: ast.Module, klass: str, name: str) -> ast.FunctionDef:
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass)
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    return [c for c in ast.walk(node) if isinstance(c, ast.Call)
            and getattr(c.func, "id", getattr(c.func, "attr", None)) == name]


def test_registered_from_0_14_0() -> None:
    for release in KNOWN:
        factory = _root(release) / f"{vllm_source.KV}/factory.py"
        registered = factory.exists() and '"MoRIIOConnector"' in factory.read_text(encoding="utf-8")
        assert registered == (release in RELEASES), release


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_mode_switch(release: Release) -> None:
    """get_moriio_mode: the env variable (envs.py) before 0.23.0, kv_connector_extra_config.read_mode after."""
    mode = types.SimpleNamespace(READ="READ", WRITE="WRITE")
    log = types.SimpleNamespace(debug=lambda *a: None, info=lambda *a: None)
    values = ["true", "1", "TRUE", " true ", "True", "yes", "0", "false", "", None]
    fn = vllm_source.lift(_root(release), COMMON, {"get_moriio_mode"}, env={"MoRIIOMode": mode, "logger": log})
    takes_config = bool(fn["get_moriio_mode"].__code__.co_argcount)  # 0.23.0+: get_moriio_mode(kv_transfer_config)
    assert (moriio.MODE.at(release) == "extra") == takes_config
    parse = None if takes_config else _env_read_mode(release)
    for extra_value, env_value in itertools.product(values, values):
        extra = {} if extra_value is None else {"read_mode": extra_value}
        env = {} if env_value is None else {"VLLM_MORIIO_CONNECTOR_READ_MODE": env_value}
        if takes_config:
            got = fn["get_moriio_mode"](types.SimpleNamespace(kv_connector_extra_config=extra))
        else:
            fake_os = types.SimpleNamespace(getenv=lambda name, default=None, env=env: env.get(name, default))
            value = eval(parse, {"os": fake_os})()  # noqa: S307 - envs.py's own lambda
            fn["envs"] = types.SimpleNamespace(VLLM_MORIIO_CONNECTOR_READ_MODE=value)
            got = fn["get_moriio_mode"]()
        assert (got == "READ") == moriio.read_mode(extra, env, release), (release, extra, env)


def _env_read_mode(release: Release) -> Any:
    """envs.py's own parser of VLLM_MORIIO_CONNECTOR_READ_MODE (a lambda over os), compiled."""
    for node in ast.walk(_tree(release, "vllm/envs.py")):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "VLLM_MORIIO_CONNECTOR_READ_MODE":
                    return compile(ast.Expression(value), "envs.py", "eval")
    raise AssertionError(f"{release}: envs.py has no VLLM_MORIIO_CONNECTOR_READ_MODE")


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_read_mode_tp(release: Release) -> None:
    """READ: rank map on decode, ack count on prefill, KV-head guard on decode (0.25.0+); equal TP before."""
    names = {"get_moriio_remote_tp_rank", "get_moriio_expected_ack_count", "validate_moriio_heterogeneous_tp_kv_heads"}
    root = _root(release)
    if vllm_source.has(root, CONNECTOR, "get_moriio_remote_tp_rank"):
        fn = vllm_source.lift(root, CONNECTOR, names)
        rank, acks, guard = (fn[n] for n in ("get_moriio_remote_tp_rank", "get_moriio_expected_ack_count",
                                             "validate_moriio_heterogeneous_tp_kv_heads"))
        assert moriio.READ_TP.at(release) == "rank-map"
        for f_, args in ((rank, ["local_tp_rank", "local_tp_size", "remote_tp_size"]),
                         (acks, ["producer_tp_size", "consumer_tp_size"]),
                         (guard, ["local_tp_size", "remote_tp_size", "total_num_kv_heads", "is_mla"])):
            assert list(f_.__code__.co_varnames[:f_.__code__.co_argcount]) == args  # called positionally below
    else:
        # No function looks at the peer TP: the handshake dials the local TP rank, so rank r pairs with rank r.
        dial = _calls(_method(_tree(release, CONNECTOR), "MoRIIOConnectorWorker", "_moriio_handshake"),
                      "get_port_offset")
        assert [ast.unparse(c.args[1]) for c in dial] == ["self.tp_rank"], release
        assert moriio.READ_TP.at(release) == "none"
        rank = acks = guard = None
    for p, d, k, mla in itertools.product(SIZES, SIZES, KV_HEADS, (False, True)):
        got = _rules(release, p, d, k, mla, read=True)
        if rank is None:
            assert ("tp-ratio[moriio]" in got) == (p != d), (release, p, d)
            assert "kv-heads[moriio-replicated]" not in got
            continue
        rank_fails = any(_raises(rank, r, d, p) for r in range(d))  # decode is local
        assert ("tp-ratio[moriio]" in got) == (rank_fails or _raises(acks, p, d)), (release, p, d)
        assert ("kv-heads[moriio-replicated]" in got) == _raises(guard, d, p, k, mla), (release, p, d, k, mla)
        for r in range(d):
            if not _raises(rank, r, d, p):
                assert remote_ranks(r, d, p, "moriio", release) == [rank(r, d, p)]
        if not _raises(acks, p, d):
            assert moriio.ack_count(p, d) == acks(p, d)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_write_mode_tp(release: Release) -> None:
    """WRITE: 0.33.0's validate_write_tp_topology; before, equal TP only (the handshake raises on non-multiples)."""
    root = _root(release)
    mapping = root / DIR / "moriio_tp_mapping.py"
    validate = None
    if mapping.exists():
        namespace: dict[str, Any] = {}
        exec(compile(mapping.read_text(encoding="utf-8"), str(mapping), "exec"), namespace)  # noqa: S102
        validate, compute = namespace["validate_write_tp_topology"], namespace["compute_write_tp_mapping"]
        assert moriio.WRITE_TP.at(release) == "mapping"
    handshake = None
    add = ast.unparse(_method(_tree(release, COMMON), "MoRIIOConnectorMetadata", "add_new_req"))
    if vllm_source.has(root, CONNECTOR, "get_moriio_remote_tp_rank") and "remote_tp_size" in add:
        # 0.27.0+: the decode TP reaches the prefill handshake (the proxy sends remote_tp_size);
        # 0.25.0 - 0.26.0 read only tp_size, absent on write requests (test_write_rank_collapse).
        handshake = vllm_source.lift(root, CONNECTOR, {"get_moriio_remote_tp_rank"})["get_moriio_remote_tp_rank"]
    for p, d, k, mla in itertools.product(SIZES, SIZES, KV_HEADS, (False, True)):
        sp, sd = _side("prefill", release, p, k, mla, read=False), _side("decode", release, d, k, mla, read=False)
        found = [pr for pr in families.problems(sp, sd) if pr.rule == "tp-ratio[moriio-write]"
                 and "rank collapse" not in pr.message]  # test_write_rank_collapse
        if validate is not None:
            fails = _raises(validate, p, d, k, mla)
            assert fails == any(_raises(compute, r, p, d, k, mla, False) for r in range(p))
            assert bool(found) == fails, (release, p, d, k, mla)
            continue
        assert bool(found) == (p != d), (release, p, d)  # inferred: no head mapping before 0.33.0
        if found and handshake is not None:  # prefill is local at the write handshake
            raised = any(_raises(handshake, r, p, d) for r in range(p))
            assert ("handshake" in found[0].message) == raised, (release, p, d)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_write_rank_collapse(release: Release) -> None:
    """0.25.0 - 0.26.0: write requests carry no tp_size, read as 1, so every prefill rank dials decode rank 0."""
    root = _root(release)
    common = _tree(release, COMMON)
    add = _method(common, "MoRIIOConnectorMetadata", "add_new_req")
    defaults = [[getattr(a, "value", None) for a in c.args] for c in _calls(add, "get")
                if c.args and getattr(c.args[0], "value", None) == "tp_size"]
    handshake = _method(_tree(release, CONNECTOR), "MoRIIOConnectorWorker", "_moriio_handshake")
    maps = "_remote_tp_rank" in ast.unparse(handshake)
    rank = None
    if maps and defaults == [["tp_size", 1]]:
        rank = vllm_source.lift(root, CONNECTOR, {"get_moriio_remote_tp_rank"})["get_moriio_remote_tp_rank"]
    for p in SIZES:
        collapses = rank is not None and any(rank(r, p, 1) != r for r in range(p))
        problems = families.problems(_side("prefill", release, p, read=False), _side("decode", release, p, read=False))
        assert any("rank collapse" in pr.message for pr in problems) == collapses, (release, p)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_hybrid_models(release: Release) -> None:
    """Mamba/KDA: equal TP (0.31.0+ READ; 0.31.0 - 0.32.0 also WRITE, which is rejected outright)."""
    root = _root(release)
    text = (root / CONNECTOR).read_text(encoding="utf-8")
    has_guard = vllm_source.has(root, CONNECTOR, "_mamba_tp_ratio", "MoRIIOConnectorWorker")
    write_rejected = "transfer is implemented for READ" in text
    assert (moriio.HYBRID.at(release) != "none") == has_guard
    assert (moriio.HYBRID.at(release) == "read-only") == write_rejected
    if has_guard:
        ratio = vllm_source.lift(root, CONNECTOR, {"_mamba_tp_ratio"}, "MoRIIOConnectorWorker")["_mamba_tp_ratio"]
    for p, d in itertools.product(SIZES, SIZES):
        for read in (True, False):
            sp = _side("prefill", release, p, 8, True, read, ssm=True)
            sd = _side("decode", release, d, 8, True, read, ssm=True)
            problems = families.problems(sp, sd)
            hetero = any("recurrent state" in pr.message for pr in problems)
            write = any("read mode only" in pr.message for pr in problems)
            guarded = has_guard and (read or write_rejected)
            expect = guarded and _raises(ratio, types.SimpleNamespace(world_size=d), p)
            assert hetero == expect, (release, p, d, read)
            assert write == (write_rejected and not read), (release, p, d, read)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_listener_ports(release: Release) -> None:
    """Listeners: base + get_port_offset(dp_rank, tp_rank), dp_rank global before 0.28.0, pod-local after."""
    root = _root(release)
    fold = vllm_source.has(root, COMMON, "fold_local_rank")
    fn = vllm_source.lift(root, COMMON, {"get_port_offset", *({"fold_local_rank"} if fold else set())})
    config = _method(_tree(release, COMMON), "MoRIIOConfig", "from_vllm_config")
    assert [len(c.args) for c in _calls(config, "get_port_offset")] == [2]  # tp_size never passed
    worker = _method(_tree(release, CONNECTOR), "MoRIIOConnectorWorker", "__init__")
    listen = [ast.unparse(c) for c in _calls(worker, "get_port_offset")]
    assert listen == ["get_port_offset(self.dp_rank, self.tp_rank)"]
    assert bool(_calls(config, "fold_local_rank")) == fold
    for dp_start, dp_local, tp in itertools.product((0, 2), (1, 2, 3), (1, 2, 4)):
        want = []
        for i in range(dp_local):
            dp = fn["fold_local_rank"](dp_start + i, dp_local) if fold else dp_start + i
            want += [fn["get_port_offset"](dp, t) for t in range(tp)]
        assert [o for o, _, _ in moriio_config.listeners(release, dp_start, dp_local, tp)] == want


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_dial_offset(release: Release) -> None:
    """The READ handshake dial: dp + rank (to 0.26.0), dp * remote TP + rank (0.27.0+; pod-local dp from 0.28.0)."""
    root = _root(release)
    gpo = vllm_source.lift(root, COMMON, {"get_port_offset"})["get_port_offset"]
    tree = _tree(release, CONNECTOR)
    [dial] = _calls(_method(tree, "MoRIIOConnectorWorker", "_moriio_handshake"), "get_port_offset")
    folded = bool(_calls(_method(tree, "MoRIIOConnectorWorker", "_background_moriio_handshake"), "fold_local_rank"))
    tp_aware = len(dial.args) == 3
    assert moriio.DIAL.at(release) == ("dp+tp" if not tp_aware else "dp_local*tp+tp" if folded else "dp*tp+tp")
    for p_dp, p_tp in itertools.product((1, 2, 3), (1, 2, 4)):
        # Prefill DP ranks on separate hosts (DP-local 1 each): vLLM's own misdial, not a port collision.
        dp_seen = [0 if folded else k for k in range(p_dp)]
        misdial = any(gpo(dp, r, p_tp) != gpo(dp, r) for dp in dp_seen for r in range(p_tp)) if tp_aware else False
        got = [pr for pr in families.problems(_side("prefill", release, p_tp, dp=p_dp), _side("decode", release, p_tp))
               if "dials" in pr.message]
        assert bool(got) == misdial, (release, p_dp, p_tp)


def _keys(node: ast.AST, var: str) -> tuple[set[str], set[str]]:
    """(keys read as var["k"], keys read as var.get("k", ...)) inside node."""
    subscripts = {n.slice.value for n in ast.walk(node) if isinstance(n, ast.Subscript)
                  and getattr(n.value, "id", None) == var and isinstance(n.slice, ast.Constant)
                  and isinstance(n.ctx, ast.Load)}
    gets = {c.args[0].value for c in _calls(node, "get")
            if getattr(getattr(c.func, "value", None), "id", None) == var and c.args
            and isinstance(c.args[0], ast.Constant)}
    return subscripts, gets


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_extra_config_keys(release: Release) -> None:
    """MoRIIOConfig.from_vllm_config: keys read with [] are required (but the two port bases get defaults)."""
    common = _tree(release, COMMON)
    required, optional = _keys(_method(common, "MoRIIOConfig", "from_vllm_config"), "extra_config")
    for fn in (n for n in common.body if isinstance(n, ast.FunctionDef)):
        if fn.name == "resolve_host_ip":
            optional |= _keys(fn, "extra_config")[1]
        if fn.name == "get_moriio_mode":
            optional |= {c.args[0].value for c in _calls(fn, "get") if c.args and isinstance(c.args[0], ast.Constant)}
    defaults = _method(_tree(release, CONNECTOR), "MoRIIOConnector", "_set_port_defaults")
    defaulted = {c.left.value for c in ast.walk(defaults) if isinstance(c, ast.Compare)
                 and isinstance(c.left, ast.Constant)}
    assert defaulted == {"handshake_port", "notify_port"}
    assert set(moriio_config.REQUIRED.at(release)) == required - defaulted, release
    assert moriio_config.reads(release) == frozenset(required | optional), release
    extra = {"http_port": 8000, "read_mode": "true"}
    for missing in ("proxy_ip", "proxy_ping_port", "http_port"):
        partial = {**{"proxy_ip": "10.0.0.1", "proxy_ping_port": 36367}, **extra}
        partial.pop(missing)
        found = [m for _, m, _ in moriio_config.config_problems(partial, release, 8000) if f"['{missing}']" in m]
        assert bool(found) == (missing in required), (release, missing)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_env_ignored(release: Release) -> None:
    """_DEPRECATED_ENV_VARS (0.23.0+) lists the variables the release ignores; before, envs.py reads them."""
    deprecated: set[str] = set()
    for node in _tree(release, COMMON).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_DEPRECATED_ENV_VARS":
            deprecated = {k.value for k in node.value.keys}  # type: ignore[union-attr]
    envs = (_root(release) / "vllm/envs.py").read_text(encoding="utf-8")
    read = {name for name in moriio_config.IGNORED_ENV if f'"{name}"' in envs}
    assert deprecated.isdisjoint(read) and (deprecated or read) == set(moriio_config.IGNORED_ENV)
    assert set(moriio_config.ENV_IGNORED.at(release)) == deprecated, release
    env = dict.fromkeys(moriio_config.IGNORED_ENV, "1")
    assert {name for name, _ in moriio_config.ignored_env(env, release)} == deprecated


def _build_rules(p: dict[str, Any], d: dict[str, Any], common: dict[str, Any]) -> list[Any]:
    def hv(name: str, role: str, own: dict[str, Any]) -> HostVars:
        return HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, **common, **own})

    topo, _ = build([hv("p", "prefill", p), hv("d", "decode", d)])
    return [f for rule in REGISTRY.values() for f in rule.check(topo)]


def _kv(read: bool) -> dict[str, Any]:
    extra = {"http_port": 8000, "proxy_ip": "10.0.0.1", "proxy_ping_port": 36367,
             **({"read_mode": "true"} if read else {})}
    return {"kv_connector": "MoRIIOConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}


@pytest.mark.parametrize("release", [R("0.24.0"), R("0.25.0"), R("0.32.0"), R("0.33.0")], ids=str)
def test_rules_through_build(release: Release) -> None:
    """The rules, through the inventory build path, agree with the lifted functions on the READ grid (MLA)."""
    fn = vllm_source.lift(_root(release), CONNECTOR, {"get_moriio_remote_tp_rank", "get_moriio_expected_ack_count"}) \
        if vllm_source.has(_root(release), CONNECTOR, "get_moriio_remote_tp_rank") else None
    common = {"vllm_version": release.text, "vllm_model_num_attention_heads": 48, "vllm_model_num_kv_heads": 48,
              "vllm_model_is_mla": True, "vllm_kv_transfer_config": _kv(True),
              "vllm_env": {"VLLM_MORIIO_CONNECTOR_READ_MODE": "1"} if release < R("0.23.0") else {}}
    for p, d in itertools.product(SIZES, SIZES):
        if fn is None:
            broken = p != d
        else:
            broken = any(_raises(fn["get_moriio_remote_tp_rank"], r, d, p) for r in range(d)) or \
                _raises(fn["get_moriio_expected_ack_count"], p, d)
        found = _build_rules({"vllm_tensor_parallel_size": p}, {"vllm_tensor_parallel_size": d}, common)
        fired = {f.rule for f in found}
        assert ("tp-ratio[moriio]" in fired) == broken, (release, p, d)


def test_gqa_read_p4_d6_reports_both_with_a_hint_that_passes_both() -> None:
    common = {"vllm_version": "0.32.0", "vllm_model_num_attention_heads": 48, "vllm_model_num_kv_heads": 8,
              "vllm_model_is_mla": False, "vllm_kv_transfer_config": _kv(True)}
    found = {f.rule: f for f in _build_rules({"vllm_tensor_parallel_size": 4}, {"vllm_tensor_parallel_size": 6},
                                             common)}
    assert {"tp-ratio[moriio]", "kv-heads[moriio-replicated]"} <= set(found)
    assert found["tp-ratio[moriio]"].hint == "use decode TP 4"
    assert found["kv-heads[moriio-replicated]"].hint == "use decode TP 4"


@pytest.mark.parametrize(("version", "rules"), [
    ("0.24.0", {"tp-ratio[moriio-write]"}),  # no check; inferred failure
    ("0.26.0", {"tp-ratio[moriio-write]"}),  # handshake raises, KV unmapped anyway
    ("0.32.0", {"tp-ratio[moriio-write]"}),
    ("0.33.0", set()),  # WRITE fan-out: 8 heads split over 2 and 4
])
def test_write_p2_d4_gqa(version: str, rules: set[str]) -> None:
    common = {"vllm_version": version, "vllm_model_num_attention_heads": 32, "vllm_model_num_kv_heads": 8,
              "vllm_model_is_mla": False, "vllm_kv_transfer_config": _kv(False)}
    fired = {f.rule for f in _build_rules({"vllm_tensor_parallel_size": 2}, {"vllm_tensor_parallel_size": 4}, common)}
    assert {r for r in fired if r.startswith(("tp-ratio", "kv-heads"))} == rules


@pytest.mark.parametrize(("version", "warned"), [("0.22.1", False), ("0.23.0", True), (None, True)])
def test_env_ignored_rule(version: str | None, warned: bool) -> None:
    common = {"vllm_kv_transfer_config": _kv(False), "vllm_env": {"VLLM_MORIIO_CONNECTOR_READ_MODE": "1"},
              **({"vllm_version": version} if version else {})}
    found = [f for f in _build_rules({}, {}, common) if f.rule == "env[ignored]"]
    assert len(found) == (2 if warned else 0)
    assert all("set kv_connector_extra_config.read_mode" in (f.hint or "") for f in found)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_kv_both_split_role(release: Release) -> None:
    """kv-role[moriio-explicit] holds in every release: scheduler `kv_role == "kv_producer"`, worker is_kv_producer."""
    tree = _tree(release, CONNECTOR)
    scheduler = ast.unparse(_method(tree, "MoRIIOConnectorScheduler", "__init__"))
    worker = ast.unparse(_method(tree, "MoRIIOConnectorWorker", "__init__"))
    assert "kv_role == 'kv_producer'" in scheduler and "is_kv_producer" in worker

"""pdlint's Mooncake and P2pNccl checks against each release's own functions (tests/vllm_source.py).

Mooncake (V1, 0.13.0+): heterogeneous TP is unchecked 0.13.0 - 0.15.x (pdlint: an error vLLM does not
detect), NotImplementedError 0.16.0 - 0.18.x, `_get_tp_ratio` in either direction from 0.19.0; PP > 1 is a
ValueError 0.16.0 - 0.23.0; `_validate_asymmetric_region_lengths` rejects GQA pairs with decode TP above the
KV heads before 0.30.0. P2pNccl (0.9.2 - 0.23.0): ports kv_port + rank, http_port by release.
"""
from __future__ import annotations

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
from pdlint.vllm.connectors import mooncake, p2p, ports
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

KV = vllm_source.KV
MOONCAKE = [r for r in KNOWN if r >= R("0.13.0")]
P2P = [r for r in KNOWN if p2p.registered(r)]
ROOTS = vllm_source.roots(KNOWN)  # fetched when a test first reads it
SIZES = (1, 2, 3, 4, 6, 8, 16)


def _root(release: Release) -> Path:
    root = ROOTS[release]
    assert root is not None
    return root


def _connector(release: Release) -> str:
    old = f"{KV}/v1/mooncake_connector.py"
    return old if (_root(release) / old).exists() else f"{KV}/v1/mooncake/mooncake_connector.py"


@functools.cache
def _text(release: Release, relpath: str) -> str:
    return (_root(release) / relpath).read_text(encoding="utf-8")


@functools.cache
def _lift(release: Release, relpath: str, names: frozenset[str], klass: str | None = None) -> dict[str, Any]:
    """vllm_source.lift, once per release and file (lifting parses the whole file)."""
    return vllm_source.lift(_root(release), relpath, set(names), klass=klass)


def _rules(release: Release, p: dict[str, Any], d: dict[str, Any], common: dict[str, Any],
           connector: str = "MooncakeConnector") -> list[Any]:
    def hv(name: str, role: str, own: dict[str, Any]) -> HostVars:
        kv = {"kv_connector": connector, "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
        return HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_version": release.text,
                               "vllm_kv_transfer_config": kv, **common, **own})
    topo, _ = build([hv("p", "prefill", p), hv("d", "decode", d)])
    return [f for rule in REGISTRY.values() for f in rule.check(topo)]


MLA = {"vllm_model_num_attention_heads": 128, "vllm_model_num_kv_heads": 128, "vllm_model_is_mla": True}


def _raises(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except (AssertionError, ValueError, NotImplementedError):
        return True
    return False


def _vllm_tp_fails(release: Release, p: int, d: int) -> bool:
    """Whether the release's own code fails a P/D TP pair (MLA: no region question)."""
    mode = mooncake.TP.at(release)
    src = _text(release, _connector(release))
    if mode == "unchecked":
        # 0.13.0 - 0.15.x: nothing raises; decode rank r pulls remote_port + r (group_kv_pull): only equal TP lines up.
        assert "meta.remote_port + self.tp_rank" in src and "Heterogeneous" not in src
        return p != d
    if mode == "unsupported":
        # 0.16.0 - 0.18.x: decode's receive_kv and prefill's send_kv_to_decode (resolve_need_send) each ask
        # TpKVTopology.get_target_remote_ranks for the other side, then raise NotImplementedError unless one rank.
        assert src.count("Mooncake: Heterogeneous TP is not supported yet.") >= 2
        topo = _lift(release, f"{KV}/utils.py", frozenset({"tp_ratio", "get_target_remote_ranks"}), "TpKVTopology")
        fails = False
        for local, remote in ((d, p), (p, d)):
            for rank in range(local):
                me = types.SimpleNamespace(tp_size=local, tp_rank=rank)
                me.tp_ratio = lambda other, me=me: topo["tp_ratio"](me, other)
                try:
                    fails |= len(topo["get_target_remote_ranks"](me, remote)) != 1
                except AssertionError:
                    fails = True
        return fails
    lifted = _lift(release, _connector(release), frozenset({"_get_tp_ratio"}))
    return _raises(lifted["_get_tp_ratio"], d, p) or _raises(lifted["_get_tp_ratio"], p, d)


@pytest.mark.parametrize("release", MOONCAKE, ids=str)
def test_mooncake_tp_pairs(release: Release) -> None:
    for p, d in itertools.product(SIZES, SIZES):
        found = [f for f in _rules(release, {"vllm_tensor_parallel_size": p}, {"vllm_tensor_parallel_size": d}, MLA)
                 if f.rule == "tp-ratio[mooncake]"]
        assert bool(found) == _vllm_tp_fails(release, p, d), (release, p, d, found)
        if found:
            assert f"vLLM {release}" in found[0].message
            if mooncake.TP.at(release) == "unchecked":
                assert "does not check this" in found[0].message


@pytest.mark.parametrize("release", MOONCAKE, ids=str)
def test_mooncake_pipeline_parallel(release: Release) -> None:
    src = _text(release, _connector(release))
    rejects = "Mooncake Transfer Engine does not support pipeline parallelism yet." in src
    assert rejects == (mooncake.PP.at(release) == "rejected")
    for pp in (1, 2):
        found = [f for f in _rules(release, {"vllm_pipeline_parallel_size": pp}, {}, MLA)
                 if f.rule == "tp-ratio[mooncake]"]
        assert bool(found) == (pp > 1 and mooncake.PP.at(release) not in ("aligned", "partial")), (release, pp)
    if release < R("0.16.0"):
        assert "pipeline" not in src.lower() or "pp_size" not in src  # nothing checks PP before 0.16.0


def _vllm_region_error(release: Release, p: int, d: int, k: int, mla: bool, bp: int, bd: int) -> bool:
    """send_kv_to_decode's validation on prefill (local) for decode (remote), lifted from the release."""
    relpath = _connector(release)
    fns = _lift(release, relpath, frozenset({"_get_tp_ratio", "_validate_asymmetric_region_lengths"}))
    utils = f"{KV}/utils.py"
    if "def local_replicates_kv_cache" in _text(release, utils):
        rep = _lift(release, utils, frozenset({"local_replicates_kv_cache"}), "TransferTopology")
        me = types.SimpleNamespace(is_mla=mla, tp_size=p, total_num_kv_heads=k)
        replicated = rep["local_replicates_kv_cache"](me)
    else:
        rep = _lift(release, utils, frozenset({"is_kv_replicated", "replicates_kv_cache"}), "TpKVTopology")
        me = types.SimpleNamespace(is_mla=mla, total_num_kv_heads=k, remote_tp_size={"p": p})
        me.is_kv_replicated = lambda e, me=me: rep["is_kv_replicated"](me, e)
        replicated = rep["replicates_kv_cache"](me, "p")

    def regions(tp: int, block: int) -> list[Any]:
        heads = 1 if mla or tp >= k else k // tp  # QKVParallelLinear: one KV head per rank once TP >= K
        return [types.SimpleNamespace(kv_block_len=block * heads)] * 2
    kwargs: dict[str, Any] = {"local_regions": regions(p, bp), "remote_regions": regions(d, bd),
                              "local_tp_size": p, "remote_tp_size": d, "producer_cache_replicated": replicated}
    if "total_num_kv_heads" in _text(release, relpath).split("def _validate_asymmetric_region_lengths", 1)[1][:400]:
        kwargs["total_num_kv_heads"] = None if mla else k
    try:
        return fns["_validate_asymmetric_region_lengths"](**kwargs) is not None
    except AssertionError:
        return True


@pytest.mark.parametrize("release", [r for r in MOONCAKE if mooncake.TP.at(r) == "ratio"], ids=str)
def test_mooncake_region_lengths(release: Release) -> None:
    cases = 0
    for p, d, k, mla in itertools.product((1, 2, 4, 8, 16), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16), (False, True)):
        if not mla and (p > k and p % k or d > k and d % k):
            continue  # tp[kv-heads]'s: vLLM's QKV split rejects these shapes first
        model = {"vllm_model_num_attention_heads": 64, "vllm_model_num_kv_heads": k, "vllm_model_is_mla": mla,
                 "vllm_block_size": 16}
        for bd in (16, 32):
            found = [f for f in _rules(release, {"vllm_tensor_parallel_size": p},
                                       {"vllm_tensor_parallel_size": d, "vllm_block_size": bd}, model)
                     if f.rule in ("tp-ratio[mooncake]", "pd-mismatch[block-size]")]
            vllm = _vllm_region_error(release, p, d, k, mla, 16, bd)
            if bd == 16:
                assert bool(found) == vllm, (release, p, d, k, mla, found)
            else:
                assert found, (release, p, d, k, mla)  # block ids map one to one: unequal blocks never work
            cases += 1
    assert cases > 100


def test_mooncake_gqa_region_bug_spans() -> None:
    """The matrix's section 8 correction, pinned: P2 D16 K8 fails 0.19.0 - 0.29.0; P8 D16 K8 fails 0.20.0 - 0.29.0."""
    gqa = {"vllm_model_num_attention_heads": 64, "vllm_model_num_kv_heads": 8, "vllm_model_is_mla": False}
    for release in (r for r in MOONCAKE if r >= R("0.19.0")):
        for p, first in ((2, R("0.19.0")), (8, R("0.20.0"))):
            found = [f for f in _rules(release, {"vllm_tensor_parallel_size": p}, {"vllm_tensor_parallel_size": 16},
                                       gqa) if f.rule == "tp-ratio[mooncake]"]
            expected = first <= release < R("0.30.0")
            assert bool(found) == expected == _vllm_region_error(release, p, 16, 8, False, 16, 16), (release, p)


def _namespace(**kw: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**kw)


@pytest.mark.parametrize("release", MOONCAKE, ids=str)
def test_mooncake_ports(release: Release) -> None:
    relpath = _connector(release)
    state = {"rank": 0}  # the TP rank the lifted functions' stubs report
    for tp, dp, role in itertools.product((1, 2, 4), (1, 2), ("kv_producer", "kv_both", "kv_consumer")):
        hv = HostVars("p", {"vllm_pd_deployment": "x", "vllm_pd_role": "prefill", "vllm_version": release.text,
                            "vllm_tensor_parallel_size": tp, "vllm_data_parallel_size": dp, "vllm_port": None,
                            "vllm_kv_transfer_config": {"kv_connector": "MooncakeConnector", "kv_role": role}})
        topo, _ = build([hv])
        got = sorted(b.port for b in ports.binds(topo.instances[0]) if b.what != "API port")
        envs = _namespace(VLLM_MOONCAKE_BOOTSTRAP_PORT=8998)
        if role == "kv_consumer":
            want: list[int] = []  # `if self.kv_role == "kv_consumer": return` / `if not self.is_kv_consumer`
        elif not mooncake.launches_bootstrap(release):
            fn = vllm_source.lift(_root(release), relpath, {"get_mooncake_side_channel_port"}, env={"envs": envs})
            want = sorted(fn["get_mooncake_side_channel_port"](_namespace(parallel_config=_namespace(
                data_parallel_rank=i, data_parallel_index=i, tensor_parallel_size=tp))) + rank
                for i in range(dp) for rank in range(tp))
        else:
            want = []
            stubs = {"is_local_first_rank": lambda: state["rank"] == 0,
                     "get_tensor_model_parallel_rank": lambda: state["rank"],
                     "get_pp_group": lambda: _namespace(rank_in_group=0), "envs": envs}
            fns = vllm_source.lift(_root(release), relpath,
                                   {"should_launch_bootstrap_server", "get_mooncake_bootstrap_addr"}, env=stubs)
            for i, rank in itertools.product(range(dp), range(tp)):
                state["rank"] = rank
                parallel = _namespace(local_engines_only=False, data_parallel_index=i, data_parallel_rank_local=i,
                                      data_parallel_master_ip="127.0.0.1", nnodes_within_dp=1, master_addr="x")
                config = _namespace(parallel_config=parallel, kv_transfer_config=_namespace(
                    get_from_extra_config=lambda key, default: default))
                if fns["should_launch_bootstrap_server"](config):
                    want.append(fns["get_mooncake_bootstrap_addr"](config)[1])
        assert got == sorted(want), (release, tp, dp, role)


# P2pNccl ---------------------------------------------------------------------------------------------------------

P2P_ENGINE = f"{KV}/v1/p2p/p2p_nccl_engine.py"


@pytest.mark.parametrize("release", P2P, ids=str)
def test_p2p_pairs_and_http_port(release: Release) -> None:
    engine = _text(release, P2P_ENGINE)
    connector = _text(release, f"{KV}/v1/p2p/p2p_nccl_connector.py")
    # kv_port + world rank on both ends: ports.py's formula and the pairing rule's premise.
    assert "int(self.config.kv_port) + port_offset" in engine and "port_offset=self._rank" in connector
    assert "str(port + self._rank)" in connector and "Asymmetric TP, PP," in connector
    for (p, d), (pp_p, pp_d) in itertools.product(itertools.product((1, 2, 4), (1, 2, 4)), ((1, 1), (2, 2), (1, 2))):
        found = [f for f in _rules(release, {"vllm_tensor_parallel_size": p, "vllm_pipeline_parallel_size": pp_p},
                                   {"vllm_tensor_parallel_size": d, "vllm_pipeline_parallel_size": pp_d}, MLA,
                                   "P2pNcclConnector") if f.rule == "tp-ratio[p2p-nccl]"]
        assert len(found) == (p != d) + (pp_p != pp_d), (release, p, d, pp_p, pp_d)
    always = "kv_connector_extra_config['http_port']" in engine
    assert always == (p2p.HTTP_PORT.at(release) == "always")
    for extra, needed in (({}, always), ({"proxy_ip": "10.0.0.1", "proxy_port": "30001"}, True),
                          ({"http_port": 8000, "proxy_ip": "10.0.0.1", "proxy_port": "30001"}, False)):
        assert (p2p.http_port_missing(release, extra) is not None) == needed, (release, extra)
        kv = {"vllm_kv_transfer_config": {"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer",
                                          "kv_connector_extra_config": extra}}
        found = [f for f in _rules(release, kv, {}, {}, "P2pNcclConnector") if f.rule == "connector[config]"
                 and "p" in f.hosts]
        assert bool(found) == needed, (release, extra)


@pytest.mark.parametrize("release", P2P, ids=str)
def test_p2p_ports(release: Release) -> None:
    for tp, pp, kv_port in ((1, 1, None), (2, 2, 20000), (4, 1, 14579)):
        kv = {"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer", "kv_connector_extra_config":
              {"http_port": 8000}, **({"kv_port": kv_port} if kv_port else {})}
        hv = HostVars("p", {"vllm_pd_deployment": "x", "vllm_pd_role": "prefill", "vllm_version": release.text,
                            "vllm_tensor_parallel_size": tp, "vllm_pipeline_parallel_size": pp, "vllm_port": None,
                            "vllm_kv_transfer_config": kv})
        topo, _ = build([hv])
        base = kv_port or 14579  # KVTransferConfig.kv_port default
        binds = [b.port for b in ports.binds(topo.instances[0]) if b.what != "API port"]
        assert sorted(binds) == [base + r for r in range(tp * pp)]

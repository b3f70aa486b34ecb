"""pdlint's NIXL pair checks against each release's own code (tests/vllm_source.py fetches and caches the source).

For every release that ships NIXL (0.9.0+), the TP-ratio functions and the
handshake validation (`_validate_remote_agent_handshake`, or the statements of
`add_remote_agent` / `_nixl_handshake` before 0.11.1) are lifted out of that
release's files and run on a fake worker whose per-rank block lengths are
emulated from the model shape (a rank holds max(1, K // TP) KV heads; MLA holds
one latent per token). vLLM raising is compared with pdlint reporting any
problem for the pair. What vLLM never checks (0.9.0's rank-to-rank pairing,
PP, ports) is tested with explicit cases citing the source.
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
from pdlint.vllm.connectors import families
from pdlint.vllm.connectors import pair as vpair
from pdlint.vllm.connectors.nixl import channel as nixl_channel
from pdlint.vllm.connectors.ports import binds
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if r >= R("0.9.0")]  # 0.8.5 has no NIXL
ROOTS = vllm_source.roots(RELEASES)  # fetched when a test first reads it
KV = vllm_source.KV
SIZES = [1, 2, 3, 4, 6, 8, 12, 16]
TPS = [1, 2, 4, 8, 16]
TOPOLOGY_METHODS = {"tp_ratio", "block_size_ratio", "is_kv_replicated", "tp_ratio_from_engine_id",
                    "block_size_ratio_from_engine_id", "replicates_kv_cache"}
UNIT = 256  # bytes per token per KV head (emulated)
LAYERS = 2
_BEFORE_029 = {r.text for r in KNOWN if r < R("0.29.0")}


def _worker_file(root: Path) -> str:
    for rel in ("v1/nixl/base_worker.py", "v1/nixl/worker.py", "v1/nixl_connector.py"):
        if vllm_source.has(root, f"{KV}/{rel}", "_validate_remote_agent_handshake", _worker_class(root, rel)):
            return f"{KV}/{rel}"
    return f"{KV}/v1/nixl_connector.py"


def _worker_class(root: Path, rel: str) -> str:
    return "NixlBaseConnectorWorker" if rel.endswith("base_worker.py") else "NixlConnectorWorker"


def _tree(root: Path, relpath: str) -> ast.Module:
    return ast.parse((root / relpath).read_text(encoding="utf-8"))


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name), None)


def _compile(defs: list[ast.stmt], name: str, env: dict[str, Any]) -> dict[str, Any]:
    for d in defs:
        if isinstance(d, ast.FunctionDef):
            d.decorator_list, d.returns = [], None
            for arg in (*d.args.posonlyargs, *d.args.args, *d.args.kwonlyargs):
                arg.annotation = None
    namespace = dict(env)
    module = ast.fix_missing_locations(ast.Module(body=defs, type_ignores=[]))
    exec(compile(module, name, "exec"), namespace)  # noqa: S102 - vLLM's own code, from the cached wheel
    return namespace


def _divide(a: int, b: int) -> int:
    assert a % b == 0, f"{a} is not divisible by {b}"  # vllm/distributed/utils.py divide (0.9.x - 0.11.0)
    return a // b


@functools.cache
def _topology(root: Path) -> dict[str, Any]:
    """The topology class's own methods (TpKVTopology: nested 0.11.1 - 0.12.0; TransferTopology 0.20.0+)."""
    for rel, name in ((f"{KV}/utils.py", "TransferTopology"), (f"{KV}/utils.py", "TpKVTopology"),
                      (f"{KV}/v1/nixl_connector.py", "TpKVTopology")):
        if not (root / rel).exists():
            continue
        found = _class(_tree(root, rel), name)
        if found is not None:
            defs = [n for n in found.body if isinstance(n, ast.FunctionDef) and n.name in TOPOLOGY_METHODS]
            return _compile(defs, f"{root.name}/{rel}:{name}", {})
    return {}  # before 0.11.1 the ratios are inline in the worker


class Fake:
    """A vLLM object with just the attributes the lifted code reads (a missing one fails the test loudly)."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"fake has no {name!r}: add it to the test")


class Engines(dict):  # type: ignore[type-arg]
    """TransferTopology._engines: every remote key (engine id, or (engine id, pp rank)) is the prefill."""

    def __init__(self, info: Any) -> None:
        super().__init__()
        self.info = info

    def __getitem__(self, key: Any) -> Any:
        return self.info


class Layouts:
    def __getitem__(self, name: str) -> Any:
        return Fake(is_block_contiguous=True)


def _heads(tp: int, k: int) -> int:
    return max(1, k // tp)  # QKVParallelLinear: a rank holds K / TP heads, at least one (replicated)


def _block_len(tp: int, k: int, mla: bool, block: int) -> int:
    return block * UNIT * (1 if mla else _heads(tp, k))


def _worker(root: Path, p: int, d: int, k: int, mla: bool, bp: int, bd: int) -> tuple[Fake, Fake]:
    """(decode worker, prefill metadata) for pull mode: decode is local."""
    topo_fns = _topology(root)
    info = Fake(remote_tp_size=p, remote_block_size=bp, remote_pp_size=1, remote_dcp_size=1)
    # 0.29.0+ base_worker builds TransferTopology with total_num_kv_heads=1 for MLA.
    k_topo = 1 if mla and root.name not in _BEFORE_029 else k
    topo = Fake(tp_size=d, block_size=bd, total_num_kv_heads=k_topo, is_mla=mla,
                remote_tp_size={"remote": p, "local": d},
                remote_block_size={"remote": bp, "local": bd}, engine_id="local", tp_rank=0, _engines=Engines(info),
                local_physical_heads=_heads(d, k_topo))
    for name, fn in topo_fns.items():
        if callable(fn) and name in TOPOLOGY_METHODS:
            setattr(topo, name, types.MethodType(fn, topo))
    topo.get_engine_info = lambda *a, **kw: info
    local_len, remote_len = _block_len(d, k, mla, bd), _block_len(p, k, mla, bp)
    worker = Fake(
        engine_id="local", tp_rank=0, dcp_size=1, dcp_rank=0, _tp_size={"local": d, "remote": p}, kv_topo=topo,
        transfer_topo=topo,
        use_mla=mla, _has_mamba=False, _is_hma_required=False, use_host_buffer=False, kv_cache_layout="HND",
        host_buffer_kv_cache_layout="HND", kv_transfer_config=Fake(enable_permute_local_kv=False),
        enable_permute_local_kv=False, backend_name="FLASH_ATTN", _use_pallas=False, _use_pallas_v1=False,
        _use_flashinfer=False, device_type="cuda", block_size=bd, block_len=local_len,
        block_len_per_layer=[local_len] * LAYERS, slot_size_bytes=local_len // bd,
        slot_size_per_layer=[local_len // bd] * LAYERS, dst_num_blocks={"remote": 100}, num_blocks=100,
        _physical_blocks_per_logical_kv_block=1, model_config=Fake(get_total_num_kv_heads=lambda: k),
        vllm_config=Fake(cache_config=Fake(enable_prefix_caching=True)), _is_region_replicated=lambda i: False,
        _head_sharded_draft_regions=set(), _head_sharded_draft_kv_heads=None, _TRANSFER_MODE="pull",
        region_group_ids=None, dst_region_group_ids={}, _layer_specs={}, _transfer_layer_region_indices=None)
    meta = Fake(engine_id="remote", block_lens=[remote_len] * LAYERS, block_len=remote_len, block_size=bp,
                kv_cache_layout="HND", attn_backend_name="FLASH_ATTN", num_blocks=100, tp_size=p,
                kv_caches_base_addr=[0] * LAYERS, physical_blocks_per_logical_kv_block=1, region_num_blocks=None,
                block_strides=[remote_len] * LAYERS, region_group_ids=None, region_names=None, region_mem_types=None)
    return worker, meta


def _validate(root: Path) -> Any:
    """The release's handshake validation as fn(worker, meta, remote_tp_size)."""
    rel = _worker_file(root)
    tree = _tree(root, rel)
    if vllm_source.has(root, rel, "_validate_remote_agent_handshake", _worker_class(root, rel[len(KV) + 1:])):
        cls = _class(tree, _worker_class(root, rel[len(KV) + 1:]))
        assert cls is not None
        fn = next(n for n in cls.body
                  if isinstance(n, ast.FunctionDef) and n.name == "_validate_remote_agent_handshake")
        handshake = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_nixl_handshake")
        # 0.11.1 - 0.13.0: _nixl_handshake asserts "nP > nD is not supported yet." before add_remote_agent.
        extra = [n for n in ast.walk(handshake) if isinstance(n, ast.Assert) and "nP > nD" in ast.unparse(n)]
        for node in extra:
            node.test = ast.parse(ast.unparse(node.test).replace("metadata.", "nixl_agent_meta."), mode="eval").body
        fn.body = [*extra, *fn.body]
        env = {"logger": Fake(info=print, debug=print, warning=print),
               "KVCacheLayout": Layouts()}  # every layout the fakes use is block-contiguous (HND / LBHNC)
        ns = _compile([fn], f"{root.name}/{rel}", env)
        return ns["_validate_remote_agent_handshake"]
    # 0.9.1 - 0.11.0: the tp_ratio lines of _nixl_handshake, then add_remote_agent's checks up to the block size.
    cls = _class(tree, "NixlConnectorWorker")
    assert cls is not None
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    first = [s for s in methods["_nixl_handshake"].body
             if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) in ("tp_ratio", "p_remote_rank")]
    body = methods["add_remote_agent"].body
    start = next(i for i, s in enumerate(body) if not isinstance(s, ast.Expr)
                 and ("tp_ratio =" in ast.unparse(s) or "% self._tp_size" in ast.unparse(s)))
    end = next(i for i, s in enumerate(body)
               if ast.unparse(s).startswith("assert self.block_size == remote_block_size"))
    src = "\n".join(ast.unparse(s) for s in (*first, *body[start:end + 1]))
    src = src.replace("metadata.tp_size", "remote_tp_size").replace("engine_id]", "nixl_agent_meta.engine_id]")
    src = src.replace("self._tp_size[self.nixl_agent_meta.engine_id]", "self._tp_size[self.engine_id]")
    fn = ast.parse("def check(self, nixl_agent_meta, remote_tp_size):\n" + "\n".join(
        "    " + line for line in src.splitlines())).body
    return _compile(list(fn), f"{root.name}/{rel}", {"divide": _divide})["check"]


def _vllm_fails(check: Any, root: Path, p: int, d: int, k: int, mla: bool, bp: int, bd: int) -> bool:
    worker, meta = _worker(root, p, d, k, mla, bp, bd)
    try:
        for rank in range(d):
            worker.tp_rank = worker.kv_topo.tp_rank = rank
            check(worker, meta, p)
    except (AssertionError, ZeroDivisionError, RuntimeError, ValueError, NotImplementedError):
        return True
    return False


def _side(role: str, release: Release, tp: int, k: int = 48, mla: bool = False, block: int | None = None,
          pp: int = 1, ssm: bool = False, kv_role: str = "kv_both", connector: str = "NixlPullConnector") -> vpair.Side:
    return vpair.Side(role=role, release=release, connector=connector, tp=tp, pp=pp, block_size=block,
                      heads=64, kv_heads=k, mla=mla, ssm=ssm, kv_role=kv_role)


def _rules(pp: dict[str, Any], dd: dict[str, Any], common: dict[str, Any]) -> set[str]:
    def hv(name: str, role: str, own: dict[str, Any]) -> HostVars:
        return HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, **common, **own})

    topo, _ = build([hv("p", "prefill", pp), hv("d", "decode", dd)])
    return {f.rule for rule in REGISTRY.values() for f in rule.check(topo)}


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_tp_pairing(release: Release) -> None:
    root = ROOTS[release]
    assert root is not None
    pdlint = {(p, d): bool(families.problems(_side("prefill", release, p), _side("decode", release, d)))
              for p, d in itertools.product(SIZES, SIZES)}
    if release < R("0.9.1"):
        # 0.9.0: _nixl_handshake dials port + self.rank; no tp_ratio anywhere: rank r reads rank r.
        src = (root / f"{KV}/v1/nixl_connector.py").read_text(encoding="utf-8")
        assert "tp_ratio" not in src and "port + self.rank" in src
        assert pdlint == {(p, d): p != d for p, d in pdlint}
        return
    check = _validate(root)
    for p, d in pdlint:
        # K = 48 > every TP: no GQA split problem; equal block sizes.
        assert _vllm_fails(check, root, p, d, 48, False, 16, 16) == pdlint[(p, d)], (release, p, d)


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.9.1")], ids=str)
def test_handshake_grid(release: Release) -> None:
    """TP pairs x K x MLA x block sizes: vLLM's handshake raises iff pdlint reports a problem."""
    root = ROOTS[release]
    assert root is not None
    check = _validate(root)
    wrong = []
    for p, d, k, mla, bp, bd in itertools.product(TPS, TPS, (1, 2, 4, 8, 16), (False, True), (16, 32), (16, 32)):
        sp, sd = _side("prefill", release, p, k, mla, bp), _side("decode", release, d, k, mla, bd)
        found = families.problems(sp, sd)
        if _vllm_fails(check, root, p, d, k, mla, bp, bd) != bool(found):
            if release < R("0.11.1") and bp != bd and {x.rule for x in found} >= {"pd-mismatch[block-size]"}:
                # Before 0.11.1 the remote block size is derived from block_len / (slot size * tp_ratio), so a
                # head count that compensates the block size passes the handshake; _read_blocks then reads the
                # wrong slices (matrix section 8). pdlint reports the unequal block sizes.
                continue
            wrong.append((p, d, k, mla, bp, bd, [x.rule for x in families.problems(sp, sd)]))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:5]}"


NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
GQA8 = {"vllm_model_num_attention_heads": 64, "vllm_model_num_kv_heads": 8, "vllm_model_is_mla": False,
        "vllm_kv_transfer_config": NIXL}
MLA = {"vllm_model_num_attention_heads": 128, "vllm_model_num_kv_heads": 128, "vllm_model_is_mla": True,
       "vllm_kv_transfer_config": NIXL}


def _tp(p: int, d: int) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"vllm_tensor_parallel_size": p}, {"vllm_tensor_parallel_size": d}


def _pair_rules(version: str, pp: dict[str, Any], dd: dict[str, Any], common: dict[str, Any]) -> set[str]:
    found = _rules(pp, dd, {**common, "vllm_version": version})
    return found & {"tp-ratio[nixl]", "kv-heads[nixl-prefill-replicated]", "pd-mismatch[block-size]"}


# Matrix Appendix A (NIXL pull), pinned to the exact releases (intermediate patches included).
APPENDIX_A = [
    # (case, (p, d), common, {release: expected rules})
    ("P4 D4 K8", (4, 4), GQA8, {"0.9.0": set(), "0.13.0": set(), "0.33.0": set()}),
    ("P2 D4 K8", (2, 4), GQA8, {"0.9.0": {"tp-ratio[nixl]"}, "0.9.1": set(), "0.33.0": set()}),
    ("P4 D2 K8", (4, 2), GQA8, {"0.10.2": {"tp-ratio[nixl]"}, "0.13.0": {"tp-ratio[nixl]"}, "0.14.0": set(),
                                "0.33.0": set()}),
    ("P2 D3 K8", (2, 3), GQA8, {"0.10.2": {"tp-ratio[nixl]"}, "0.33.0": {"tp-ratio[nixl]"}}),
    ("P8 D4 K8", (8, 4), GQA8, {"0.13.0": {"tp-ratio[nixl]"}, "0.14.0": {"kv-heads[nixl-prefill-replicated]"},
                                "0.19.1": {"kv-heads[nixl-prefill-replicated]"}, "0.20.0": set(), "0.33.0": set()}),
    ("P16 D4 K8", (16, 4), GQA8, {"0.14.0": {"kv-heads[nixl-prefill-replicated]"},
                                  "0.33.0": {"kv-heads[nixl-prefill-replicated]"}}),
    ("P2 D16 K8", (2, 16), GQA8, {"0.9.2": {"tp-ratio[nixl]"}, "0.23.0": {"tp-ratio[nixl]"}, "0.24.0": set()}),
    ("P8 D16 K8", (8, 16), GQA8, {"0.9.1": {"tp-ratio[nixl]"}, "0.9.2": set(), "0.19.1": set(),
                                  "0.20.0": {"tp-ratio[nixl]"}, "0.23.0": {"tp-ratio[nixl]"}, "0.24.0": set()}),
    ("MLA P8 D4 K128", (8, 4), MLA, {"0.13.0": {"tp-ratio[nixl]"}, "0.14.0": set(), "0.33.0": set()}),
    ("MLA P16 D8 K16", (16, 8), {**MLA, "vllm_model_num_kv_heads": 16},
     {"0.14.0": {"kv-heads[nixl-prefill-replicated]"}, "0.19.1": {"kv-heads[nixl-prefill-replicated]"},
      "0.20.0": set(), "0.33.0": set()}),
]


@pytest.mark.parametrize(("case", "tps", "common", "expected"), APPENDIX_A, ids=[c[0] for c in APPENDIX_A])
def test_appendix_a(case: str, tps: tuple[int, int], common: dict[str, Any], expected: dict[str, set[str]]) -> None:
    for version, rules in expected.items():
        assert _pair_rules(version, *_tp(*tps), common) == rules, (case, version)


@pytest.mark.parametrize(("version", "bp", "bd", "tps", "fires"), [
    ("0.9.0", 16, 32, (4, 4), True),  # no check, blocks copied one to one
    ("0.10.2", 16, 32, (4, 4), True),  # equal
    ("0.11.0", 32, 16, (4, 4), True),
    ("0.11.1", 16, 32, (4, 4), False),  # decode a multiple of prefill
    ("0.13.0", 32, 16, (4, 4), True),  # "nP > nD is not supported yet."
    ("0.33.0", 32, 16, (4, 4), True),  # block_size_ratio
    ("0.13.0", 16, 32, (4, 2), True),  # P > D is a TP error there, and blocks are fine: the TP rule fires
    ("0.14.0", 16, 32, (4, 2), True),  # "Different local/remote block sizes are not supported when P TP > D TP."
    ("0.33.0", 16, 32, (2, 4), False),
])
def test_block_sizes(version: str, bp: int, bd: int, tps: tuple[int, int], fires: bool) -> None:
    pp, dd = _tp(*tps)
    found = _pair_rules(version, {**pp, "vllm_block_size": bp}, {**dd, "vllm_block_size": bd}, GQA8)
    assert bool(found) == fires


@pytest.mark.parametrize(("version", "ssm", "bp", "bd", "fires"), [
    ("0.17.1", True, 16, 32, False),  # NIXL has no HMA before 0.18.0
    ("0.18.0", True, 16, 32, True),  # "HMA does not support different remote block size yet"
    ("0.26.0", True, 16, 32, True),
    ("0.27.0", True, 16, 32, False),  # the HMA assert is gone
    ("0.26.0", False, 16, 32, False),  # not a hybrid model: HMA is not required
])
def test_block_sizes_hma(version: str, ssm: bool, bp: int, bd: int, fires: bool) -> None:
    sp = _side("prefill", R(version), 4, 8, False, bp, ssm=ssm)
    sd = _side("decode", R(version), 4, 8, False, bd, ssm=ssm)
    assert any(x.rule == "pd-mismatch[block-size]" for x in families.problems(sp, sd)) == fires


@pytest.mark.parametrize(("version", "p", "d", "fires"), [
    ("0.17.1", 4, 2, False), ("0.18.0", 4, 2, True), ("0.19.1", 2, 4, True), ("0.20.0", 4, 2, False),
])
def test_mamba_equal_tp(version: str, p: int, d: int, fires: bool) -> None:
    # 0.18.0 - 0.19.1 _validate_remote_agent_handshake: if self._has_mamba: assert tp_ratio == 1
    src = (ROOTS[R(version)] / f"{KV}/v1/nixl_connector.py")  # type: ignore[operator]
    has_assert = src.exists() and "Mamba does not support heterogeneous TP yet" in src.read_text(encoding="utf-8")
    assert has_assert == fires
    found = families.problems(_side("prefill", R(version), p, 48, ssm=True), _side("decode", R(version), d, 48, ssm=True))
    assert any("Mamba" in x.message for x in found) == fires


@pytest.mark.parametrize(("version", "p_pp", "d_pp", "d_role", "connector", "fires"), [
    ("0.25.1", 2, 1, "kv_both", "NixlPullConnector", True),  # no PP support at all (inferred)
    ("0.25.1", 1, 2, "kv_both", "NixlPullConnector", True),
    ("0.26.0", 1, 2, "kv_consumer", "NixlPullConnector", True),  # NotImplementedError in __init__
    ("0.26.0", 1, 2, "kv_both", "NixlPullConnector", True),  # unchecked decode PP (inferred)
    ("0.26.0", 2, 1, "kv_both", "NixlPushConnector", False),  # push: prefill PP slices a PP=1 decode
    ("0.26.0", 2, 1, "kv_both", "NixlPullConnector", True),  # pull: the handshake's layer-count assert
    ("0.29.0", 2, 1, "kv_both", "NixlPullConnector", True),  # 0.29 asks every stage; each still fails it
    ("0.29.0", 2, 1, "kv_both", "NixlPushConnector", False),
    ("0.33.0", 1, 2, "kv_consumer", "NixlPullConnector", True),
])
def test_pipeline_parallel(version: str, p_pp: int, d_pp: int, d_role: str, connector: str, fires: bool) -> None:
    root = ROOTS[R(version)]
    assert root is not None
    worker = root / f"{KV}/v1/nixl/base_worker.py"
    checks = worker.exists() and "consumer (decode) does not support" in worker.read_text(encoding="utf-8")
    assert checks == (R(version) >= R("0.26.0"))
    sp = _side("prefill", R(version), 2, pp=p_pp, connector=connector)
    sd = _side("decode", R(version), 2, pp=d_pp, kv_role=d_role, connector=connector)
    assert any("pipeline_parallel_size" in x.fields for x in families.problems(sp, sd)) == fires


def _instance(version: str, tp: int, dp: int = 1, dp_local: int | None = None, dp_start: int = 0,
              env: dict[str, str] | None = None) -> Any:
    values = {"vllm_pd_deployment": "x", "vllm_pd_role": "prefill", "vllm_version": version,
              "vllm_tensor_parallel_size": tp, "vllm_data_parallel_size": dp,
              "vllm_data_parallel_size_local": dp if dp_local is None else dp_local,
              "vllm_data_parallel_start_rank": dp_start, "vllm_kv_transfer_config": NIXL}
    if env:
        values["vllm_env"] = env
    topo, _ = build([HostVars("h", values)])
    return topo.instances[0]


@pytest.mark.parametrize(("version", "tp", "dp", "dp_local", "dp_start", "ports"), [
    ("0.9.0", 2, 2, 2, 0, [5557, 5558, 5557, 5558]),  # PORT + rank (DP ignored: DP ranks collide)
    ("0.9.1", 2, 2, 1, 1, [5557, 5558]),  # PORT + data_parallel_rank_local * TP + tp_rank
    ("0.9.2", 2, 2, 1, 1, [5559, 5560]),  # PORT + data_parallel_rank * TP + tp_rank
    ("0.11.0", 2, 2, 2, 0, [5557, 5558, 5559, 5560]),
    ("0.11.1", 2, 2, 2, 0, [5600, 5601]),  # one listener per engine core: PORT + data_parallel_rank
    ("0.33.0", 4, 2, 1, 1, [5601]),  # PORT + data_parallel_index
])
def test_side_channel_ports(version: str, tp: int, dp: int, dp_local: int, dp_start: int, ports: list[int]) -> None:
    root = ROOTS[R(version)]
    assert root is not None
    envs = (root / "vllm/envs.py").read_text(encoding="utf-8")
    assert f'"VLLM_NIXL_SIDE_CHANNEL_PORT", "{nixl_channel.default_side_channel_port(R(version))}"' in envs
    inst = _instance(version, tp, dp, dp_local, dp_start)
    assert [b.port for b in binds(inst) if b.what.startswith("NIXL")] == ports
    moved = _instance(version, tp, dp, dp_local, dp_start, {"VLLM_NIXL_SIDE_CHANNEL_PORT": "7000"})
    base = nixl_channel.default_side_channel_port(R(version))
    assert [b.port - 7000 for b in binds(moved) if b.what.startswith("NIXL")] == [port - base for port in ports]


def test_side_channel_host_default_is_loopback_in_every_release() -> None:
    for root in ROOTS.values():
        assert root is not None
        assert '"VLLM_NIXL_SIDE_CHANNEL_HOST", "localhost"' in (root / "vllm/envs.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_hash_factors(release: Release) -> None:
    """compute_nixl_compatibility_hash's factors in the release's own source agree with nixl_channel.HASHED."""
    root = ROOTS[release]
    assert root is not None
    text = "".join(p.read_text(encoding="utf-8") for p in (root / KV / "v1").glob("nixl*/**/*.py")) + \
        ((root / KV / "v1/nixl_connector.py").read_text(encoding="utf-8")
         if (root / KV / "v1/nixl_connector.py").exists() else "")
    found = set()
    if "def compute_nixl_compatibility_hash" in text:
        factors = {"vllm_version": "version", "model": "model", "dtype": "dtype", "cache_dtype": "kv_cache_dtype",
                   "is_hma_enabled": "hma", "transfer_mode": "mode"}
        body = text[text.index("def compute_nixl_compatibility_hash"):]
        body = body[:body.index("return compat_hash")]
        found = {ours for key, ours in factors.items() if f'"{key}"' in body}
    assert found == set(nixl_channel.HASHED.at(release)), release


@pytest.mark.parametrize(("pv", "dv", "extra", "fires"), [
    ("0.12.0", "0.11.1", {}, False),  # no hash before 0.13.0
    ("0.12.0", "0.13.0", {}, True),  # hash checked by the 0.13.0 decode
    ("0.13.0", "0.12.0", {}, True),  # payload the 0.12.0 decode cannot decode
    ("0.32.0", "0.31.0", {}, True),
    ("0.32.0", "0.31.0", {"enforce_handshake_compat": False}, False),
    ("0.32.0", "0.32.0.post1", {}, True),  # same release, but vllm.__version__ is hashed verbatim
    ("0.32.0", "v0.32.0", {}, False),  # the same __version__
    ("0.12.0", "0.12.0.post1", {}, False),  # no hash before 0.13.0
])
def test_version_mismatch(pv: str, dv: str, extra: dict[str, Any], fires: bool) -> None:
    config = {**NIXL, "kv_connector_extra_config": extra}
    found = _rules({"vllm_version": pv}, {"vllm_version": dv}, {"vllm_kv_transfer_config": config})
    assert ("pd-mismatch[vllm-version]" in found) == fires


@pytest.mark.parametrize(("version", "decode_disable", "fires"), [
    ("0.17.1", False, False),  # HMA is not in the hash yet
    ("0.18.0", False, True),
    ("0.33.0", False, True),
    # An unset flag: with a connector, off until 0.21.0 (config/vllm.py), then by SupportsHMA (NIXL: on).
    ("0.21.0", None, False),
    ("0.22.0", None, True),
])
def test_hma_mismatch(version: str, decode_disable: bool | None, fires: bool) -> None:
    decode = {} if decode_disable is None else {"vllm_disable_hybrid_kv_cache_manager": decode_disable}
    found = _rules({"vllm_disable_hybrid_kv_cache_manager": True}, decode,
                   {"vllm_version": version, "vllm_kv_transfer_config": NIXL})
    assert ("pd-mismatch[hma]" in found) == fires


def test_host_buffer_block_check_starts_where_the_source_has_it() -> None:
    """nixl.HOST_BUFFER_EQUAL_BLOCKS: the assert exists in exactly the releases the timeline says."""
    from pdlint.vllm.connectors import nixl

    message = "Heterogeneous block sizes are not supported with host buffer"
    for release, root in ROOTS.items():
        text = "".join(p.read_text(encoding="utf-8") for p in (root / vllm_source.KV / "v1").rglob("nixl*/*.py"))
        text += "".join(p.read_text(encoding="utf-8") for p in (root / vllm_source.KV / "v1").glob("nixl*.py"))
        assert (message in text) == nixl.HOST_BUFFER_EQUAL_BLOCKS.at(release), release


@pytest.mark.parametrize(("version", "device", "fires"), [
    ("0.26.0", "cpu", False),  # decode block a multiple of prefill's: fine before the host-buffer assert
    ("0.27.0", "cpu", True),
    ("0.33.0", "cpu", True),
    ("0.33.0", "cuda", False),
])
def test_host_buffer_needs_equal_blocks(version: str, device: str, fires: bool) -> None:
    config = {**NIXL, "kv_buffer_device": device}
    found = _rules({"vllm_block_size": 16}, {"vllm_block_size": 32},
                   {"vllm_version": version, "vllm_kv_transfer_config": config})
    assert ("pd-mismatch[block-size]" in found) == fires

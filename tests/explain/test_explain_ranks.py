"""The rank maps explain shows, against each release's own rank functions (the differential tests' TP grid).

NIXL: the target-rank function of each release (0.9.1 - 0.11.0 the `tp_rank // tp_ratio` statement of
_nixl_handshake; then TpKVTopology.get_target_remote_rank(s), TransferTopology.handshake_target_ranks) run on
a worker stand-in with tp_size and tp_rank. MoRIIO: READ get_moriio_remote_tp_rank (0.25.0+), WRITE
compute_write_tp_mapping (0.33.0), and the KV heads a rank holds (moriio_tp_mapping._rank_heads).
"""
from __future__ import annotations

import ast
import itertools
import types
from pathlib import Path
from typing import Any

import pytest
import vllm_source

from pdlint.vllm.connectors import ranks
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

SIZES = [1, 2, 3, 4, 6, 8, 12, 16]  # the grid of tests/vllm/connectors/test_vllm_nixl.py and tests/vllm/connectors/test_vllm_moriio.py
KV_HEADS = [1, 2, 4, 8, 16]
NIXL_RELEASES = [r for r in KNOWN if r >= R("0.9.1")]
ROOTS = vllm_source.roots(KNOWN)
KV = vllm_source.KV
NAMES = ("handshake_target_ranks", "get_target_remote_ranks", "get_target_remote_rank")


def _class_anywhere(tree: ast.Module, names: tuple[str, ...]) -> ast.ClassDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name in names), None)


def _nixl_target(root: Path) -> Any:
    """fn(local_rank, local_tp, remote_tp) -> list of remote ranks, from the release's own method."""
    for rel in (f"{KV}/utils.py", f"{KV}/v1/nixl_connector.py"):
        path = root / rel
        if not path.exists():
            continue
        cls = _class_anywhere(ast.parse(path.read_text(encoding="utf-8")), ("TransferTopology", "TpKVTopology"))
        if cls is None:
            continue
        defs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ("tp_ratio", *NAMES)]
        name = next(n for n in NAMES if any(d.name == n for d in defs))
        for d in defs:
            d.decorator_list, d.returns = [], None
            for arg in d.args.args:
                arg.annotation = None
        ns: dict[str, Any] = {}
        exec(compile(ast.Module(body=defs, type_ignores=[]), f"{root.name}/{rel}", "exec"), ns)  # noqa: S102

        def call(rank: int, local: int, remote: int, ns: dict[str, Any] = ns, name: str = name) -> list[int]:
            topo = types.SimpleNamespace(tp_size=local, tp_rank=rank)
            topo.tp_ratio = types.MethodType(ns["tp_ratio"], topo)
            got = ns[name](topo, remote)
            return list(got) if isinstance(got, list) else [got]
        return call
    # 0.9.1 - 0.11.0: the statements of _nixl_handshake, checked to be there, then run as written.
    src = (root / f"{KV}/v1/nixl_connector.py").read_text(encoding="utf-8")
    assert "p_remote_rank = self.tp_rank // tp_ratio" in src, root.name

    def inline(rank: int, local: int, remote: int) -> list[int]:
        tp_ratio = local // remote
        assert local % remote == 0, "Local TP size must be divisible by remote TP size."
        return [rank // tp_ratio]
    return inline


def _fails(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except (AssertionError, ValueError, ZeroDivisionError):
        return True
    return False


@pytest.mark.parametrize("release", NIXL_RELEASES, ids=str)
def test_nixl_targets_match_the_release(release: Release) -> None:
    theirs = _nixl_target(ROOTS[release])
    for local, remote in itertools.product(SIZES, SIZES):
        for rank in range(local):
            if _fails(theirs, rank, local, remote):
                assert _fails(ranks.nixl_targets, rank, local, remote, release), (release, rank, local, remote)
            else:
                assert ranks.nixl_targets(rank, local, remote, release) == theirs(rank, local, remote)


def test_nixl_0_9_0_pairs_rank_with_rank() -> None:
    src = (ROOTS[R("0.9.0")] / f"{KV}/v1/nixl_connector.py").read_text(encoding="utf-8")
    assert "tp_ratio" not in src and "port + self.rank" in src
    assert ranks.nixl_targets(3, 4, 4, R("0.9.0")) == [3] and _fails(ranks.nixl_targets, 0, 8, 4, R("0.9.0"))


def _mapping(root: Path) -> dict[str, Any]:
    path = root / KV / "v1" / "moriio" / "moriio_tp_mapping.py"
    ns: dict[str, Any] = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)  # noqa: S102
    return ns


def test_moriio_write_targets_match_0_33_0() -> None:
    release = R("0.33.0")
    ns = _mapping(ROOTS[release])
    for p, d, k, mla, ssm in itertools.product(SIZES, SIZES, KV_HEADS, (False, True), (False, True)):
        for rank in range(p):
            args = (rank, p, d, k, mla, ssm)
            if _fails(ns["compute_write_tp_mapping"], *args):
                assert _fails(ranks.moriio_write_targets, rank, p, d, k, mla, ssm, release), args
            else:
                want = list(ns["compute_write_tp_mapping"](*args).target_tp_ranks)
                assert ranks.moriio_write_targets(rank, p, d, k, mla, ssm, release) == want, args


def test_rank_heads_match_moriio_0_33_0() -> None:
    theirs = _mapping(ROOTS[R("0.33.0")])["_rank_heads"]
    for tp, k in itertools.product(SIZES, KV_HEADS):
        if tp <= k and k % tp or tp > k and tp % k:
            continue  # QKVParallelLinear rejects these (tp[kv-heads])
        assert [ranks.rank_heads(r, tp, k) for r in range(tp)] == [theirs(r, tp, k) for r in range(tp)]


@pytest.mark.parametrize("release", [r for r in KNOWN if r >= R("0.25.0")], ids=str)
def test_moriio_read_map_matches_the_release(release: Release) -> None:
    fn = vllm_source.lift(ROOTS[release], f"{KV}/v1/moriio/moriio_connector.py",
                          {"get_moriio_remote_tp_rank"})["get_moriio_remote_tp_rank"]
    for d, p in itertools.product(SIZES, SIZES):
        for rank in range(d):
            if _fails(fn, rank, d, p):
                assert _fails(ranks.remote_ranks, rank, d, p, "moriio", release)
            else:
                assert ranks.remote_ranks(rank, d, p, "moriio", release) == [fn(rank, d, p)]

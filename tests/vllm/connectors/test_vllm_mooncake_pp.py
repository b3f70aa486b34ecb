"""Mooncake with pipeline parallelism against each release's own code (vllm/connectors/mooncake.py PP).

Per release (0.13.0+) and pair of PP sizes (1, 2, 4 on each side; DP 1 and 2): the worker's PP rejection
(`raise ValueError("Mooncake Transfer Engine does not support pipeline parallelism yet.")`, read from __init__),
then, for 0.24.0+, the decode stage's choice of prefill stages (the `if self.pp_size == len(pp_to_addr) ...`
statement of the release, run as written) and the prefill's `_align_transfer_regions` (lifted), with the
`allow_partial_layers` argument evaluated as the release's call site writes it. Each stage holds an even share of
an 8-layer model (get_pp_indices with no remainder). vLLM fails the pair when a worker raises or any alignment
returns an error; pdlint must report tp-ratio[mooncake] naming pipeline_parallel_size exactly then.
"""
from __future__ import annotations

import ast
import functools
import itertools
import types
from collections import defaultdict
from typing import Any

import pytest
import vllm_source

from pdlint.engine import core as engine
from pdlint.hostvars import HostVars
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if r >= R("0.13.0")]
ROOTS = vllm_source.roots(RELEASES)
LAYERS = 8
PPS = (1, 2, 4)


def _file(release: Release) -> str:
    old = f"{vllm_source.KV}/v1/mooncake_connector.py"
    return old if (ROOTS[release] / old).exists() else f"{vllm_source.KV}/v1/mooncake/mooncake_connector.py"


def _tree(release: Release) -> ast.Module:
    return ast.parse((ROOTS[release] / _file(release)).read_text(encoding="utf-8"))


@functools.cache
def rejects_pp(release: Release) -> bool:
    return "does not support pipeline parallelism yet" in (ROOTS[release] / _file(release)).read_text("utf-8")


@functools.cache
def _align(release: Release) -> Any:
    if not vllm_source.has(ROOTS[release], _file(release), "_align_transfer_regions"):
        return None
    return vllm_source.lift(ROOTS[release], _file(release), {"_align_transfer_regions"},
                            env={"defaultdict": defaultdict})["_align_transfer_regions"]


@functools.cache
def _partial_expr(release: Release) -> ast.Expression | None:
    """The allow_partial_layers argument of the call to _align_transfer_regions (None: not passed)."""
    for node in ast.walk(_tree(release)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "_align_transfer_regions":
            for kw in node.keywords:
                if kw.arg == "allow_partial_layers":
                    return ast.Expression(kw.value)
    return None


@functools.cache
def _choose(release: Release) -> Any:
    """The decode stage's `if self.pp_size == len(pp_to_addr) ...` statement, as fn(self, pp_to_addr)."""
    stmt = next(n for n in ast.walk(_tree(release)) if isinstance(n, ast.If) and "len(pp_to_addr)" in
                ast.unparse(n.test))
    fn = ast.parse("def choose(self, pp_to_addr):\n    pass\n    return pp_ranks").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body[0] = stmt
    namespace: dict[str, Any] = {}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), "choose", "exec"),  # noqa: S102
         namespace)
    return namespace["choose"]


def _stage(pp: int, rank: int) -> list[Any]:
    share = LAYERS // pp
    return [types.SimpleNamespace(layer_name=f"model.layers.{i}", layer_index=i, group_index=0,
                                  shared_group_ids=(), row_offset=0)
            for i in range(rank * share, (rank + 1) * share)]


def vllm_fails(release: Release, p_pp: int, d_pp: int) -> bool:
    if rejects_pp(release) and (p_pp > 1 or d_pp > 1):
        return True
    align = _align(release)
    if align is None:
        return False  # 0.13.0 - 0.15.x: no PP handling at all (pdlint reports it unchecked: see below)
    expr = _partial_expr(release)
    for d_rank in range(d_pp):
        ranks = _choose(release)(types.SimpleNamespace(pp_size=d_pp, pp_rank=d_rank), dict.fromkeys(range(p_pp), ""))
        for p_rank in ranks:
            me, meta = types.SimpleNamespace(pp_size=p_pp), types.SimpleNamespace(remote_pp_size=d_pp)
            partial = bool(eval(compile(expr, "call", "eval"), {"self": me, "meta": meta})) if expr else False  # noqa: S307 - vLLM's own
            kwargs = {"allow_partial_layers": partial} if expr else {}
            if align(_stage(p_pp, p_rank), _stage(d_pp, d_rank), **kwargs)[2] is not None:
                return True
    return False


def _hosts(release: Release, p_pp: int, d_pp: int, dp: int) -> list[HostVars]:
    common = {"vllm_pd_deployment": "x", "vllm_version": release.text, "vllm_model": "deepseek-ai/DeepSeek-V3",
              "vllm_data_parallel_size": dp}
    return [HostVars(name, {**common, "vllm_pd_role": role, "vllm_pipeline_parallel_size": pp,
                            "vllm_kv_transfer_config": {"kv_connector": "MooncakeConnector", "kv_role": kv_role}})
            for name, role, pp, kv_role in (("p", "prefill", p_pp, "kv_producer"), ("d", "decode", d_pp,
                                                                                   "kv_consumer"))]


def _pp_findings(release: Release, p_pp: int, d_pp: int, dp: int) -> list[Any]:
    return [f for f in engine.lint(_hosts(release, p_pp, d_pp, dp)).findings if f.rule == "tp-ratio[mooncake]"
            and "PP" in f.message]


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_mooncake_pp_pairs(release: Release) -> None:
    wrong = []
    for p_pp, d_pp, dp in itertools.product(PPS, PPS, (1, 2)):
        found = _pp_findings(release, p_pp, d_pp, dp)
        unchecked = _align(release) is None and not rejects_pp(release) and (p_pp > 1 or d_pp > 1)
        if bool(found) != (vllm_fails(release, p_pp, d_pp) or unchecked):
            wrong.append((p_pp, d_pp, dp, [f.message for f in found]))
    assert not wrong, f"{release}: {wrong[:4]}"


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.24.0")], ids=str)
def test_mooncake_pp_hints_pass(release: Release) -> None:
    for p_pp, d_pp in itertools.product(PPS, PPS):
        for finding in _pp_findings(release, p_pp, d_pp, 1):
            assert finding.hint and f"decode pipeline_parallel_size 1 or {p_pp}" in finding.hint
            assert not vllm_fails(release, p_pp, 1) and not vllm_fails(release, p_pp, p_pp)

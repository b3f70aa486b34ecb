"""pd-mismatch[kv-cache-layout] against each release's own handshake validation.

test_vllm_nixl's lifted `_validate_remote_agent_handshake` (or 0.9.x - 0.11.0's add_remote_agent statements)
runs with the decode worker's kv_cache_layout and the prefill metadata's set from VLLM_KV_CACHE_LAYOUT as the
release stores them (0.29.0+: the canonical name, NHD = LBNHC and HND = LBHNC by config/cache.py's
_LAYOUT_COMPAT_ALIASES). A pair the release accepts with equal layouts but rejects with these must be exactly
what pdlint reports; the one pair pdlint leaves unchecked (remote HND into local NHD, which
enable_permute_local_kv may allow) is reported by no rule.
"""
from __future__ import annotations

import ast
import functools
import itertools

import pytest
import test_vllm_nixl as base

from pdlint.vllm.connectors import families
from pdlint.vllm.connectors import pair as vpair
from pdlint.vllm.releases import R, Release

RELEASES = [r for r in base.RELEASES if r >= R("0.9.1")]


def _stored(release: Release, value: str) -> str:
    """The name the release's worker keeps (0.29.0+: KVCacheLayout[...].name after the compat aliases)."""
    return _aliases(release).get(value, value)


@functools.cache
def _aliases(release: Release) -> dict[str, str]:
    cache = base.ROOTS[release] / "vllm/config/cache.py"  # type: ignore[operator]
    text = cache.read_text(encoding="utf-8") if cache.exists() else ""
    if "_LAYOUT_COMPAT_ALIASES" not in text:
        return {}
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and "_LAYOUT_COMPAT_ALIASES"
                in ast.unparse(n.targets[0] if isinstance(n, ast.Assign) else n.target))
    return dict(ast.literal_eval(node.value))  # type: ignore[arg-type]


@functools.cache
def _choices(release: Release) -> list[str]:
    envs = (base.ROOTS[release] / "vllm/envs.py").read_text(encoding="utf-8")  # type: ignore[operator]
    return ["NHD", "HND", "LBHNC", "LHBNC", "BLHNC", "BHLNC"] if '"LBNHC"' in envs else ["NHD", "HND"]


def _vllm_rejects(check: object, release: Release, p: int, d: int, k: int, mla: bool, lp: str, ld: str) -> bool:
    root = base.ROOTS[release]
    worker, meta = base._worker(root, p, d, k, mla, 16, 16)
    worker.kv_cache_layout = worker.host_buffer_kv_cache_layout = _stored(release, ld)
    meta.kv_cache_layout = _stored(release, lp)
    try:
        for rank in range(d):
            worker.tp_rank = worker.kv_topo.tp_rank = rank
            check(worker, meta, p)  # type: ignore[operator]
    except (AssertionError, ZeroDivisionError, RuntimeError, ValueError, NotImplementedError):
        return True
    return False


def _reported(release: Release, p: int, d: int, k: int, mla: bool, lp: str, ld: str) -> bool:
    def side(role: str, tp: int, value: str) -> vpair.Side:
        return vpair.Side(role=role, release=release, connector="NixlConnector", tp=tp, block_size=16, heads=64,
                          kv_heads=k, mla=mla, ssm=False, kv_role="kv_both", env=(("VLLM_KV_CACHE_LAYOUT", value),))

    found = families.problems(side("prefill", p, lp), side("decode", d, ld))
    return any(x.rule == "pd-mismatch[kv-cache-layout]" for x in found)


def _real_layouts(release: Release, check: object) -> None:
    """0.29.0+: the release's own KVCacheLayout enum (is_block_contiguous decides), not the test's stand-in."""
    path = base.ROOTS[release] / "vllm/v1/kv_cache_layout.py"  # type: ignore[operator]
    if path.exists():
        namespace: dict[str, object] = {"__name__": "kv_cache_layout"}
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102
        check.__globals__["KVCacheLayout"] = namespace["KVCacheLayout"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_layout_grid(release: Release) -> None:
    check = base._validate(base.ROOTS[release])
    _real_layouts(release, check)
    wrong = []
    for p, d, k, mla, lp, ld in itertools.product(base.TPS, base.TPS, (2, 8), (False, True), _choices(release),
                                                   _choices(release)):
        if _vllm_rejects(check, release, p, d, k, mla, "HND", "HND"):
            continue  # the pair fails for another reason (tp-ratio, replication): not this rule's
        rejects = _vllm_rejects(check, release, p, d, k, mla, lp, ld)
        reported = _reported(release, p, d, k, mla, lp, ld)
        if (_stored(release, lp), _stored(release, ld)) in (("HND", "NHD"), ("LBHNC", "LBNHC")) and \
                release >= R("0.11.1"):
            assert not reported, (p, d, lp, ld)  # enable_permute_local_kv decides: not checked
            continue
        if rejects != reported:
            wrong.append((p, d, k, mla, lp, ld, rejects))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:5]}"

"""NIXL and the KV cache layout per release: VLLM_KV_CACHE_LAYOUT values the handshake rejects.

The handshaking side (decode in pull mode, prefill in push: nixl.checker) compares the remote
`kv_cache_layout` with its own. pdlint knows a side's layout only where vllm_env sets
VLLM_KV_CACHE_LAYOUT; unset, the attention backend and the connector choose it (get_kv_cache_layout,
vllm/v1/attention/backends/utils.py; resolve_kv_cache_layout from 0.29.0), and pdlint does not check it.
"""
from __future__ import annotations

from collections.abc import Iterator

from ...history import history
from ...releases import R, Release, Timeline
from ..pair import Problem, Side

_OLD = "v1/nixl_connector.py NixlConnectorWorker"
_V = "._validate_remote_agent_handshake"
ENV = "VLLM_KV_CACHE_LAYOUT"

CHECK: Timeline[str | None] = history("pd-mismatch[kv-cache-layout]", Timeline(
    "NIXL KV cache layout at handshake",
    ("0.9.0", None, f"{_OLD}.add_remote_agent", "no layout check"),
    ("0.10.1", "heterogeneous-tp", f"{_OLD}.add_remote_agent (`if tp_ratio > 1: assert nixl_agent_meta."
     "kv_cache_layout == self.kv_cache_layout`)",
     "decode TP > prefill TP, non-MLA, prefill TP < K (KV not replicated): bare AssertionError"),
    ("0.11.1", "always", f"{_OLD}{_V} (v1/nixl/worker.py 0.20.0, v1/nixl/base_worker.py 0.24.0)",
     "non-MLA, any TP: RuntimeError \"Heterogeneous TP expects same kv_cache_layout\" (remote HND into a local "
     "NHD cache passes with enable_permute_local_kv)"),
))
# Heterogeneous TP splits heads, so the handshaking side's own layout must keep a block's heads contiguous.
CONTIGUOUS: Timeline[frozenset[str] | None] = history("pd-mismatch[kv-cache-layout]", Timeline(
    "NIXL heterogeneous TP needs a head-contiguous local KV cache layout",
    ("0.9.0", None, f"{_OLD}", "no check"),
    ("0.20.0", frozenset({"LBHNC"}), f"v1/nixl/worker.py NixlConnectorWorker{_V} (`kv_cache_layout != \"HND\"`)",
     "TP differs, non-MLA, remote TP <= K: RuntimeError \"... requires contiguous heads\" unless the layout is HND"),
    ("0.29.0", frozenset({"LBHNC", "BLHNC"}), f"v1/nixl/base_worker.py NixlBaseConnectorWorker{_V} "
     "(`KVCacheLayout[kv_cache_layout].is_block_contiguous`, v1/kv_cache_layout.py)",
     "the same unless the layout is block-contiguous (LBHNC = HND, BLHNC)"),
))
# envs.py VLLM_KV_CACHE_LAYOUT choices (None: any string, os.getenv) and config/cache.py _LAYOUT_COMPAT_ALIASES.
CHOICES: Timeline[frozenset[str] | None] = Timeline(
    "VLLM_KV_CACHE_LAYOUT values",
    ("0.9.2", None, "envs.py os.getenv(\"VLLM_KV_CACHE_LAYOUT\", None)"),
    ("0.11.0", frozenset({"NHD", "HND"}), "envs.py env_with_choices"),
    ("0.29.0", frozenset({"LBNHC", "LBHNC", "LHBNC", "NHD", "HND", "BLHNC", "BLNHC", "BHLNC"}),
     "envs.py env_with_choices; config/cache.py _LAYOUT_COMPAT_ALIASES (NHD = LBNHC, HND = LBHNC)"),
)
ALIASES = {"NHD": "LBNHC", "HND": "LBHNC"}  # the same physical order under both names (0.29.0 renamed them)
# From 0.29.0 an explicit VLLM_KV_CACHE_LAYOUT is final (resolve_kv_cache_layout: "does not satisfy every
# supported set" fails instead); before, a backend that requires a layout overrides it (_KV_CACHE_LAYOUT_OVERRIDE).
ENV_IS_FINAL = R("0.29.0")


def layout(side: Side) -> str | None:
    """side's layout as the handshake compares it, where the inventory decides it (None: backend-chosen)."""
    value = side.getenv(ENV)
    choices = CHOICES.at(side.release)
    if value is None or side.release < R("0.9.2") or choices is not None and value not in choices:
        return None  # unset (or a value envs.py rejects: the env rules' business)
    return ALIASES.get(value, value)


def problems(p: Side, d: Side, local: Side) -> Iterator[Problem]:
    """The layout problems of the pair, judged by local (the handshaking side) in its release."""
    differ = list(_differ(p, d, local))  # vLLM compares the layouts first: one error, not two
    yield from differ or _contiguous(p, d, local)


def _backend(rel: Release) -> str:
    return "" if rel >= ENV_IS_FINAL else (
        f"; vLLM {rel} lets an attention backend that requires one layout override it, the only way this passes")


def _contiguous(p: Side, d: Side, local: Side) -> Iterator[Problem]:
    remote = p if local is d else d
    rel, fine = local.release, CONTIGUOUS.at(local.release)
    mine, theirs, k = layout(local), layout(remote), p.kv_heads
    if fine is None or mine is None or mine in fine or p.tp == d.tp or p.mla is not False or k is None:
        return
    if remote.tp > k or local.kv_buffer_device == "cpu":
        return  # replicated KV heads are not split; a host buffer has a layout of its own
    if mine == "LBNHC" and theirs in (None, "LBHNC"):
        return  # a remote HND into this NHD cache may be permuted (enable_permute_local_kv, not read by pdlint)
    good = "HND" if rel < ENV_IS_FINAL else "LBHNC (HND)"
    yield Problem("pd-mismatch[kv-cache-layout]", local.role, (f"env.{ENV}",),
                  f"{local.role} {ENV} {local.getenv(ENV)} with prefill TP {p.tp} and decode TP {d.tp}: NIXL in vLLM "
                  f"{rel} splits KV heads across ranks and raises RuntimeError (\"Heterogeneous TP head-dimension "
                  f"splitting requires contiguous heads.\"){_backend(rel)}", CONTIGUOUS.step(rel).source,
                  hint=f"set vllm_env.{ENV}: {good} on {local.role}, or use the same TP on both sides", tp_fix=False)


def _differ(p: Side, d: Side, local: Side) -> Iterator[Problem]:
    remote = p if local is d else d
    rel, how = local.release, CHECK.at(local.release)
    mine, theirs = layout(local), layout(remote)
    if how is None or mine is None or theirs is None or mine == theirs or p.mla is not False:
        return
    if local.kv_buffer_device == "cpu":
        return  # a host buffer has its own layout (host_buffer_kv_cache_layout), set at registration
    if how == "heterogeneous-tp":
        k = p.kv_heads
        if k is None or local.tp <= remote.tp or remote.tp >= k:
            return  # equal TP, or replicated KV: 0.10.x compares layouts only for split heads
        said = "bare AssertionError"
    elif (theirs, mine) == ("LBHNC", "LBNHC"):
        return  # enable_permute_local_kv (a KVTransferConfig field pdlint does not read) may allow it
    else:
        said = "RuntimeError \"Heterogeneous TP expects same kv_cache_layout\""
    yield Problem("pd-mismatch[kv-cache-layout]", local.role, (f"env.{ENV}",),
                  f"{local.role} {ENV} {local.getenv(ENV)} differs from {remote.role} {ENV} {remote.getenv(ENV)}: "
                  f"NIXL in vLLM {rel} compares the KV cache layouts at handshake ({said}){_backend(rel)}",
                  CHECK.step(rel).source, hint=f"set the same vllm_env.{ENV} on both sides", tp_fix=False)

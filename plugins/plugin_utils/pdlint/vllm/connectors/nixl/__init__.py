"""NIXL (NixlConnector, NixlPullConnector, NixlPushConnector): what each release does with a P/D pair.

In pull mode (NixlConnector / NixlPullConnector) the decode worker reads, so
"local" in vLLM's code is decode and "remote" prefill: the decode side's
release runs the handshake checks. NixlPushConnector (0.24.0+) mirrors it
(prefill writes, and its release checks). Files: v1/nixl_connector.py
(0.9.0 - 0.19.1), v1/nixl/worker.py (0.20.0 - 0.23.0), v1/nixl/base_worker.py
(0.24.0+); topology: TpKVTopology (nested 0.11.1 - 0.12.0, kv_connector/utils.py
0.13.0 - 0.19.1), TransferTopology (0.20.0+). docs/rules-provenance.md has the
spans and how each was found.
"""
from __future__ import annotations

from collections.abc import Iterator

from ...history import history
from ...parallel import tp_ratio_ok
from ...releases import R, Timeline
from ..pair import Problem, Side
from . import layout as nixl_layout
from . import pp as nixl_pp

_OLD = "v1/nixl_connector.py NixlConnectorWorker"
_W20 = "v1/nixl/worker.py NixlConnectorWorker"
_W24 = "v1/nixl/base_worker.py NixlBaseConnectorWorker"
_V = "._validate_remote_agent_handshake"

# How prefill and decode TP sizes pair (pull: decode is local).
TP_PAIRING: Timeline[str] = history("tp-ratio[nixl]", Timeline(
    "NIXL TP pairing",
    ("0.9.0", "equal", f"{_OLD}._nixl_handshake (no check: rank r dials port + r)",
     "no heterogeneous TP: decode rank r reads prefill rank r, unchecked (inferred: TP must be equal)"),
    ("0.9.1", "decode-multiple", f"{_OLD}.add_remote_agent (assert local % remote == 0)",
     "decode TP must be a multiple of prefill TP: \"Local TP size must be divisible by remote TP size.\""),
    ("0.9.2", "decode-multiple", f"{_OLD}._nixl_handshake (tp_ratio = D // P), add_remote_agent (divide)",
     "decode TP must be a multiple of prefill TP: D < P is a ZeroDivisionError, else \"D is not divisible by P\""),
    ("0.11.1", "decode-multiple", "v1/nixl_connector.py TpKVTopology.tp_ratio",
     "decode TP must be a multiple of prefill TP: \"Local tensor parallel size D is not divisible by remote ...\""),
    ("0.14.0", "either", "kv_connector/utils.py TpKVTopology.tp_ratio (TransferTopology.tp_ratio from 0.20.0)",
     "either TP may be larger; the larger must be a multiple of the smaller"),
))
# Mamba/SSM models: heterogeneous TP (0.18.0 - 0.19.1 assert tp_ratio == 1).
MAMBA_EQUAL_TP: Timeline[bool] = history("tp-ratio[nixl]", Timeline(
    "NIXL Mamba/SSM models need equal TP",
    ("0.9.0", False, f"{_OLD}{_V}", "no Mamba-specific TP check"),
    ("0.18.0", True, f"{_OLD}{_V}", "Mamba/SSM models need equal TP: \"Mamba does not support heterogeneous TP yet\""),
    ("0.20.0", False, f"{_W20}{_V}", "Mamba/SSM models may use heterogeneous TP"),
))
# GQA block-length check when decode TP > K (the remote block must be tp_ratio local blocks).
GQA_SPLIT: Timeline[str | None] = history("tp-ratio[nixl]", Timeline(
    "NIXL GQA block length when decode TP exceeds the KV heads",
    ("0.9.0", None, f"{_OLD}.add_remote_agent", "no heterogeneous TP (see TP pairing)"),
    ("0.9.1", "D>K", f"{_OLD}.add_remote_agent (no replicated branch for GQA)",
     "non-MLA, decode TP > prefill TP and > K: \"Remote P worker KV layer cache must be of shape ...\""),
    ("0.9.2", "P<K<D", f"{_OLD}.add_remote_agent, {_V[1:]} from 0.11.1 (is_kv_replicated: P // K >= 1)",
     "non-MLA, prefill TP < K < decode TP: \"Remote P worker KV layer cache must be of shape ...\""),
    ("0.20.0", "P<=K<D", f"{_W20}{_V} (is_kv_replicated: P > K)",
     "non-MLA, prefill TP <= K < decode TP: \"Remote P worker KV layer cache must be of shape ...\""),
    ("0.24.0", None, f"{_W24}{_V} (block_len scaled by per-rank heads)", "decode TP > K pairs with any prefill TP"),
))
# P > D replication guard: (prefill TP >= K or > K, models exempt).
REPLICATION: Timeline[tuple[str, frozenset[str]] | None] = history("kv-heads[nixl-prefill-replicated]", Timeline(
    "NIXL guard against prefill TP > decode TP with replicated prefill KV",
    ("0.9.0", None, f"{_OLD}", "no guard: prefill TP > decode TP is a tp-ratio[nixl] error"),
    ("0.14.0", (">=", frozenset()), f"{_OLD}{_V} (assert not (tp_ratio < 0 and is_kv_replicated))",
     "prefill TP > decode TP and prefill TP >= K: bare AssertionError, MLA included"),
    ("0.20.0", (">", frozenset({"ssm"})), f"{_W20}{_V} (if not self._has_mamba)",
     "prefill TP > decode TP and prefill TP > K: bare AssertionError (Mamba/SSM exempt, MLA not)"),
    ("0.21.0", (">", frozenset({"mla", "ssm"})), f"{_W20}{_V} (if not self.use_mla and not self._has_mamba)",
     "prefill TP > decode TP and prefill TP > K: bare AssertionError (MLA and Mamba/SSM exempt)"),
))
# Block sizes (pull: decode local). Values: equal-unchecked, equal, decode-multiple, decode-multiple+split-equal.
BLOCKS: Timeline[str] = history("pd-mismatch[block-size]", Timeline(
    "NIXL block sizes",
    ("0.9.0", "equal-unchecked", f"{_OLD}._read_blocks (no check)", "must be equal; vLLM does not check (inferred)"),
    ("0.9.1", "equal", f"{_OLD}.add_remote_agent (assert self.block_size == remote_block_size)",
     "must be equal: \"Remote P worker with different block size is not supported\""),
    ("0.11.1", "decode-multiple", f"{_OLD}._nixl_handshake (\"nP > nD is not supported yet.\"), "
     "TpKVTopology.block_size_ratio", "decode block size must be a multiple of prefill's"),
    ("0.14.0", "decode-multiple+split-equal", f"TpKVTopology.block_size_ratio, {_OLD}{_V}",
     "decode block a multiple of prefill's; equal when prefill TP > decode TP (non-MLA)"),
))
HMA_EQUAL_BLOCKS: Timeline[bool] = history("pd-mismatch[block-size]", Timeline(
    "NIXL block sizes with the hybrid KV cache manager (Mamba/SSM models)",
    ("0.9.0", False, f"{_OLD}", "NIXL does not support HMA"),
    ("0.18.0", True, f"{_OLD}{_V} (\"HMA does not support different remote block size yet\")",
     "HMA on a hybrid model: block sizes must be equal"),
    ("0.27.0", False, f"{_W24}{_V}", "HMA allows different block sizes"),
))
HOST_BUFFER_EQUAL_BLOCKS: Timeline[bool] = history("pd-mismatch[block-size]", Timeline(
    "NIXL block sizes with a host buffer (kv_buffer_device: cpu on a GPU)",
    ("0.9.0", False, f"{_OLD}{_V}", "no host-buffer-specific block-size check"),
    ("0.27.0", True, f"{_W24}{_V} (assert not self.use_host_buffer)",
     "block sizes must be equal: \"Heterogeneous block sizes are not supported with host buffer\""),
))


is_push = nixl_pp.is_push


def checker(p: Side, d: Side) -> Side:
    """The side whose release runs the handshake checks: decode in pull mode, prefill in push mode."""
    return p if is_push(p) else d


def pair(p: Side, d: Side) -> Iterator[Problem]:
    """Every problem the pair has in its release (TP pairing, GQA split, replication, PP, block sizes, layout)."""
    yield from tp_ratio(p, d)
    yield from gqa_split(p, d)
    yield from replication(p, d)
    yield from nixl_pp.pipeline(p, d)
    yield from nixl_pp.push_region_tp(p, d, nixl_layout.layout(p))
    yield from block_size(p, d)
    yield from nixl_layout.problems(p, d, checker(p, d))


def tp_ratio(p: Side, d: Side) -> Iterator[Problem]:
    local = checker(p, d)
    rel, step = local.release, TP_PAIRING.step(local.release)
    how = step.value
    if how == "equal" and p.tp != d.tp:
        msg = (f"prefill TP {p.tp} and decode TP {d.tp} differ: NIXL in vLLM {rel} pairs TP rank r with rank r only "
               f"(vLLM {rel} does not check this: decode ranks without a partner hang, the others read the wrong "
               "KV heads)")
    elif how == "decode-multiple" and d.tp % p.tp:
        smaller = d.tp < p.tp
        if rel < R("0.9.2"):
            said = "\"Local TP size must be divisible by remote TP size.\""
        elif rel < R("0.11.1"):
            said = "ZeroDivisionError in _nixl_handshake" if smaller else f"\"{d.tp} is not divisible by {p.tp}\""
        else:
            said = f"\"Local tensor parallel size {d.tp} is not divisible by remote tensor parallel size {p.tp}.\""
        what = "is smaller than" if smaller else "is not a multiple of"
        msg = (f"decode TP {d.tp} {what} prefill TP {p.tp}: NIXL in vLLM {rel} only reads from a prefill TP "
               f"that divides decode TP ({said})")
    elif how == "either" and not tp_ratio_ok(p.tp, d.tp):
        big, small = ("decode", "prefill") if d.tp > p.tp else ("prefill", "decode")
        msg = (f"{big} TP {max(p.tp, d.tp)} is not a multiple of {small} TP {min(p.tp, d.tp)}: NIXL in vLLM {rel} "
               "pairs ranks by whole ratios")
    else:
        msg = ""
    if msg:
        yield Problem("tp-ratio[nixl]", "decode", ("tensor_parallel_size",), msg, step.source)
    if p.ssm and p.tp != d.tp and MAMBA_EQUAL_TP.at(rel):
        yield Problem("tp-ratio[nixl]", "decode", ("tensor_parallel_size",),
                      f"prefill TP {p.tp} and decode TP {d.tp} differ on a Mamba/SSM model: NIXL in vLLM {rel} "
                      "asserts \"Mamba does not support heterogeneous TP yet\"", MAMBA_EQUAL_TP.step(rel).source)


def gqa_split(p: Side, d: Side) -> Iterator[Problem]:
    """Decode TP > K with a prefill whose KV is split: the per-rank block lengths no longer scale by tp_ratio."""
    k, rel = p.kv_heads, d.release
    kind = GQA_SPLIT.at(rel)
    if kind is None or is_push(p) or k is None or p.mla is None or p.mla or d.tp <= p.tp or d.tp <= k:
        return
    if kind == "P<K<D" and p.tp >= k or kind == "P<=K<D" and p.tp > k:
        return
    yield Problem("tp-ratio[nixl]", "decode", ("tensor_parallel_size",),
                  f"decode TP {d.tp} > {k} KV heads with prefill TP {p.tp}: each decode rank holds 1 KV head, but "
                  f"NIXL in vLLM {rel} expects a prefill block to be exactly {d.tp // max(p.tp, 1)} decode blocks "
                  "(\"Remote P worker KV layer cache must be of shape ...\"; fixed in 0.24.0)",
                  GQA_SPLIT.step(rel).source)


def replication(p: Side, d: Side) -> Iterator[Problem]:
    k = p.kv_heads
    push = is_push(p)
    local = checker(p, d)
    rule = REPLICATION.at(local.release)
    if rule is None or k is None or p.mla is None:
        return
    cmp, exempt = rule
    if p.mla and "mla" in exempt or p.ssm and "ssm" in exempt:
        return
    writer, reader = (p, d) if not push else (d, p)
    replicated = writer.tp >= k if cmp == ">=" else writer.tp > k
    if writer.tp > reader.tp and replicated:
        than = f"{'>=' if cmp == '>=' else '>'} {k} KV heads"
        yield Problem(
            "kv-heads[nixl-prefill-replicated]", writer.role, ("tensor_parallel_size",),
            f"{writer.role} TP {writer.tp} > {reader.role} TP {reader.tp} and {than}: {writer.role}'s KV heads are "
            f"replicated and NIXL in vLLM {local.release} cannot split them for {reader.role} "
            "(bare AssertionError)", REPLICATION.step(local.release).source)


def block_size(p: Side, d: Side) -> Iterator[Problem]:
    bp, bd = p.block_size, d.block_size
    if bp is None or bd is None or bp == bd:
        return
    push = is_push(p)
    local = checker(p, d)
    rel, how = local.release, BLOCKS.at(local.release)
    source = BLOCKS.step(rel).source
    reader, remote = (bd, bp) if not push else (bp, bd)
    side = "decode" if not push else "prefill"
    split = (how == "decode-multiple+split-equal" and not p.mla and not (p.ssm and rel >= R("0.20.0"))
             and (p.tp > d.tp if not push else d.tp > p.tp))
    if how == "equal-unchecked":
        why = f"NIXL in vLLM {rel} copies blocks one to one (vLLM {rel} does not check this: the KV read is wrong)"
    elif how == "equal":
        why = f"NIXL in vLLM {rel} needs equal block sizes"
    elif split:
        why = (f"NIXL in vLLM {rel} needs equal block sizes when prefill TP > decode TP" if not push else
               f"NIXL push in vLLM {rel} needs equal block sizes when decode TP > prefill TP")
    elif reader % remote:
        why = f"NIXL in vLLM {rel} needs the {side} block size to be a multiple of the other side's"
    elif local.kv_buffer_device == "cpu" and HOST_BUFFER_EQUAL_BLOCKS.at(rel):
        why = f"NIXL in vLLM {rel} needs equal block sizes with kv_buffer_device cpu (a host buffer)"
        source = HOST_BUFFER_EQUAL_BLOCKS.step(rel).source
    elif p.ssm and not (p.disable_hma or d.disable_hma) and HMA_EQUAL_BLOCKS.at(rel):
        why = f"NIXL in vLLM {rel} needs equal block sizes with the hybrid KV cache manager"
        source = HMA_EQUAL_BLOCKS.step(rel).source
    else:
        return
    hint = f"use block size {bp} on decode" if bp < bd else f"use block size {bp} on both sides"
    if "host buffer" in why:
        hint += ", or leave kv_buffer_device at the GPU"
    yield Problem("pd-mismatch[block-size]", "decode", ("block_size",),
                  f"decode block size {bd} vs prefill block size {bp}: {why}", source, hint=hint, tp_fix=False)

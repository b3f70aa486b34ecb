"""NIXL and pipeline parallelism per release: which side may run PP > 1, and with which KV cache layouts.

Each engine's own release decides (NixlBaseConnectorWorker.__init__ runs on
every worker, v1/nixl/base_worker.py 0.24.0+). vLLM raises NotImplementedError
for some shapes; the others pdlint infers from the handshake code (the
messages say "does not check this"). Hints offer only changes that pass the
same checks: pipeline_parallel_size 1, NixlPushConnector, or HMA off.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ...history import history
from ...model import pp_stages
from ...releases import Release, Timeline
from ..pair import Problem, Side
from ..registry import registered

_OLD = "v1/nixl_connector.py NixlConnectorWorker"
_W24 = "v1/nixl/base_worker.py NixlBaseConnectorWorker"
PUSH = "NixlPushConnector"

# Pipeline parallelism: which sides may run PP > 1.
PP: Timeline[str] = history("tp-ratio[nixl]", Timeline(
    "NIXL pipeline parallelism",
    ("0.9.0", "none", (f"{_OLD}._nixl_handshake; v1/engine/core.py EngineCore.__init__ (handshake metadata keyed "
                       "by TP rank only, the stages' merged with content.update)"),
     "PP > 1 is unsupported on either side; vLLM does not check it (inferred)"),
    ("0.23.0", "rejected", ("kv_connector/v1/base.py KVConnectorBase_V1.set_xfer_handshake_metadata_pp_aware "
                            "(called by v1/engine/core.py EngineCore.__init__; NIXL does not override it)"),
     ("PP > 1 on either side: ValueError \"NixlConnector received pp_rank > 0 handshake metadata but does not "
      "support PP-disaggregated KV transfer.\" at engine start")),
    ("0.26.0", "push-prefill",
     (f"{_W24}.__init__ (\"... consumer (decode) does not support pipeline_parallel_size > 1.\"); "
      f"{_W24}._validate_remote_agent_handshake (\"Number of KV layers must match between prefill and decode\")"),
     ("decode PP > 1 fails (kv_consumer: NotImplementedError); prefill PP > 1 only with NixlPushConnector: the "
      "pulling decode checks each prefill stage's layers against all of its own (0.29.0+ it asks every stage)")),
))
# The handshake's layer-count assert (pull: the decode checks the prefill's registered regions against its own).
LAYERS: Timeline[str | None] = history("tp-ratio[nixl]", Timeline(
    "NIXL handshake layer count",
    ("0.9.0", None, f"{_OLD}.add_remote_agent (no layer-count check)", "no check"),
    ("0.11.1", "AssertionError", (f"{_OLD}._validate_remote_agent_handshake (0.20.0+ v1/nixl/worker.py: `assert "
                                  "len(nixl_agent_meta.kv_caches_base_addr) == len(self.block_len_per_layer)`)"),
     ("a decode stage whose KV layers (pp_stages.py: get_pp_indices, layers holding KV) differ from the checked "
      "prefill stage's fails the handshake (bare AssertionError)")),
))

# PP > 1 with the hybrid KV cache manager required: `_is_hma_required` is HMA on (the resolved
# scheduler_config.disable_hybrid_kv_cache_manager: hma.enabled) and any layer spec not a FullAttentionSpec
# (SlidingWindowSpec, MambaSpec, ...), so a sliding-window model such as gpt-oss or Gemma 3 counts.
PP_HMA: Timeline[str | None] = history("tp-ratio[nixl]", Timeline(
    "NIXL pipeline parallelism with HMA on a model with non-full-attention layers",
    ("0.9.0", None, f"{_OLD}", "(PP unsupported)"),
    ("0.26.0", "any", f"{_W24}.__init__ (`if self.pp_size > 1 and self._is_hma_required`)",
     "PP > 1, HMA on, sliding-window or Mamba/SSM layers: NotImplementedError, pull and push alike"),
    ("0.31.0", "pull", f"{_W24}.__init__ (`self._is_hma_required and not self._supports_pp_hma`; "
     "v1/nixl/push_worker.py NixlPushConnectorWorker._supports_pp_hma = True)",
     "PP > 1, HMA on, sliding-window or Mamba/SSM layers: NotImplementedError in pull mode; push routes by layer"),
))
PP_SSM: Timeline[str | None] = history("tp-ratio[nixl]", Timeline(
    "NIXL pipeline parallelism with Mamba/SSM models",
    ("0.9.0", None, f"{_OLD}", "(PP unsupported; 0.26.0 - 0.30.0: the HMA step above)"),
    ("0.31.0", "always", f"{_W24}.__init__ (`if self._has_mamba`: \"... with Mamba/SSM hybrid KV cache layouts yet.\")",
     "PP > 1 on a Mamba/SSM model: NotImplementedError, push included"),
))

# A push prefill with PP > 1 routes KV by layer region (`_transfer_layer_region_indices`, set by _set_region_layers
# when _requires_layer_name_routing: pp_size > 1 and _tracks_region_layers, i.e. _supports_pp_hma (the push worker)
# and (_is_hma_required or _has_packed_cache) and not _has_mamba); add_remote_agent on the prefill then refuses a
# larger decode TP (remote_tp_size > transfer_topo.tp_size) unless MLA.
PUSH_REGION_TP: Timeline[bool] = history("tp-ratio[nixl]", Timeline(
    "NIXL push by layer region (PP > 1 prefill) with decode TP > prefill TP",
    ("0.9.0", False, f"{_OLD}", "no layer-region routing"),
    ("0.31.0", True, (f"{_W24}.add_remote_agent (`if self._transfer_layer_region_indices:` ... `remote_tp_size > "
                      "transfer_topo.tp_size and not self.use_mla`), _set_region_layers, _tracks_region_layers; "
                      "v1/kv_cache_layout.py KVCacheLayout.is_block_outermost"),
     ("NixlPushConnector, prefill PP > 1, HMA on with sliding-window layers or a block-outermost VLLM_KV_CACHE_LAYOUT "
      "(BLHNC, BLNHC, BHLNC), not MLA, decode TP > prefill TP: NotImplementedError at the first push")),
))
_PACKED = frozenset(("BLHNC", "BLNHC", "BHLNC"))  # KVCacheLayout members whose outermost dimension is B


def by_region(p: Side, packed: bool) -> str | None:
    """Why a push prefill routes KV by layer region in its release (None: it routes by region index)."""
    if not PUSH_REGION_TP.at(p.release) or not is_push(p) or p.pp <= 1 or p.ssm is not False:
        return None  # Mamba/SSM under PP > 1 is refused earlier (PP_SSM); unknown SSM: no verdict
    if p.hma_on and p.sliding_window:
        return f"the hybrid KV cache manager on a model with sliding-window ({p.sliding_window}) layers"
    if packed:
        return f"the block-outermost VLLM_KV_CACHE_LAYOUT {p.getenv('VLLM_KV_CACHE_LAYOUT')}"
    return None


def push_region_tp(p: Side, d: Side, layout: str | None) -> Iterator[Problem]:
    """Decode TP above prefill TP where the push prefill routes by layer region (layout: the prefill's
    VLLM_KV_CACHE_LAYOUT as nixl_layout.layout reads it, None when the backend chooses it)."""
    why = by_region(p, layout in _PACKED)
    if why is None or p.mla is not False or d.tp <= p.tp:
        return
    message = (f"decode TP {d.tp} is larger than prefill TP {p.tp} with {PUSH}, prefill pipeline_parallel_size "
               f"{p.pp} and {why}: the prefill pushes KV by layer region, and NIXL in vLLM {p.release} raises "
               "NotImplementedError at its first push (\"Attention-HMA push does not support decode TP greater than "
               "prefill TP yet\")")
    yield Problem("tp-ratio[nixl]", "decode", ("tensor_parallel_size",), message,
                  PUSH_REGION_TP.step(p.release).source)


def is_push(side: Side) -> bool:
    return side.connector == PUSH


def _layers(side: Side) -> str:
    if side.ssm:
        return "Mamba/SSM"
    return f"sliding-window ({side.sliding_window})" if side.sliding_window else "chunked local attention"


def issue(side: Side, push: bool, other: Side | None = None) -> tuple[str, str, bool] | None:
    """(message, vLLM source, vLLM raises) for side running PP > 1 in its release (other: the other engine of the
    pair, whose stages the handshake compares); None: it works."""
    rel, pp, role = side.release, side.pp, side.role
    if pp <= 1:
        return None
    hma, ssm = PP_HMA.at(rel), PP_SSM.at(rel)
    if side.hma_on and side.non_full_attention and (hma == "any" or hma == "pull" and not push):
        said = ("\"NixlPushConnector does not support pipeline_parallel_size > 1 with hybrid KV cache layouts "
                "(HMA) yet.\"" if hma == "any" else "\"NixlConnector (pull) does not support pipeline_parallel_size "
                "> 1 with hybrid KV cache layouts (HMA); use NixlPushConnector for PP + HMA.\"")
        return (f"{role} pipeline_parallel_size {pp} with the hybrid KV cache manager on a model with "
                f"{_layers(side)} layers: NIXL in vLLM {rel} raises NotImplementedError ({said})",
                PP_HMA.step(rel).source, True)
    if ssm == "always" and side.ssm:
        return (f"{role} pipeline_parallel_size {pp} on a Mamba/SSM model: NIXL in vLLM {rel} raises "
                "NotImplementedError (\"... does not support pipeline_parallel_size > 1 with Mamba/SSM hybrid KV "
                "cache layouts yet.\")", PP_SSM.step(rel).source, True)
    mode, source = PP.at(rel), PP.step(rel).source
    if mode == "rejected":
        message = (f"{role} pipeline_parallel_size {pp}: NIXL in vLLM {rel} raises ValueError at engine start "
                   "(\"NixlConnector received pp_rank > 0 handshake metadata but does not support PP-disaggregated KV "
                   "transfer.\")")
        return message, source, True
    if mode == "none":
        return _unsupported(side, other), source, False
    if role == "decode" and side.kv_role == "kv_consumer":
        return (f"decode pipeline_parallel_size {pp}: NIXL in vLLM {rel} raises NotImplementedError "
                "(\"NixlPushConnector consumer (decode) does not support pipeline_parallel_size > 1.\")", source, True)
    if role == "decode" and not push and not side.ssm and _stage_check(side, other):
        return (f"decode pipeline_parallel_size {pp}: NIXL pull in vLLM {rel} fails the first handshake: each decode "
                f"stage checks {_which(rel)} against its own{_said(_stage_check(side, other))} (AssertionError "
                "\"Number of KV layers must match between prefill and decode\")",
                f"{source}; {pp_stages.CHECKED.step(rel).source}", True)
    if role == "decode":
        return (f"decode pipeline_parallel_size {pp}: NIXL in vLLM {rel} does not support decode-side PP "
                f"(vLLM {rel} only rejects it for kv_role kv_consumer: completions are counted per consumer rank, "
                "so requests never finish)", source, False)
    if push or side.ssm:  # push slices the decode's regions; Mamba layers skip the assert (`elif not self._has_mamba`)
        return None
    found = _stage_check(side, other)
    if found == ():
        return None  # every checked stage registers as many KV layers as the decode (the others hold none)
    message = (f"prefill pipeline_parallel_size {pp}: NIXL pull in vLLM {rel} fails the first handshake: the "
               f"decode checks {_which(rel)} against all of its own{_said(found)} (AssertionError \"Number of KV "
               "layers must match between prefill and decode\"); NixlPushConnector slices the decode's layers")
    return message, f"{source}; {pp_stages.CHECKED.step(rel).source}", True


def _stage_check(side: Side, other: Side | None) -> tuple[int, ...] | None:
    """The handshake's layer-count verdict from each stage's KV layers: () all equal, (decode stage, layers,
    prefill stage, layers) of a failing pair, None unknown (no layer kinds, a Mamba/SSM or HMA-pooled mix)."""
    if other is None:
        return None
    p, d = (side, other) if side.role == "prefill" else (other, side)
    counts = [pp_stages.kv_counts(s.layer_kinds, s.pp, dict(s.env), s.hma_on) for s in (p, d)]
    if counts[0] is None or counts[1] is None:
        return None
    found = pp_stages.mismatch(counts[0], counts[1], pp_stages.checked(p.release, p.pp))
    return () if found is None else found


def _said(found: tuple[int, ...] | None) -> str:
    if not found:
        return ""
    d_rank, d_count, p_rank, p_count = found
    return f" (decode stage {d_rank} holds {d_count} KV layers, prefill stage {p_rank} {p_count})"


def _which(rel: Release) -> str:
    return {"last": "the layers of the prefill's last stage, the only metadata it serves,",
            "first": "the layers of the prefill's stage 0, the only stage it asks,"}.get(
        pp_stages.CHECKED.at(rel), "each prefill stage's layers")


def _unsupported(side: Side, other: Side | None) -> str:
    rel, role, pp = side.release, side.role, side.pp
    found = _stage_check(side, other) if LAYERS.at(rel) else ()
    if found or found is None and other is not None and other.pp != pp and LAYERS.at(rel):
        return (f"{role} pipeline_parallel_size {pp} with {other.pp if other else 1} on the other side: NIXL in "
                f"vLLM {rel} has no pipeline-parallel support (handshake metadata is keyed by TP rank only, so the "
                f"decode checks {_which(rel)}{_said(found)}: the handshake's layer-count assert fails, AssertionError)")
    return (f"{role} pipeline_parallel_size {pp}: NIXL in vLLM {rel} has no pipeline-parallel support "
            f"(vLLM {rel} does not check this: the handshake is keyed by TP rank only, so stages collide and KV "
            "of the other stages is never transferred)")


def fixes(side: Side, push: bool, other: Side | None = None) -> list[str]:
    """The changes that let side keep PP > 1 in its release (each passes issue()), besides PP 1."""
    found = []
    if not push and registered(PUSH, side.release) and \
            issue(dataclasses.replace(side, connector=PUSH), True, other) is None:
        found.append(f"kv_connector {PUSH} on both sides")
    if side.hma_on and not side.ssm:  # Mamba/SSM layers need HMA (base_worker.py: assert self._is_hma_required)
        off = dataclasses.replace(side, hma=False, disable_hma=True)
        other = dataclasses.replace(other, hma=False, disable_hma=True) if other is not None else None
        if issue(off, push, other) is None:
            found.append("vllm_disable_hybrid_kv_cache_manager: true on both sides (NIXL hashes it)")
        elif not push and registered(PUSH, side.release) and \
                issue(dataclasses.replace(off, connector=PUSH), True, other) is None:
            found.append(f"kv_connector {PUSH} with vllm_disable_hybrid_kv_cache_manager: true on both sides")
    return found


def pipeline(p: Side, d: Side) -> Iterator[Problem]:
    """A problem per side whose PP > 1 its release cannot run (pull: decode reads; push: prefill writes)."""
    push = is_push(p)
    for side, other in ((p, d), (d, p)):
        found = issue(side, push, other)
        if found is None:
            continue
        message, source, _unused = found
        hint = "use pipeline_parallel_size 1" + "".join(f", or {fix}" for fix in fixes(side, push, other))
        yield Problem("tp-ratio[nixl]", side.role, ("pipeline_parallel_size",), message, source, hint=hint,
                      tp_fix=False)

"""Mooncake (V1 MooncakeConnector, 0.13.0+): what each release does with a P/D pair.

Prefill sends (`send_kv_to_decode`), so in vLLM's Mooncake code "local" is
prefill and "remote" decode on the sender, and the reverse on the receiver.
0.8.5 - 0.10.0 registered a V0 MooncakeConnector (connector[unknown] reports it).
"""
from __future__ import annotations

from collections.abc import Iterator

from ..history import history
from ..parallel import tp_ratio_ok
from ..releases import R, Release, Timeline
from .pair import Problem, Side

_OLD = "kv_connector/v1/mooncake_connector.py"  # 0.13.0 - 0.15.x
_C = "kv_connector/v1/mooncake/mooncake_connector.py"  # 0.16.0+
BOOTSTRAP_PORT = 8998  # envs.VLLM_MOONCAKE_BOOTSTRAP_PORT default (0.13.0+)

TP: Timeline[str] = history("tp-ratio[mooncake]", Timeline(
    "Mooncake prefill TP != decode TP",
    ("0.13.0", "unchecked", f"{_OLD} MooncakeConnectorWorker.group_kv_pull (remote_port + self.tp_rank)",
     ("no check: decode rank r pulls from prefill rank r's port, so unequal TP hangs or moves the wrong KV "
      "(pdlint: error)")),
    ("0.16.0", "unsupported", (f"{_C} MooncakeConnectorWorker.receive_kv / resolve_need_send; "
     "kv_connector/utils.py TpKVTopology.tp_ratio"),
     ("NotImplementedError \"Mooncake: Heterogeneous TP is not supported yet.\" (a TP pair that is not a whole "
     "ratio fails TpKVTopology.tp_ratio's divisibility assert first)")),
    ("0.19.0", "ratio", f"{_C} _get_tp_ratio",
     ("either direction when the larger TP is a multiple of the smaller (\"Local/Remote tensor parallel size X is "
      "not divisible by ...\")")),
))
PP: Timeline[str] = history("tp-ratio[mooncake]", Timeline(
    "Mooncake pipeline parallelism",
    ("0.13.0", "unchecked", (f"{_OLD} MooncakeConnectorWorker.register_kv_caches (sender at side_channel_port + "
     "tp_rank, whatever the PP stage)"), ("no check: every PP stage of a TP rank binds the same sender port and decode "
     "pulls from one of them (pdlint: error)")),
    ("0.16.0", "rejected", f"{_C} MooncakeConnectorWorker.__init__",
     "ValueError \"Mooncake Transfer Engine does not support pipeline parallelism yet.\""),
    ("0.24.0", "aligned", (f"{_C} _align_transfer_regions on the prefill (each of its stage's layers must be in "
                           "the decode stage that asks; a decode stage asks its own PP rank when the PP sizes are "
                           "equal, else every prefill stage)"),
     ("decode PP > 1 works only with an equal prefill PP: otherwise every transfer fails (\"Mooncake producer "
      "registered layer has no matching consumer occurrence\"); vLLM does not check it at start")),
    ("0.30.0", "partial", f"{_C} _align_transfer_regions(allow_partial_layers=...) (0.33.0: remote PP != local PP)",
     "any PP on either side: a stage sends only the layers the asking decode stage holds"),
))
# send_kv_to_decode -> _validate_asymmetric_region_lengths: the KV region of each rank must be the TP ratio times
# the other's. Before 0.30.0 a GQA decode TP above K leaves decode's per-rank region too small when prefill's KV is
# not replicated (the matrix's section 8 correction); 0.30.0 clamps both TPs to K.
REGIONS: Timeline[str] = history("tp-ratio[mooncake]", Timeline(
    "Mooncake KV region lengths with heterogeneous TP",
    ("0.13.0", "none", f"{_OLD} _send_blocks", "no region check (unequal TP is reported above)"),
    ("0.19.0", "replicated-ge", (f"{_C} _validate_asymmetric_region_lengths; kv_connector/utils.py "
     "TpKVTopology.replicates_kv_cache (tp // K >= 1)"),
     ("a GQA pair whose decode TP exceeds K while prefill TP < K and < decode TP fails every transfer "
     "(\"Mooncake source KV region length does not match the consumer TP ratio\")")),
    ("0.20.0", "replicated-gt", (f"{_C} _validate_asymmetric_region_lengths; kv_connector/utils.py "
     "TransferTopology.local_replicates_kv_cache (tp > K)"),
     "the same, now also when prefill TP == K (prefill's KV counts as replicated only when TP > K)"),
    ("0.30.0", "clamped", f"{_C} _validate_asymmetric_region_lengths (min(tp, K))",
     "both TPs are clamped to K first: the GQA pairs above work"),
))
BLOCKS: Timeline[str] = history("pd-mismatch[block-size]", Timeline(
    "Mooncake block sizes",
    ("0.13.0", "unchecked", f"{_OLD} _send_blocks (one block_len for both sides)",
     "must be equal; no check: prefill writes at its own block offsets (pdlint: error)"),
    ("0.19.0", "region", f"{_C} _validate_asymmetric_region_lengths",
     "must be equal: \"Mooncake KV region length mismatch\" fails every transfer"),
))


def per_rank_heads(tp: int, k: int) -> int:
    """KV heads each TP rank holds (model_executor/layers/linear.py QKVParallelLinear: 1 when TP >= K)."""
    return 1 if tp >= k else k // tp


def tp_ratio(local: int, remote: int) -> int:
    """_get_tp_ratio (0.19.0+): > 0 local/remote, < 0 -(remote/local); ValueError when not whole."""
    if local >= remote:
        if local % remote:
            raise ValueError(f"Local tensor parallel size {local} is not divisible by remote tensor parallel "
                             f"size {remote}.")
        return local // remote
    if remote % local:
        raise ValueError(f"Remote tensor parallel size {remote} is not divisible by local tensor parallel "
                         f"size {local}.")
    return -(remote // local)


def region_error(p: Side, d: Side, release: Release) -> str | None:
    """The error send_kv_to_decode answers on prefill (local) for decode (remote), from region lengths."""
    mode = REGIONS.at(release)
    if mode == "none" or p.mla is None or (p.kv_heads is None and not p.mla):
        return None
    k = p.kv_heads or 1  # MLA: one latent head, replicated on every rank
    block_p, block_d = p.block_size or 16, d.block_size or 16
    heads_p = 1 if p.mla else per_rank_heads(p.tp, k)
    heads_d = 1 if d.mla else per_rank_heads(d.tp, k)
    local, remote = block_p * heads_p, block_d * heads_d
    lt, rt = p.tp, d.tp
    if mode == "clamped" and not p.mla and not p.ssm:
        lt, rt = min(p.tp, k), min(d.tp, k)
    elif p.mla or (p.tp // k >= 1 if mode == "replicated-ge" else p.tp > k):
        return None  # producer_cache_replicated: no length check
    try:
        ratio = tp_ratio(lt, rt)
    except ValueError as e:
        return str(e)
    if ratio == 1 and local != remote:
        return "Mooncake KV region length mismatch for homogeneous TP"
    if ratio > 1 and remote != local * ratio:
        return "Mooncake destination KV region length does not match the producer TP ratio"
    if ratio < 0 and local != remote * -ratio:
        return "Mooncake source KV region length does not match the consumer TP ratio"
    return None


def pair(p: Side, d: Side) -> Iterator[Problem]:
    """Every problem of a Mooncake pair in its release (prefill sends, decode pulls: both sides' code runs)."""
    yield from _tp(p, d)
    yield from _pp(p, d)
    yield from _blocks_and_regions(p, d)


def _tp(p: Side, d: Side) -> Iterator[Problem]:
    release = d.release  # decode's receive_kv raises first in 0.16.0+ and asks prefill in 0.19.0+
    mode, step = TP.at(release), TP.step(release)
    if p.tp == d.tp:
        return
    whole = tp_ratio_ok(p.tp, d.tp)
    big, small = ("decode", "prefill") if d.tp > p.tp else ("prefill", "decode")
    numbers = f"{big} TP {max(p.tp, d.tp)} and {small} TP {min(p.tp, d.tp)}"
    if mode == "unchecked":
        message = (f"{numbers}: Mooncake in vLLM {release} pairs decode rank r with prefill rank r only, so unequal "
                   f"TP hangs or moves the wrong KV (vLLM {release} does not check this)")
    elif mode == "unsupported":
        why = "NotImplementedError \"Heterogeneous TP is not supported yet\"" if whole else \
            "the TP ratio assert (\"... tensor parallel size ... is not divisible by ...\")"
        message = f"{numbers}: Mooncake in vLLM {release} needs equal TP ({why})"
    elif not whole:
        message = (f"{big} TP {max(p.tp, d.tp)} is not a multiple of {small} TP {min(p.tp, d.tp)}: Mooncake in vLLM "
                   f"{release} pairs ranks by whole ratios")
    else:
        return
    yield Problem("tp-ratio[mooncake]", "decode", ("tensor_parallel_size",), message, step.source)


def _pp(p: Side, d: Side) -> Iterator[Problem]:
    aligned = PP.at(p.release)  # the prefill aligns regions when it serves a decode stage's request
    if aligned == "aligned" and PP.at(d.release) in ("aligned", "partial") and d.pp > 1 and d.pp != p.pp:
        yield Problem("tp-ratio[mooncake]", "decode", ("pipeline_parallel_size",),
                      (f"decode PP {d.pp} with prefill PP {p.pp}: in vLLM {p.release} the prefill refuses every "
                       "transfer, since a decode stage lacks layers the prefill stage holds (\"Mooncake producer "
                       f"registered layer has no matching consumer occurrence\"; vLLM {p.release} does not check "
                       "this at start)"), PP.step(p.release).source,
                      hint=f"use decode pipeline_parallel_size 1 or {p.pp}, or vLLM 0.30.0+ on both sides",
                      tp_fix=False)
    for side in (p, d):
        mode, step = PP.at(side.release), PP.step(side.release)
        if side.pp == 1 or mode in ("aligned", "partial"):
            continue
        if mode == "unchecked":
            message = (f"{side.role} PP {side.pp}: Mooncake in vLLM {side.release} has no pipeline-parallel support "
                       f"(every stage binds the same sender port; vLLM {side.release} does not check this)")
        else:
            message = (f"{side.role} PP {side.pp}: Mooncake in vLLM {side.release} raises \"Mooncake Transfer Engine "
                       "does not support pipeline parallelism yet.\"")
        yield Problem("tp-ratio[mooncake]", side.role, ("pipeline_parallel_size",), message, step.source,
                      hint="use pipeline_parallel_size 1", tp_fix=False)


def _blocks_and_regions(p: Side, d: Side) -> Iterator[Problem]:
    release = p.release  # prefill's send_kv_to_decode validates the regions
    if p.block_size is not None and d.block_size is not None and p.block_size != d.block_size:
        silent = BLOCKS.at(release) == "unchecked"
        tail = f" (vLLM {release} does not check this: the KV lands at wrong offsets)" if silent else \
            f" (vLLM {release}: \"Mooncake KV region length mismatch\", every transfer fails)"
        yield Problem("pd-mismatch[block-size]", "decode", ("block_size",),
                      f"decode block size {d.block_size} vs prefill block size {p.block_size}: MooncakeConnector "
                      "pairs blocks one to one, so block sizes must be equal" + tail, BLOCKS.step(release).source,
                      hint=f"use block size {p.block_size} on decode", tp_fix=False)
        return
    if p.tp == d.tp or TP.at(d.release) != "ratio" or not tp_ratio_ok(p.tp, d.tp):
        return  # unequal-TP failures of older releases and non-whole ratios are _tp's
    error = region_error(p, d, release)
    if error:
        yield Problem("tp-ratio[mooncake]", "decode", ("tensor_parallel_size",),
                      f"prefill TP {p.tp} and decode TP {d.tp} with {p.kv_heads} KV heads: Mooncake in vLLM {release} "
                      f"answers every transfer with \"{error}\" (decode TP > KV heads leaves one head per decode rank "
                      "while prefill ranks hold several; vLLM does not check this at startup: decode never finishes "
                      "receiving)", REGIONS.step(release).source)


def launches_bootstrap(release: Release) -> bool:
    """0.16.0+: one HTTP bootstrap server per prefill engine instead of a sender port per worker."""
    return release >= R("0.16.0")


def reads_bootstrap_address(release: Release) -> bool:
    """kv_connector_extra_config.bootstrap_server_address (0.32.0+)."""
    return release >= R("0.32.0")


def worker_ports(base: int, tp: int, dp_indices: range) -> list[tuple[int, int, int]]:
    """0.13.0 - 0.15.x get_mooncake_side_channel_port + tp_rank: (port, dp index, tp rank) per sender worker."""
    return [(base + dp * tp + rank, dp, rank) for dp in dp_indices for rank in range(tp)]

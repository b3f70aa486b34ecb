"""Will the engine fit: its weights and one max_model_len sequence of KV cache on one GPU, as the release sizes them.

Each worker (v1/worker/gpu_worker.py) requests `total_memory x gpu_memory_utilization` (init_device; total from
torch.cuda.mem_get_info, MemorySnapshot), loads its share of the weights, profiles, and gives the KV cache what is
left (determine_available_memory), or exactly --kv-cache-memory-bytes (0.10.2 -: no profiling). The engine then
runs check_enough_kv_cache_memory on each worker's own layers (memory_text.py). pdlint counts the weights and no
activation, CUDA graph or NCCL memory: its available figure is an upper bound, so a sequence that does not fit in it
does not fit in vLLM's either; MARGIN says how close is too close.

A layer's KV (v1/kv_cache_interface.py): page_size_bytes = coef x block_size x num_kv_heads x head_size x dtype
bytes (coef 2, K and V; 1 for MLA's latent, one head), max_memory_usage_bytes = cdiv(tokens, block_size) x page,
tokens max_model_len for full attention, min(window - 1 + max_num_batched_tokens, max_model_len) (+1 block) for a
sliding window and min(chunk + max_num_batched_tokens, max_model_len) for chunked local attention when the hybrid
manager keeps them apart (with it off they are full attention). KV heads per rank: max(1, total // TP)
(ModelConfig.get_num_kv_heads). Mamba and linear-attention state is not modelled (the figures stay unknown).
Pure: no I/O.
"""
from __future__ import annotations

import dataclasses

from ...topology import gpus
from ...topology.types import Instance, ModelFacts, per_body
from ..arguments.types import human_readable_int
from ..connectors.registry import release as registry_release
from ..releases import Release
from . import chunked, hma, memory_text
from .layers import stages

GIB = 1 << 30
# What vLLM's profile takes besides weights before the KV cache (activation peak of one batch, CUDA context, NCCL
# buffers, CUDA graphs): a few GiB on a data-center GPU; a sequence that fits with less left often fails to start.
MARGIN = 2 * GIB
DEFAULT_BLOCK = 16  # CacheConfig.block_size unset: the CUDA platform's 16 (an MLA backend's 64 rounds alike)
# max_num_batched_tokens when unset: the smallest default of any release (2048, the API server's); a smaller
# batch only shrinks a sliding layer's KV, so the need stays a lower bound
DEFAULT_BATCH = 2048
_DTYPE = {"auto": 2, "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4}
_KV_DTYPE = {"bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1}


@dataclasses.dataclass(frozen=True)
class Fit:
    """One worker's memory, in bytes; None where pdlint cannot tell."""

    release: Release
    gpu: int | None  # the GPU's memory
    gpu_source: str
    utilization: float
    budget: int | None  # gpu x utilization, or --kv-cache-memory-bytes' share plus the weights
    kv_set: int | None  # --kv-cache-memory-bytes
    weights: int | None  # per rank
    weight_source: str
    per_token: int | None  # KV bytes per token on the worker with the most (full-attention equivalent)
    max_model_len: int | None
    len_source: str
    layers: tuple[tuple[str, int], ...] = ()  # (kind, page bytes) of the worst stage's KV layers
    block: int = DEFAULT_BLOCK
    batch: int = DEFAULT_BATCH
    window: int | None = None
    chunk: int | None = None

    @property
    def available(self) -> int | None:
        """What the KV cache gets: --kv-cache-memory-bytes, else the budget less the weights; from 0.29.0 less
        the null block too (what the check compares)."""
        if self.kv_set is not None:
            room = self.kv_set
        elif self.budget is None or self.weights is None:
            return None
        else:
            room = self.budget - self.weights
        if memory_text.NULL_BLOCK.at(self.release) and self.layers:
            room -= self.pool_block()
        return room

    def pool_block(self) -> int:
        """One block of the largest KV cache group (_get_kv_cache_bytes_per_block). get_kv_cache_groups puts
        layers of one kind in one group; kinds kept apart split into groups of the smallest kind's layer count (the
        largest's when it is under 1.5 times that), each holding one page per layer."""
        counts: dict[str, int] = {}
        for kind, _page in self.layers:
            counts[kind] = counts.get(kind, 0) + 1
        if len(counts) <= 1:
            return sum(page for _kind, page in self.layers)
        low, high = min(counts.values()), max(counts.values())
        return (high if high < low * 1.5 else low) * max(page for _kind, page in self.layers)

    def needed(self, length: int) -> int:
        """Sum of every KV layer's max_memory_usage_bytes for max_model_len = length."""
        total = 0
        for kind, page in self.layers:
            tokens = length
            if kind == "sliding" and self.window:
                tokens = min(self.window - 1 + self.batch, length)
            elif kind == "chunked" and self.chunk:
                tokens = min(self.chunk + self.batch, length)
            total += (-(-tokens // self.block) + (1 if kind == "sliding" else 0)) * page
        return total

    def longest(self, available: int, upper: int) -> int:
        """estimate_max_model_len: the longest length in 1..upper whose need fits available (0: none)."""
        if self.needed(1) > available:
            return 0
        low, high, best = 1, upper, 1
        while low <= high:
            mid = (low + high) // 2
            if self.needed(mid) <= available:
                best, low = mid, mid + 1
            else:
                high = mid - 1
        return best

    def capacity(self) -> int | None:
        """KV capacity in tokens of one long request: whole blocks of its full-attention layers in what the KV cache
        gets (sliding and chunked layers kept apart hold only their window, so they are not counted)."""
        room = self.available
        per_block = sum(page for kind, page in self.layers if kind == "full") or \
            sum(page for _kind, page in self.layers)
        if room is None or not per_block:
            return None
        return max(room, 0) // per_block * self.block


def gpu_memory(inst: Instance) -> tuple[int | None, str]:
    """The GPU's memory: vllm_host_gpu_memory_gib, else the table's row for vllm_host_gpu_type."""
    if inst.gpu_memory_gib is not None:
        return int(inst.gpu_memory_gib * GIB), "vllm_host_gpu_memory_gib"
    found = gpus.find(inst.gpu_type) if inst.gpu_type else None
    if found is None:
        return None, ""
    return found.memory, f"{found.name} ({found.kind}: {found.source})"


def _int(inst: Instance, name: str, release: Release) -> int | None:
    value = inst.sizing.get(name)
    if isinstance(value, bool) or value is None or not inst.knows(name):
        return None
    if isinstance(value, int):
        return value
    try:
        return human_readable_int(str(value), release)
    except ValueError:
        return None  # the schema rule reports it


def _utilization(inst: Instance, release: Release) -> tuple[float, str]:
    value = inst.sizing.get("gpu_memory_utilization")
    if inst.knows("gpu_memory_utilization") and not isinstance(value, bool) and value is not None:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = 0.0
        if 0 < number <= 1:
            return number, "vllm_gpu_memory_utilization"
    return memory_text.UTILIZATION.at(release), f"vLLM {release}'s default"


def _offload(inst: Instance) -> int | None:
    """--cpu-offload-gb in bytes (0 when unset); None when it cannot be read."""
    value = inst.sizing.get("cpu_offload_gb")
    if value is None:
        return 0 if inst.knows("cpu_offload_gb") else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None  # the schema rule reports it
    return int(number * GIB) if number >= 0 and not isinstance(value, bool) else None


def _kv_bytes(inst: Instance) -> int | None:
    model = _DTYPE.get(inst.dtype)
    if inst.kv_cache_dtype == "auto":
        return model
    return _KV_DTYPE.get(inst.kv_cache_dtype)


def _layers(inst: Instance, release: Release) -> tuple[tuple[str, int], ...] | None:
    """(kind, page bytes) of each KV layer of the PP stage that needs the most; None when unknown."""
    facts = inst.facts
    kinds = facts.layer_kinds
    if kinds is None and facts.layers and facts.ssm is False and facts.sliding_window is None:
        kinds = ("full",) * facts.layers
    size, dtype = facts.head_size, _kv_bytes(inst)
    if kinds is None or not size or dtype is None or facts.kv_heads is None or facts.mla is None:
        return None
    if {"mamba", "linear"} & set(kinds):
        return None
    held = stages(chunked.kinds_at(tuple(kinds), release), inst.pp, inst.env)
    if not held:
        return None
    apart = hma.known(inst) and hma.enabled(inst)  # with the hybrid manager off, every layer is full attention
    heads = 1 if facts.mla else max(1, facts.kv_heads // inst.tp)
    page = (1 if facts.mla else 2) * (inst.block_size or DEFAULT_BLOCK) * heads * size * dtype
    worst = max(held, key=lambda stage: sum(kind != "none" for kind in stage))
    return tuple((kind if apart else "full", page) for kind in worst if kind != "none")


def kv_bytes_per_token(facts: ModelFacts, tp: int = 1, dtype: int = 2) -> int | None:
    """The whole model's KV bytes for one token on one rank (every attention layer as full attention); None for
    Mamba or linear-attention layers, or unknown facts."""
    kinds = facts.layer_kinds or (("full",) * facts.layers if facts.layers and facts.ssm is False else None)
    if kinds is None or not facts.head_size or facts.kv_heads is None or facts.mla is None \
            or {"mamba", "linear"} & set(kinds):
        return None
    heads = 1 if facts.mla else max(1, facts.kv_heads // tp)
    return sum(kind != "none" for kind in kinds) * (1 if facts.mla else 2) * heads * facts.head_size * dtype


@per_body
def max_model_len(inst: Instance) -> tuple[int | None, str]:
    """The engine's max_model_len and where it comes from: vllm_max_model_len, else the model's config length;
    None for -1 / auto (0.14.0 -: vLLM fits it to the memory) or unknown."""
    release = registry_release(inst)
    length = _int(inst, "max_model_len", release)
    if length is not None and length > 0:
        return length, "vllm_max_model_len"
    if inst.sizing.get("max_model_len") is not None or not inst.knows("max_model_len"):
        return None, ""
    return inst.facts.max_len, "the model's config" if inst.facts.max_len is not None else ""


@per_body
def batch(inst: Instance) -> int | None:
    """vllm_max_num_batched_tokens as the release reads it; None when unset."""
    return _int(inst, "max_num_batched_tokens", registry_release(inst))


@per_body
def fit(inst: Instance) -> Fit | None:
    """The engine's figures; None when the GPU's memory is unknown."""
    total, gpu_source = gpu_memory(inst)
    if total is None:
        return None
    release = registry_release(inst)
    utilization, _said = _utilization(inst, release)
    kv_set = _int(inst, "kv_cache_memory_bytes", release) if memory_text.KV_BYTES.at(release) else None
    weights = None
    quantized = inst.sizing.get("quantization") not in (None, "", "None") or not inst.knows("quantization")
    # expert parallelism spreads the experts over TP x DP ranks (FusedMoE's ep_size), not TP: weights / (TP x PP)
    # would overstate a rank's share, so the weights stay unknown
    experts = inst.sizing.get("enable_expert_parallel") not in (None, False) or not inst.knows("enable_expert_parallel")
    offload = _offload(inst)
    if inst.facts.weight_bytes and not quantized and not experts and offload is not None \
            and inst.dtype in ("auto", "half", "float16", "bfloat16"):
        # --cpu-offload-gb: that much of each GPU's weights stays in CPU memory (CacheConfig, later
        # UVAOffloadConfig.cpu_offload_gb: "per GPU")
        weights = max(0, inst.facts.weight_bytes // (inst.tp * inst.pp) - offload)
    length, len_source = max_model_len(inst)
    # decode context parallelism shards each sequence's KV cache over its ranks (FullAttentionSpec
    # .max_memory_usage_bytes: cdiv(max_model_len, dcp_world_size) where dcp_sharded): not modelled, so unknown
    sharded = not inst.knows("decode_context_parallel_size") or (
        inst.sizing.get("decode_context_parallel_size") is not None
        and _int(inst, "decode_context_parallel_size", release) != 1)
    layers = None if sharded else _layers(inst, release)
    per_token = None
    block = inst.block_size or DEFAULT_BLOCK
    if layers is not None:
        per_token = sum(page for _kind, page in layers) // block
    return Fit(release, total, gpu_source, utilization, int(total * utilization), kv_set, weights,
               inst.facts.weight_source, per_token, length, len_source, layers or (), block,
               _int(inst, "max_num_batched_tokens", release) or DEFAULT_BATCH, inst.facts.sliding_window,
               inst.facts.attention_chunk_size)

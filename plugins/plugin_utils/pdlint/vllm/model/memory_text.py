"""The words each release's start-up check stops with when the KV cache does not fit, and its defaults.

v1/core/kv_cache_utils.py check_enough_kv_cache_memory (0.8.5 - 0.13.0), its _check_enough_kv_cache_memory (0.14.0 -;
v1/core/kv_cache_planning.py from 0.33.0). tests/rules/per_engine/test_memory.py runs each release's own function
on the same numbers and holds the text equal. Pure: no I/O.
"""
from __future__ import annotations

from ..history import history
from ..releases import Release, Timeline

GIB = 1 << 30
_UTILS = "v1/core/kv_cache_utils.py"
_DOCS = " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
_TRY = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
_TRY_CPU = ("Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
            "decreasing `max_model_len` when initializing the engine.")
_NONE = "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine"
# (apostrophe, GiB format, after "GiB).", the estimate's words (None: never shown), tail, the no-memory words)
Words = tuple[str, str, str, str | None, str, str]
_EST = "Based on the available memory, the estimated maximum model length is {n}."
_CPU_NONE = (_NONE + " (this flag also controls CPU memory reservation on the CPU backend, despite its name)."
             + _DOCS)
MESSAGE: Timeline[Words] = history("memory[kv-cache]", Timeline(
    "the start-up check's message when one max_model_len sequence does not fit",
    # estimated_msg = " Based on the available memory," and the f-string naming the length is a statement of its own:
    # the number is never printed
    ("0.8.5", ("models's", ".2f", "", " Based on the available memory,", "  " + _TRY, _NONE + "."),
     f"{_UTILS} check_enough_kv_cache_memory (the estimate's f-string is a separate statement: never shown)",
     "\"models's max seq len\", GiB as .2f, the longest length that fits never printed"),
    ("0.9.1", ("models's", ".2f", " ", _EST, " " + _TRY, _NONE + "."), f"{_UTILS} check_enough_kv_cache_memory",
     "names the estimated maximum model length"),
    ("0.13.0", ("models's", ".2f", " ", _EST, " " + _TRY + _DOCS, _NONE + "." + _DOCS),
     f"{_UTILS} check_enough_kv_cache_memory", "adds the conserving_memory docs link"),
    ("0.14.0", ("models's", "round", " ", _EST + " ", _TRY + _DOCS, _NONE + "." + _DOCS),
     f"{_UTILS} _check_enough_kv_cache_memory (format_gib: round(bytes / GiB, 2))",
     "GiB as round(x, 2): 20.0, not 20.00"),
    ("0.22.0", ("model's", "round", " ", _EST + " ", _TRY_CPU + _DOCS, _CPU_NONE),
     f"{_UTILS} _check_enough_kv_cache_memory", "\"model's max seq len\"; gpu_memory_utilization also names "
     "the CPU backend's memory"),
    ("0.33.0", ("model's", "round", " ", _EST + " ", _TRY_CPU + _DOCS, _CPU_NONE),
     "v1/core/kv_cache_planning.py _check_enough_kv_cache_memory", "the same words, from kv_cache_planning.py"),
))
# From 0.29.0 the check plans against the usable blocks: one block of every layer (BlockPool's null block) is held
# back from the available memory first (check_enough_kv_cache_memory: available_memory - _pool_bytes_per_block)
NULL_BLOCK: Timeline[bool] = history("memory[kv-cache]", Timeline(
    "one block per layer held back before the check", ("0.8.5", False, f"{_UTILS} check_enough_kv_cache_memory"),
    ("0.29.0", True, f"{_UTILS} check_enough_kv_cache_memory (available_memory - _pool_bytes_per_block(groups))")))
UTILIZATION: Timeline[float] = history("memory[weights]", Timeline(
    "gpu_memory_utilization's default", ("0.8.5", 0.9, "vllm/config.py CacheConfig.gpu_memory_utilization"),
    ("0.10.1", 0.9, "vllm/config/cache.py CacheConfig.gpu_memory_utilization"),
    ("0.20.0", 0.92, "vllm/config/cache.py CacheConfig.gpu_memory_utilization")))
# --kv-cache-memory-bytes: the KV cache's size, no profiling (gpu_memory_utilization is then not used)
KV_BYTES: Timeline[bool] = history("memory[weights]", Timeline(
    "--kv-cache-memory-bytes", ("0.8.5", False, "vllm/config.py CacheConfig (no such field)"),
    ("0.10.2", True, "vllm/config/cache.py CacheConfig.kv_cache_memory_bytes")))


history("memory[kv-cache]", UTILIZATION)
history("memory[kv-cache]", KV_BYTES)
history("memory[margin]", UTILIZATION)
history("memory[kv-capacity]", UTILIZATION)


def _gib(value: int, style: str) -> str:
    return f"{value / GIB:.2f}" if style == ".2f" else f"{round(value / GIB, 2)}"


def not_enough(release: Release, max_model_len: int, needed: int, available: int, estimate: int) -> str:
    """The ValueError text release raises: needed bytes for max_model_len above available; estimate, the longest
    length that fits (0: none)."""
    apostrophe, style, after, estimated, tail, _none = MESSAGE.at(release)
    said = estimated.format(n=estimate) if estimated is not None and estimate > 0 else ""
    return (f"To serve at least one request with the {apostrophe} max seq len ({max_model_len}), "
            f"({_gib(needed, style)} GiB KV cache is needed, which is larger than the available KV cache memory "
            f"({_gib(available, style)} GiB).{after}{said}{tail}")


def no_memory(release: Release) -> str:
    return MESSAGE.at(release)[5]

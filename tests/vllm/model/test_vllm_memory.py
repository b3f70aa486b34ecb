"""vLLM's own start-up check on pdlint's figures, release by release (no GPU, no torch).

Each release's KV cache spec classes (v1/kv_cache_interface.py: FullAttentionSpec, MLAAttentionSpec,
SlidingWindowSpec, ChunkedLocalAttentionSpec) are built for an engine's layers with the KV heads per rank its
ModelConfig.get_num_kv_heads gives, and handed with the memory the worker reports (budget less weights, or
--kv-cache-memory-bytes) to that release's check_enough_kv_cache_memory (v1/core/kv_cache_utils.py;
kv_cache_planning.py from 0.33.0) with its own estimate_max_model_len. pdlint's memory[kv-cache] finding must be
the ValueError that check raises, word for word, and nothing where it passes.
"""
from __future__ import annotations

import ast
import functools
import math
from pathlib import Path
from typing import Any

import pytest
from vllm_source import has, lift, roots

from pdlint.rules.per_engine import memory as memory_rule
from pdlint.topology.types import Instance, ModelFacts
from pdlint.vllm.model import memory
from pdlint.vllm.releases import KNOWN, Release

GIB = 1 << 30
SPECS = "vllm/v1/kv_cache_interface.py"
ROOTS = roots(KNOWN)


class _Dtype:
    """What get_dtype_size is asked about: a dtype of a known size."""

    def __init__(self, size: int) -> None:
        self.size = size


@functools.cache
def spec_class(root: Path, name: str) -> type:
    """Release's spec class name, its methods and properties (and its bases') lifted, its fields' defaults kept."""
    tree = ast.parse((root / SPECS).read_text(encoding="utf-8"))
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    chain, current = [], classes[name]
    while True:
        chain.append(current)
        bases = [b.id for b in current.bases if isinstance(b, ast.Name) and b.id in classes]
        if not bases:
            break
        current = classes[bases[0]]
    attrs: dict[str, Any] = {}
    env = {"cdiv": lambda a, b: -(-a // b), "get_dtype_size": lambda d: d.size, "prod": math.prod,
           "KVQuantMode": KVQuantMode}
    for node in reversed(chain):
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                try:
                    attrs[item.target.id] = ast.literal_eval(item.value) if item.value is not None else None
                except ValueError:
                    attrs[item.target.id] = None
        wanted = {i.name for i in node.body if isinstance(i, ast.FunctionDef) and i.name not in ("__post_init__",)
                  and not any(isinstance(d, ast.Name) and d.id == "classmethod" for d in i.decorator_list)}
        lifted = lift(root, SPECS, wanted, klass=node.name, env=env)
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in wanted:
                is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                attrs[item.name] = property(lifted[item.name]) if is_property else lifted[item.name]
    # block_stride_alignment None (every CUDA attention backend): `alignment or 1` (0.32.0 -)
    attrs["get_block_stride_alignment"] = lambda _self: 1
    return type(name, (), attrs)


class _Mode:
    """A KVQuantMode member (0.24.0 -): pdlint models the unquantized cache only."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Mode) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __getattr__(self, name: str) -> bool:
        if name.startswith("is_"):
            return self.name != "NONE" and name[3:].upper() in self.name
        raise AttributeError(name)


class _Modes(type):
    def __getattr__(cls, name: str) -> _Mode:
        return _Mode(name)


class KVQuantMode(metaclass=_Modes):
    NONE = _Mode("NONE")


class Config:
    def __init__(self, length: int, batch: int) -> None:
        # VllmConfig.max_in_flight_tokens (0.26.0 -): max_concurrent_batches x max_num_batched_tokens; one batch here,
        # as pdlint counts it (two with async scheduling: pdlint's need is then a lower bound)
        self.max_in_flight_tokens = batch
        self.model_config = type("M", (), {"max_model_len": length})()
        self.scheduler_config = type("S", (), {"max_num_batched_tokens": batch})()
        self.parallel_config = type("P", (), {"decode_context_parallel_size": 1, "prefill_context_parallel_size": 1})()
        self.cache_config = type("C", (), {"block_size": 16})()


def spec(root: Path, kind: str, block: int, heads: int, size: int, dtype: int, window: int | None,
          mla: bool) -> Any:
    name = {"full": "FullAttentionSpec", "sliding": "SlidingWindowSpec", "chunked": "ChunkedLocalAttentionSpec"}[kind]
    if mla and (root / SPECS).read_text().find("class MLAAttentionSpec") >= 0:
        name = "MLAAttentionSpec"
    spec = spec_class(root, name)()
    values = {"block_size": block, "num_kv_heads": heads, "head_size": size, "dtype": _Dtype(dtype), "use_mla": mla,
              "sliding_window": window, "attention_chunk_size": window, "tokens_per_state": 1, "kv_quant_mode": KVQuantMode.NONE}
    for key, value in values.items():
        setattr(spec, key, value)
    if name != "MLAAttentionSpec" and hasattr(spec, "head_size_v"):
        spec.head_size_v = size  # AttentionSpec.__post_init__
    return spec




def their_kv_heads(root: Path, total: int, tp: int, mla: bool) -> int:
    """ModelConfig.get_num_kv_heads of release: KV heads per rank (MLA: one latent)."""
    where = next(rel for rel in ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
                 if has(root, rel, "get_num_kv_heads", klass="ModelConfig"))
    method = lift(root, where, {"get_num_kv_heads"}, klass="ModelConfig")["get_num_kv_heads"]
    arch = type("Arch", (), {"total_num_kv_heads": total})()
    model = type("Model", (), {"use_mla": mla, "model_arch_config": arch, "get_total_num_kv_heads": lambda _s: total})()
    return int(method(model, type("Parallel", (), {"tensor_parallel_size": tp})()))


class _Group:
    """KVCacheGroupSpec: the layers sharing one block table."""

    def __init__(self, layer_names: list[str], kv_cache_spec: Any) -> None:
        self.layer_names, self.kv_cache_spec, self.host_resident = layer_names, kv_cache_spec, False


class _Layout:
    is_block_outermost = True  # the default NHD-style layouts keep the block outermost


def _format_gib(root: Path) -> dict[str, Any]:
    for rel in ("vllm/utils/mem_utils.py", "vllm/utils/__init__.py", "vllm/utils.py"):
        if (root / rel).is_file() and has(root, rel, "format_gib"):
            return lift(root, rel, {"format_gib"}, env={"GiB_bytes": GIB})
    return {}


@functools.cache
def _checker(root: Path) -> Any:
    planning = "vllm/v1/core/kv_cache_planning.py"
    utils = planning if (root / planning).is_file() else "vllm/v1/core/kv_cache_utils.py"
    names = {"check_enough_kv_cache_memory", "estimate_max_model_len"}
    env: dict[str, Any] = {"GiB_bytes": GIB, "math": math, "round_up": lambda x, m: -(-x // m) * m,
                           **_format_gib(root)}
    for helper in ("max_memory_usage_bytes", "_check_enough_kv_cache_memory", "_pool_bytes_per_block",
                   "_get_kv_cache_bytes_per_block", "_get_per_layer_spec", "_get_layer_block_stride"):
        if has(root, utils, helper):
            names.add(helper)
    if "_pool_bytes_per_block" in names:
        env["get_kv_cache_groups"] = lambda _config, held: [_Group(list(held), next(iter(held.values())))]
        env["UniformTypeKVCacheSpecs"] = env["HiSparseHotSpec"] = type("Never", (), {})
        env["_glm5_next_tensor_layout"] = lambda _groups: None  # GLM-5's indexer layout (0.30.0 - 0.31.0) only
    return lift(root, utils, names, env=env)["check_enough_kv_cache_memory"]


def their_check(root: Path, config: Config, specs: dict[str, Any], available: int) -> str | None:
    """The ValueError text release's check_enough_kv_cache_memory raises for specs and available (None: passes).
    The check's grouping (get_kv_cache_groups, 0.29.0 -) is given one group of every layer: what the release's own
    grouping makes of layers of one spec, the only ones handed to it here."""
    check = _checker(root)
    if "get_kv_cache_groups" in check.__globals__:
        assert len({type(s).__name__ for s in specs.values()}) == 1, "one group holds layers of one spec only"
        config.cache_config.get_resolved_kv_cache_layout = lambda: _Layout()  # type: ignore[attr-defined]
    try:
        check(config, specs, available)
    except ValueError as raised:
        return str(raised)
    return None


# (facts, TP, GPU, max_model_len, gpu_memory_utilization or None, kv_cache_memory_bytes or None)
_LLAMA70 = ModelFacts(heads=64, kv_heads=8, mla=False, ssm=False, layers=80, layer_kinds=("full",) * 80,
                      head_size=128, weight_bytes=141107412992, max_len=131072)
_LLAMA8 = ModelFacts(heads=32, kv_heads=8, mla=False, ssm=False, layers=32, layer_kinds=("full",) * 32,
                     head_size=128, weight_bytes=16060522496, max_len=131072)
_QWEN32 = ModelFacts(heads=64, kv_heads=8, mla=False, ssm=False, layers=64, layer_kinds=("full",) * 64,
                     head_size=128, weight_bytes=65524246528, max_len=40960)
_MLA_LITE = ModelFacts(heads=16, kv_heads=16, mla=True, ssm=False, layers=27, layer_kinds=("full",) * 27,
                       head_size=576, weight_bytes=31412625408, max_len=163840)
_MLA_V3 = ModelFacts(heads=128, kv_heads=128, mla=True, ssm=False, layers=61, layer_kinds=("full",) * 61,
                     head_size=576, max_len=163840)
CASES = {
    "llama70-tp2-128k": (_LLAMA70, 2, "H100-SXM", 131072, None, None),
    "llama70-tp4-128k": (_LLAMA70, 4, "H100-SXM", 131072, None, None),
    "llama70-tp16-kv-replicated": (_LLAMA70, 16, "L4", 1048576, None, None),
    "llama8-l4-128k": (_LLAMA8, 1, "L4", 131072, 0.95, None),
    "qwen32-h100-tp1": (_QWEN32, 1, "H100-SXM", 40960, 0.85, None),
    "mla-lite-l40s": (_MLA_LITE, 1, "L40S", 163840, None, None),
    "mla-lite-a100-40": (_MLA_LITE, 1, "A100-40GB", 163840, 0.85, None),
    "mla-v3-kv-bytes": (_MLA_V3, 8, "H200", 163840, None, 8 * GIB),
}


@pytest.mark.releases
@pytest.mark.parametrize("release", KNOWN, ids=str)
@pytest.mark.parametrize("case", sorted(CASES))
def test_start_up_check_is_the_release_own(release: Release, case: str) -> None:
    facts, tp, gpu, length, utilization, kv_bytes = CASES[case]
    sizing: dict[str, Any] = {"max_model_len": length}
    if utilization is not None:
        sizing["gpu_memory_utilization"] = utilization
    if kv_bytes is not None:
        sizing["kv_cache_memory_bytes"] = kv_bytes
    inst = Instance("h", None, "d", "decode", "h", "h", release.text, model="m", tp=tp, gpu_type=gpu, facts=facts,
                    sizing=sizing)
    found = memory.fit(inst)
    assert found is not None
    if found.kv_set is None and kv_bytes is not None:
        pytest.skip(f"vLLM {release} has no --kv-cache-memory-bytes: the budget is not known without the weights")
    if found.weights is not None and found.budget is not None and found.weights >= found.budget:
        pytest.skip("the weights alone leave no KV cache (memory[weights] reports it)")
    root = ROOTS[release]
    heads = their_kv_heads(root, facts.kv_heads or 0, tp, bool(facts.mla))
    specs = {f"layer.{i}": spec(root, "full", found.block, heads, facts.head_size or 0, 2, None, bool(facts.mla))
             for i in range(facts.layers or 0)}
    assert found.per_token == sum(s.page_size_bytes for s in specs.values()) // found.block, "KV bytes per token"
    reported = found.kv_set if found.kv_set is not None else (found.budget or 0) - (found.weights or 0)
    theirs = their_check(root, Config(length, found.batch), specs, reported)
    mine = memory_rule._kv_cache(inst)
    assert [said for said, _hint in mine] == ([] if theirs is None else [f"vLLM {release} refuses to start: {theirs}"])

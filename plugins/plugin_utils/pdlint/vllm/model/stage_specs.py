"""Per-worker KV cache groups before 0.11.0: a PP stage's layer mix decides whether the engine starts.

Up to 0.10.2 EngineCore._initialize_kv_caches (v1/engine/core.py) calls kv_cache_utils.get_kv_cache_config once
per worker, on that worker's (PP stage's) layers alone. With the hybrid KV cache manager off (0.8.5 - 0.9.0: no
such manager; 0.9.1+: disable_hybrid_kv_cache_manager, which any kv connector forces up to 0.12.x)
unify_hybrid_kv_cache_specs turns a stage's sliding-window layers into FullAttentionSpec only when the stage also
holds full attention, and create_kv_cache_group_specs merges the stage's layers into one group spec
(FullAttentionSpec.merge keeps the converted layers' window: sliding_window=W). So a stage's group spec is
- FullAttentionSpec(sliding_window=None): only full-attention layers,
- FullAttentionSpec(sliding_window=W): full and sliding layers,
- SlidingWindowSpec(W): only sliding layers,
- FullAttentionSpec(attention_chunk_size=C) / ChunkedLocalAttentionSpec(C): the same for chunked local layers
  (Llama 4, 0.10.1+: vllm/model/chunked.py),
- MambaSpec: only Mamba layers (0.9.2+; a stage mixing Mamba and attention makes unify raise ValueError, which
  hma.off_failure reports),
and unify_kv_cache_configs asserts `group_rank_0.kv_cache_spec == group_rank_i.kv_cache_spec`: any two stages of
different mixes raise a bare AssertionError at engine start.
From 0.11.0 get_kv_cache_configs merges every worker's specs, groups the whole model and projects the groups onto
each worker (empty groups kept), so the stage mix no longer matters.
Unknown (None: nothing reported): unknown layers, linear-attention layers, a stage with no KV layer, HMA on or
unresolved. Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Sequence

from ...topology.types import Instance
from ..connectors.registry import release as registry_release
from ..history import history
from ..releases import R, Timeline
from . import chunked, hma
from .layers import pp_indices, stages

_UTILS = "v1/core/kv_cache_utils.py"
PER_WORKER: Timeline[str] = history("connector[config]", Timeline(
    "KV cache groups made per PP stage (HMA off)",
    ("0.8.5", "stage", (f"v1/engine/core.py EngineCore._initialize_kv_caches (get_kv_cache_config per worker); "
                        f"{_UTILS} unify_hybrid_kv_cache_specs (a converted sliding layer is a plain FullAttentionSpec), "
                        "unify_kv_cache_configs (`assert group_rank_0.kv_cache_spec == group_rank_i.kv_cache_spec`)"),
     "a stage of sliding layers only beside a stage with full attention raises AssertionError at start"),
    ("0.9.0", "stage-window", (f"v1/engine/core.py EngineCore._initialize_kv_caches (get_kv_cache_config per "
                               f"worker); {_UTILS} unify_hybrid_kv_cache_specs, create_kv_cache_group_specs "
                               "(FullAttentionSpec.merge keeps sliding_window=W), unify_kv_cache_configs (`assert "
                               "group_rank_0.kv_cache_spec == group_rank_i.kv_cache_spec`)"),
     "PP stages of different layer mixes (full / full+sliding / sliding / Mamba) raise AssertionError at start"),
    ("0.11.0", "global", (f"{_UTILS} get_kv_cache_configs (every worker's specs merged, global groups projected onto "
                          "each worker)"), "the stage mix does not matter"),
))
_MAMBA_SPEC = R("0.9.2")  # v1/kv_cache_interface.py MambaSpec: V1 has no Mamba KV cache before it
_FULL = frozenset({"full"})
_SPEC = {_FULL: "FullAttentionSpec(sliding_window=None)",
         frozenset({"full", "sliding"}): "FullAttentionSpec(sliding_window=W)",
         frozenset({"sliding"}): "SlidingWindowSpec(W)", frozenset({"mamba"}): "MambaSpec",
         # chunked local layers unify as sliding ones do (FullAttentionSpec.merge keeps attention_chunk_size=C)
         frozenset({"full", "chunked"}): "FullAttentionSpec(attention_chunk_size=C)",
         frozenset({"chunked"}): "ChunkedLocalAttentionSpec(C)"}


def stage_mixes(inst: Instance) -> list[frozenset[str]] | None:
    """The KV-holding layer kinds of each PP stage; None when one is unknown or vLLM refuses the partition."""
    kinds = inst.facts.layer_kinds
    held = stages(kinds and chunked.kinds_at(kinds, registry_release(inst)), inst.pp, inst.env)
    return None if held is None else [frozenset(stage) - {"none"} for stage in held]


def failure(inst: Instance) -> tuple[str, str] | None:
    """(message, vLLM source) when the engine's PP stages get unequal KV cache group specs; None: they do not,
    or pdlint cannot tell."""
    release = registry_release(inst)
    if not inst.knows("pipeline_parallel_size", "env.VLLM_PP_LAYER_PARTITION") or not isinstance(inst.pp, int) \
            or inst.pp <= 1 \
            or PER_WORKER.at(release) == "global":
        return None
    if not hma.known(inst) or hma.enabled(inst):  # HMA on (no connector, 0.9.1+): grouped otherwise, not modelled
        return None
    mixes = stage_mixes(inst)
    if mixes is None or any(m not in _SPEC for m in mixes):
        return None  # a mixed Mamba stage (unify raises: hma.off_failure), linear attention, a stage without KV
    if release < _MAMBA_SPEC and any("mamba" in m for m in mixes):
        return None
    specs = [_SPEC[m] for m in mixes]
    if PER_WORKER.at(release) == "stage":  # the converted layers keep no window: mixed and full stages are equal
        specs = [_SPEC[_FULL] if "full" in m else spec for m, spec in zip(mixes, specs)]
    other = next((i for i, spec in enumerate(specs) if spec != specs[0]), None)
    if other is None:
        return None
    model = inst.model or "the model"
    message = (f"vLLM {release} raises AssertionError at engine start: with the hybrid KV cache manager off each "
               f"PP stage groups its own layers, and {model}'s stage 0 ({_words(mixes[0])}: {specs[0]}) "
               f"and stage {other} ({_words(mixes[other])}: {specs[other]}) get different KV cache specs "
               "(unify_kv_cache_configs: `assert group_rank_0.kv_cache_spec == group_rank_i.kv_cache_spec`)")
    return message, PER_WORKER.step(release).source


def _words(mix: frozenset[str]) -> str:
    return " and ".join(sorted(mix)) + " layers only" if len(mix) == 1 else " and ".join(sorted(mix)) + " layers"


def hint(inst: Instance) -> str:
    """Settings that start: PP 1 (when the whole model unifies), a partition whose stages all hold both kinds,
    or a release that groups the whole model."""
    kinds = inst.facts.layer_kinds or ()
    if "mamba" in kinds:
        return hma.off_fix(inst)  # with PP 1 the model's Mamba and attention layers still fail to unify
    fixes = ["set vllm_pipeline_parallel_size: 1"]
    split = mixed_partition(kinds, inst.pp)
    if split:
        fixes.append(f"set VLLM_PP_LAYER_PARTITION={split} in vllm_env (every stage then holds full and sliding layers)")
    fixes.append("pin vllm_version 0.11.0 or later (get_kv_cache_configs groups the whole model)")
    return ", or ".join(fixes)


def mixed_partition(kinds: Sequence[str], pp: int) -> str | None:
    """A VLLM_PP_LAYER_PARTITION whose every stage holds full and sliding layers (the even split if it does);
    None when the model has no such split."""
    def mixed(part: Sequence[str]) -> bool:
        return {"full", "sliding"} <= set(part)

    even = [pp_indices(len(kinds), rank, pp, None) for rank in range(pp)]
    if all(isinstance(s, tuple) and mixed(kinds[s[0]:s[1]]) for s in even):
        counts = [s[1] - s[0] for s in even if isinstance(s, tuple)]
        return ",".join(str(c) for c in counts)
    counts, start = [], 0
    for end in range(1, len(kinds) + 1):  # greedy: close a stage as soon as it is mixed, the rest to the last
        if len(counts) < pp - 1 and mixed(kinds[start:end]):
            counts.append(end - start)
            start = end
    if len(counts) != pp - 1 or not mixed(kinds[start:]):
        return None
    return ",".join(str(c) for c in (*counts, len(kinds) - start))

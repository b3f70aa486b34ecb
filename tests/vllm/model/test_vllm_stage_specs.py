"""Per-PP-stage KV cache groups against each release's own code (vllm/model/stage_specs.py).

For every release 0.8.5 - 0.12.0 the spec classes of v1/kv_cache_interface.py run as vLLM wrote them (the module
body executed with its torch and vllm imports replaced by stand-ins: a torch namespace whose dtype is a plain
class, get_dtype_size 2, cdiv), so merge, equality, type_id and astuple are the release's own. From
v1/core/kv_cache_utils.py are lifted: up to 0.10.2 get_kv_cache_config (called once per PP stage on that stage's
layers, as EngineCore._initialize_kv_caches does), unify_hybrid_kv_cache_specs, is_kv_cache_type_uniform,
create_kv_cache_group_specs and unify_kv_cache_configs; from 0.11.0 get_kv_cache_configs with get_kv_cache_groups
and its helpers. Stubbed: check_enough_kv_cache_memory (memory), _get_kv_cache_config_uniform_type (sizes; it
returns one group of every layer via the lifted create_kv_cache_group_specs, as vLLM's does) and
get_kv_cache_config_from_groups (sizes). The stages hold the layers model_layers.stage_layers gives (get_pp_indices
is held to each release by test_vllm_nixl_pp_plain). Grid: gemma-3-4b-it, gpt-oss-20b, Mistral-7B-v0.1 (all
sliding), Llama-3.1-8B (all full), Nemotron-H-56B (Mamba hybrid, 0.9.2+: MambaSpec) x PP 1-8 x the even split and
partitions x HMA unset / off. pdlint's verdict (connector[config]'s start problems) equals whether the code raises.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import math
import types
from typing import Any

import pytest
import vllm_source

from pdlint.hostvars import HostVars
from pdlint.rules.per_engine import connector as rule
from pdlint.topology.build import build
from pdlint.topology.types import Instance
from pdlint.vllm.connectors import registry
from pdlint.vllm.model import hma, stage_specs
from pdlint.vllm.model import layers as model_layers
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if r <= R("0.12.0")]
ROOTS = vllm_source.roots(RELEASES)
UTILS = "vllm/v1/core/kv_cache_utils.py"
TABLE_MODELS = ("google/gemma-3-4b-it", "openai/gpt-oss-20b", "mistralai/Mistral-7B-v0.1",
                "meta-llama/Llama-3.1-8B-Instruct")
NEMOTRON_H = "nvidia/Nemotron-H-56B-Base-8K"
# hybrid_override_pattern of nvidia/Nemotron-H-56B-Base-8K (aiconfigurator-core 0.12.0 model_configs), 118 layers
_PATTERN = "M-M-M-M*-" + "M-M-M-M-M*-" * 9 + "M-M-M-M-M-"
_KEEP = ("dataclasses", "typing", "math", "copy", "abc", "collections", "enum", "functools", "itertools")


class _Log:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


@functools.cache
def specs(release: Release) -> dict[str, Any]:
    """The namespace of the release's v1/kv_cache_interface.py, run with stand-in torch and vllm imports."""
    tree = ast.parse((ROOTS[release] / "vllm/v1/kv_cache_interface.py").read_text(encoding="utf-8"))
    def kept(node: ast.stmt) -> bool:
        if isinstance(node, ast.Import):
            return all(a.name.split(".")[0] in _KEEP for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] in _KEEP
        return True
    tree.body = [n for n in tree.body if kept(n)]
    torch = types.SimpleNamespace(dtype=type("dtype", (), {}), Tensor=object, bfloat16="bfloat16")
    namespace: dict[str, Any] = {"torch": torch, "Self": Any, "VllmConfig": object, "init_logger": lambda n: _Log(),
                                 "cdiv": lambda a, b: -(-a // b), "get_dtype_size": lambda d: 2,
                                 "MULTIMODAL_REGISTRY": None, "__name__": __name__}
    exec(compile(tree, f"{release}/kv_cache_interface.py", "exec"), namespace)  # noqa: S102
    return namespace


def _make(cls: type, **given: Any) -> Any:
    values = {"block_size": 16, "num_kv_heads": 8, "head_size": 64, "dtype": "bfloat16", "use_mla": False,
              "shapes": ((4, 8), (8, 8)), "dtypes": ("bfloat16", "bfloat16"), **given}
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def layer_specs(release: Release, kinds: tuple[str, ...], window: int | None, first: int = 0) -> dict[str, Any]:
    ns = specs(release)
    made = {"full": lambda: _make(ns["FullAttentionSpec"]),
            "sliding": lambda: _make(ns["SlidingWindowSpec"], sliding_window=window),
            "mamba": lambda: _make(ns["MambaSpec"])}
    return {f"model.layers.{first + i}": made[k]() for i, k in enumerate(kinds) if k != "none"}


@functools.cache
def _planner(release: Release) -> Any:
    """fn(per-stage specs) -> None, raising as the release's engine start does with HMA off."""
    env: dict[str, Any] = {**specs(release), "logger": _Log(), "astuple": dataclasses.astuple,
                           "check_enough_kv_cache_memory": lambda *a: None, "copy": __import__("copy"),
                           "_report_kv_cache_config": lambda *a: None, "math": math}
    config = types.SimpleNamespace(scheduler_config=types.SimpleNamespace(disable_hybrid_kv_cache_manager=True))
    root = ROOTS[release]
    if vllm_source.has(root, UTILS, "get_kv_cache_configs"):
        names = {n for n in ("get_kv_cache_configs", "get_kv_cache_groups", "unify_hybrid_kv_cache_specs",
                             "is_kv_cache_spec_uniform", "is_kv_cache_type_attention_free",
                             "_get_kv_cache_groups_uniform_spec", "_get_kv_cache_groups_uniform_type",
                             "is_kv_cache_page_size_uniform", "_get_kv_cache_groups_uniform_page_size",
                             "create_kv_cache_group_specs", "get_uniform_page_size", "unify_kv_cache_spec_page_size",
                             "_project_kv_cache_groups_to_worker") if vllm_source.has(root, UTILS, n)}
        ns = vllm_source.lift(root, UTILS, names, env=env)
        ns["get_kv_cache_config_from_groups"] = lambda cfg, groups, *rest: types.SimpleNamespace(
            num_blocks=1, kv_cache_groups=groups, kv_cache_tensors=[])
        return lambda stages: ns["get_kv_cache_configs"](config, stages, [1 << 30] * len(stages))
    names = {n for n in ("get_kv_cache_config", "unify_hybrid_kv_cache_specs", "is_kv_cache_type_uniform",
                         "create_kv_cache_group_specs", "unify_kv_cache_configs", "is_kv_cache_type_attention_free",
                         "_get_kv_cache_config_attention_free", "is_kv_cache_page_size_uniform")
             if vllm_source.has(root, UTILS, n)}
    ns = vllm_source.lift(root, UTILS, names, env=env)
    ns["_get_kv_cache_config_uniform_type"] = lambda cfg, spec, mem: types.SimpleNamespace(
        num_blocks=1, kv_cache_groups=ns["create_kv_cache_group_specs"](spec, [list(spec)]))

    def per_worker(stages: list[dict[str, Any]]) -> None:
        ns["unify_kv_cache_configs"]([ns["get_kv_cache_config"](config, s, 1 << 30) for s in stages])
    return per_worker


def vllm_raises(release: Release, kinds: tuple[str, ...], window: int | None, pp: int,
                partition: str | None) -> type[Exception] | None:
    spans = [model_layers.pp_indices(len(kinds), rank, pp, partition) for rank in range(pp)]
    stages = [layer_specs(release, kinds[s[0]:s[1]], window, s[0]) for s in spans if isinstance(s, tuple)]
    try:
        _planner(release)(stages)
    except (AssertionError, ValueError, NotImplementedError) as error:
        return type(error)
    return None


def _connector(release: Release) -> str:
    return next(c for c in ("NixlConnector", "SharedStorageConnector", "LMCacheConnectorV1")
                if registry.registered(c, release))


def instance(release: Release, model: str, pp: int, partition: str | None, disable: bool | None) -> Instance:
    values: dict[str, Any] = {"vllm_pd_deployment": "x", "vllm_pd_role": "prefill", "vllm_version": release.text,
                              "vllm_model": model, "vllm_pipeline_parallel_size": pp,
                              "vllm_env": {} if partition is None else {"VLLM_PP_LAYER_PARTITION": partition},
                              "vllm_kv_transfer_config": {"kv_connector": _connector(release), "kv_role": "kv_producer"}}
    if disable is not None:
        values["vllm_disable_hybrid_kv_cache_manager"] = disable
    topo, _ = build([HostVars("p", values)])
    inst = topo.instances[0]
    if model == NEMOTRON_H:
        kinds = model_layers.layer_kinds({"model_type": "nemotron_h", "num_hidden_layers": len(_PATTERN),
                                          "hybrid_override_pattern": _PATTERN, "num_attention_heads": 64,
                                          "num_key_value_heads": 8, "hidden_size": 8192}, release)
        inst = dataclasses.replace(inst, facts=dataclasses.replace(inst.facts, layer_kinds=kinds, ssm=True,
                                                                   layers=len(_PATTERN)))
    return inst


def _partitions(n: int, pp: int) -> list[str | None]:
    """The even split, and uneven ones: one layer first, one layer last, a stage of the first half."""
    if pp == 1:
        return [None]
    rest = n - (pp - 1)
    found: list[str | None] = [None, ",".join(["1"] * (pp - 1) + [str(rest)]), ",".join([str(rest)] + ["1"] * (pp - 1))]
    if pp == 2:
        found += [f"{n // 2 - 3},{n - n // 2 + 3}", f"6,{n - 6}", f"5,{n - 5}"]
    return found


def _models(release: Release) -> list[str]:
    return [*TABLE_MODELS, *([NEMOTRON_H] if release >= R("0.9.2") else [])]


def ours(inst: Instance) -> bool:
    return bool(rule.start_problems(inst, registry.release(inst)))


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_stage_mix_verdict_is_the_release_s_own(release: Release) -> None:
    wrong, cases, raised, skipped = [], 0, 0, 0
    for model, pp, disable in itertools.product(_models(release), range(1, 9), (None, True)):
        probe = instance(release, model, pp, None, disable)
        kinds = probe.facts.layer_kinds
        assert kinds is not None and not hma.enabled(probe), model
        for partition in _partitions(len(kinds), pp):
            inst = instance(release, model, pp, partition, disable)
            if stage_specs.stage_mixes(inst) is None or not all(stage_specs.stage_mixes(inst) or ()):
                skipped += 1  # a stage without KV layers: not modelled (the report says so)
                continue
            theirs = vllm_raises(release, kinds, probe.facts.sliding_window or 4096, pp, partition)
            cases, raised = cases + 1, raised + bool(theirs)
            mine = stage_specs.failure(inst)
            if bool(theirs) != ours(inst) or (theirs is AssertionError) != (mine is not None):
                wrong.append((model, pp, partition, disable, theirs, mine and mine[0][:60]))
    assert not wrong, f"{release}: {len(wrong)} of {cases} disagree, e.g. {wrong[:3]}"
    assert skipped <= 30 and cases >= 180 and (raised > 20 if release < R("0.11.0") else True), (cases, raised, skipped)


@pytest.mark.parametrize("release", [R("0.9.0"), R("0.10.2")], ids=str)
def test_the_hint_s_partition_starts(release: Release) -> None:
    """The VLLM_PP_LAYER_PARTITION the hint offers makes every stage mixed, and the release's own code starts."""
    offered = 0
    for model, pp in itertools.product(("google/gemma-3-4b-it", "openai/gpt-oss-20b"), range(2, 9)):
        for partition in _partitions(len(instance(release, model, pp, None, None).facts.layer_kinds or ()), pp):
            inst = instance(release, model, pp, partition, None)
            if stage_specs.failure(inst) is None:
                continue
            split = stage_specs.mixed_partition(inst.facts.layer_kinds or (), pp)
            if split is None:  # every stage needs a full layer: gemma-3-4b-it has 5 (layers 5, 11, ... 29)
                assert model == "google/gemma-3-4b-it" and pp > 5 and "PARTITION" not in stage_specs.hint(inst)
                continue
            assert split in stage_specs.hint(inst)
            fixed = instance(release, model, pp, split, None)
            assert stage_specs.failure(fixed) is None and not ours(fixed)
            assert vllm_raises(release, inst.facts.layer_kinds or (), inst.facts.sliding_window, pp, split) is None
            offered += 1
    assert offered > 10


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.9.2")], ids=str)
def test_homogeneous_mamba_stages_hit_the_group_assert(release: Release) -> None:
    """Stages each of one kind (Mamba, full) unify on their own, so the group assert, not unify's ValueError, stops
    the engine before 0.11.0; from 0.11.0 the whole model fails to unify (ValueError)."""
    kinds = ("mamba",) * 4 + ("full",) * 4
    base = instance(release, NEMOTRON_H, 2, None, None)
    for partition in (None, "2,6", "5,3"):
        inst = instance(release, NEMOTRON_H, 2, partition, None)
        inst = dataclasses.replace(inst, facts=dataclasses.replace(base.facts, layer_kinds=kinds, layers=len(kinds)))
        theirs = vllm_raises(release, kinds, None, 2, partition)
        mine = stage_specs.failure(inst)
        assert theirs is not None and ours(inst), partition
        assert (theirs is AssertionError) == (mine is not None), (partition, theirs, mine)
        assert (mine is not None) == (partition is None and release < R("0.11.0")), partition

"""pdlint's layer counts and kinds per PP stage against each release's own code, lifted from its wheel.

vLLM's side: ModelConfig.get_layers_start_end_indices / get_num_layers_by_block_type (vllm/config.py,
vllm/config/__init__.py, vllm/config/model.py), the model_arch_config convertors' get_num_hidden_layers (0.14.0 -),
vllm/distributed/utils.py get_pp_indices with VLLM_PP_LAYER_PARTITION; is_hybrid / is_attention_free / has_noops
from the model class's interfaces (IsHybrid, IsAttentionFree, HasNoOps) found through the release's model registry,
read statically. The configs: aiconfigurator-core's real config.json files and the shapes of test_vllm_model_config.
"""
from __future__ import annotations

import ast
import enum
import functools
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import vllm_source
from test_vllm_model_config import CONFIGS, _classes, _compress_ratios, _constant, hf_config

from pdlint.topology.types import ModelFacts
from pdlint.vllm.model import layers as model_layers
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)
_MODEL_FILES = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
_TRAITS = ("IsHybrid", "IsAttentionFree", "HasNoOps")


def _pp_fn(root: Path, partition: str | None) -> Any:
    envs = types.SimpleNamespace(VLLM_PP_LAYER_PARTITION=partition)
    logger = types.SimpleNamespace(info=lambda *a, **k: None)
    return vllm_source.lift(root, "vllm/distributed/utils.py", {"get_pp_indices"},
                            env={"envs": envs, "logger": logger})["get_pp_indices"]


PARTITIONS = (None, "10,22", "16,16", "8,8,8,8", "1,2", "a,b", "32", "4,4,4,4,4,4,4,4")


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_pp_indices_are_the_releases(release: Release) -> None:
    wrong = []
    for partition in PARTITIONS:
        theirs_fn = _pp_fn(ROOTS[release], partition)
        for layers in (1, 2, 3, 5, 7, 32, 61, 62, 94, 126):
            for size in range(1, 9):
                for rank in range(size):
                    ours = model_layers.pp_indices(layers, rank, size, partition)
                    try:
                        theirs: Any = theirs_fn(layers, rank, size)
                    except ValueError as exc:
                        theirs = f"ValueError {exc}"
                    if isinstance(ours, str) != isinstance(theirs, str) or not isinstance(ours, str) and \
                            tuple(theirs) != ours:
                        wrong.append(f"{partition} {layers} {rank}/{size}: vLLM {theirs}, pdlint {ours}")
    assert not wrong, "\n".join(wrong[:20])


def _registry(root: Path) -> dict[str, tuple[str, str]]:
    """architecture -> (module, class) of every dict literal in the release's models/registry.py."""
    tree = ast.parse((root / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple) and len(value.elts) == 2 and \
                        all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                    found.setdefault(key.value, (value.elts[0].value, value.elts[1].value))  # type: ignore[union-attr]
    return found


@functools.cache
def _tree(path: Path) -> ast.Module | None:
    return ast.parse(path.read_text(encoding="utf-8")) if path.exists() else None


def _traits(root: Path, module: str, klass: str, seen: set[tuple[str, str]] | None = None) -> set[str]:
    """The interface names among klass's bases, following `from .x import Base` into the models folder."""
    seen = seen if seen is not None else set()
    if (module, klass) in seen:
        return set()
    seen.add((module, klass))
    tree = _tree(root / "vllm/model_executor/models" / f"{module}.py")
    if tree is None:
        return set()
    imports = {a.asname or a.name: (n.module or "").lstrip(".") for n in tree.body if isinstance(n, ast.ImportFrom)
               and n.level == 1 for a in n.names}
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == klass:
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                if name in _TRAITS:
                    found.add(name)
                elif name in imports and imports[name] not in ("interfaces", "interfaces_base"):
                    found |= _traits(root, imports[name], name, seen)
                elif name:
                    found |= _traits(root, module, name, seen)
    return found


def _attention_types(root: Path, model: str) -> frozenset[str]:
    """_ATTENTION_LAYER_TYPES of vllm/config/model.py (0.32.0 -): frozenset({...}) literal."""
    for node in ast.parse((root / model).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_ATTENTION_LAYER_TYPES":
            return frozenset(ast.literal_eval(node.value.args[0]))  # type: ignore[attr-defined]
    return frozenset(("full_attention",))


class _Block(str, enum.Enum):  # noqa: UP042 - LayerBlockType up to 0.13.0 (vllm/utils.py), as vLLM writes it
    attention = "attention"
    mamba = "mamba"
    linear_attention = "linear_attention"


def _vllm(release: Release) -> Any:
    """config dict -> (total layers, per PP size (attention, mamba, linear) per stage) by release's own code."""
    root = ROOTS[release]
    model = next(p for p in _MODEL_FILES if (root / p).exists() and
                 vllm_source.has(root, p, "get_num_layers_by_block_type", "ModelConfig"))
    text_fn = vllm_source.lift(root, "vllm/transformers_utils/config.py", {"get_hf_text_config"})["get_hf_text_config"]
    source = (root / model).read_text(encoding="utf-8")
    old_enum = "LayerBlockType.attention" in source
    env = {"LayerBlockType": _Block if old_enum else str, "_ATTENTION_LAYER_TYPES": _attention_types(root, model)}
    names = {"get_num_layers_by_block_type", "get_layers_start_end_indices", "get_num_layers"}
    if vllm_source.has(root, model, "get_total_num_hidden_layers", "ModelConfig"):  # 0.11.1 -
        names.add("get_total_num_hidden_layers")
    fns = vllm_source.lift(root, model, names, "ModelConfig", env=env)
    conv = None
    if release >= R("0.14.0"):
        utils = vllm_source.lift(root, "vllm/config/utils.py", {"getattr_iter"}, env={"logger": None})
        conv = _classes(root, "vllm/transformers_utils/model_arch_config_convertor.py", {
            "envs": types.SimpleNamespace(VLLM_MLA_DISABLE=False), "getattr_iter": utils["getattr_iter"],
            "PretrainedConfig": object, "final": lambda f: f, "logger": None,
            "get_compress_ratios": _compress_ratios(root),
            "CONFIG_FIELD_ALIASES": _constant(root, "vllm/transformers_utils/config.py", "CONFIG_FIELD_ALIASES")})
    registry = _registry(root)
    block = [_Block.attention, _Block.mamba, _Block.linear_attention] if old_enum else \
        ["attention", "mamba", "linear_attention"]

    def run(data: dict[str, Any]) -> tuple[Any, ...]:
        hf = hf_config(_with_block_types(data, root))
        text = text_fn(hf)
        arch = (data.get("architectures") or [""])[0]
        if arch not in registry:
            raise KeyError(f"{arch}: not a model of vLLM {release}")  # it would not load at all
        traits = _traits(root, *registry[arch])
        layer_types = getattr(hf, "layer_types", None)
        hybrid = "IsHybrid" in traits and (release < R("0.11.1") or layer_types is None or not all(
            t in ("attention", "full_attention") for t in layer_types))
        arch_config = types.SimpleNamespace(text_model_type=getattr(text, "model_type", None))
        if conv is not None:
            klass = conv["MODEL_ARCH_CONFIG_CONVERTORS"].get(data.get("model_type"), conv["ModelArchConfigConvertorBase"])
            arch_config.total_num_hidden_layers = klass(hf, text).get_num_hidden_layers()
        me = type("ModelConfig", (), {n: fns[n] for n in names})()
        me.__dict__.update(hf_config=hf, hf_text_config=text, is_hybrid=hybrid, has_noops="HasNoOps" in traits,
                           is_attention_free="IsAttentionFree" in traits, model_arch_config=arch_config)
        stages = {}
        for size in (1, 2, 3, 4):
            parallel = [types.SimpleNamespace(rank=rank, tensor_parallel_size=1, pipeline_parallel_size=size)
                        for rank in range(size)]
            # has_noops: the release's function counts the blocks with attention whatever block_type it is asked
            # for (it is only ever asked for attention there), so only that count is compared
            stages[size] = tuple(tuple(me.get_num_layers_by_block_type(p, b) if i == 0 or not me.has_noops else None
                                       for i, b in enumerate(block)) for p in parallel)
        whole = types.SimpleNamespace(rank=0, tensor_parallel_size=1, pipeline_parallel_size=1)
        return me.get_num_layers(whole), stages
    return run


def _with_block_types(data: dict[str, Any], root: Path) -> dict[str, Any]:
    """NemotronH as its config class reads it: layers_block_type from hybrid_override_pattern (vLLM's own
    NemotronHConfig.layers_block_type, vllm/transformers_utils/configs/nemotron_h.py 0.10.0 - 0.32.0; transformers'
    NemotronHConfig from 0.33.0 the same)."""
    pattern = data.get("hybrid_override_pattern")
    if data.get("model_type") != "nemotron_h" or not isinstance(pattern, str) or "layers_block_type" in data:
        return data
    spelled = {"M": "mamba", "*": "attention", "-": "mlp"}
    return {**data, "layers_block_type": [spelled.get(c, "moe") for c in pattern]}


def _ours(data: dict[str, Any], release: Release) -> tuple[Any, ...] | None:
    kinds = model_layers.layer_kinds(data, release)
    if kinds is None:
        return None
    facts = ModelFacts(layers=len(kinds), layer_kinds=kinds)
    stages = {}
    for size in (1, 2, 3, 4):
        held = [model_layers.stage_layers(facts, size, rank, {}) or () for rank in range(size)]
        stages[size] = tuple((sum(k in model_layers.ATTENTION for k in h), h.count("mamba"), h.count("linear"))
                             for h in held)
    return model_layers.num_layers(data, release), stages


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_layer_counts_per_stage_are_the_releases(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the release's code answers, pdlint's kinds give the same counts on every PP stage of sizes 1 - 4."""
    root = ROOTS[release]
    fake = types.ModuleType("vllm.distributed.utils")
    fake.get_pp_indices = _pp_fn(root, None)  # type: ignore[attr-defined]
    for name, module in (("vllm", types.ModuleType("vllm")), ("vllm.distributed", types.ModuleType("d")),
                         ("vllm.distributed.utils", fake)):
        monkeypatch.setitem(sys.modules, name, module)
    vllm = _vllm(release)
    wrong, compared = [], 0
    for name, data in CONFIGS.items():
        try:
            theirs = vllm(data)
        except (AttributeError, AssertionError, ValueError, TypeError, KeyError, IndexError, ZeroDivisionError):
            continue  # vLLM cannot read this config in this release (the KV-head test covers what pdlint says)
        ours = _ours(data, release)
        if ours is None and theirs[0] == 0:
            continue  # no layer count in config.json: vLLM's getattr default 0, pdlint's unknown
        if ours is not None:
            ours = (ours[0], {n: tuple(tuple(c if t is not None else None for c, t in zip(o, v)) for o, v in zip(
                stages, theirs[1][n])) for n, stages in ours[1].items()})
        compared += 1
        if ours != theirs:
            wrong.append(f"{name}: vLLM {theirs}, pdlint {ours}")
    assert compared > 20 or compared == len(CONFIGS)
    assert not wrong, "\n".join(wrong[:15])


def test_stage_layers_say_which_stage_holds_mamba() -> None:
    kinds = ("mamba", "none", "full", "mamba") * 3
    facts = ModelFacts(layers=len(kinds), layer_kinds=kinds)
    assert model_layers.stage_layers(facts, 2, 1, {}) == kinds[6:]
    assert model_layers.stage_layers(facts, 2, 1, {"VLLM_PP_LAYER_PARTITION": "11,1"}) == ("mamba",)
    assert model_layers.stage_layers(facts, 2, 1, {"VLLM_PP_LAYER_PARTITION": "6,5"}) is None
    assert model_layers.pp_error(facts, 2, {"VLLM_PP_LAYER_PARTITION": "6,5"}) is not None
    assert model_layers.stage_layers(ModelFacts(), 2, 0, {}) is None
    text = model_layers.run_length(kinds)
    assert model_layers.from_run_length(text) == kinds

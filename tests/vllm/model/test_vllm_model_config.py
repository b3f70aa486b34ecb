"""pdlint's model facts from config.json against vLLM's own derivation, lifted from each release's wheel.

Up to 0.13.0 ModelConfig.get_total_num_kv_heads / is_deepseek_mla / get_hf_config_sliding_window or
get_sliding_window (vllm/config.py, vllm/config/__init__.py, vllm/config/model.py); from 0.14.0 the classes of
vllm/transformers_utils/model_arch_config_convertor.py; every release get_hf_text_config
(vllm/transformers_utils/config.py). The configs: the ~80 model config.json files aiconfigurator-core 0.12.0
(Apache-2.0, PyPI) ships under aiconfigurator_core/model_configs/, plus shapes of families it lacks.
"""
from __future__ import annotations

import ast
import json
import sys
import types
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
import vllm_source

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import config_defaults as config_defaults_tool  # the generator of vllm/data/config_defaults.json
import model_table  # fetches the wheel as the table's generator does

from pdlint.vllm.model import config as model_config
from pdlint.vllm.model import types as model_types
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)
_AIC = "aiconfigurator-core==0.12.0"


def _aiconfigurator() -> dict[str, dict[str, Any]]:
    """The model config.json files of aiconfigurator-core's wheel (fetched once, cached beside vLLM's)."""
    found_wheel = model_table.wheel(_AIC, vllm_source.CACHE)
    if found_wheel is None:
        return {}
    found = {}
    with zipfile.ZipFile(found_wheel) as whl:
        for info in whl.infolist():
            name = info.filename
            if "/model_configs/" in name and name.endswith("_config.json") and "quant" not in name \
                    and info.file_size < 64_000:
                found[name.rsplit("/", 1)[1].removesuffix("_config.json")] = json.loads(whl.read(name))
    return found


# Families aiconfigurator lacks, in the shapes their config.json files have (values from the HF repos named).
SHAPES: dict[str, dict[str, Any]] = {
    "tiiuae/falcon-7b": {"model_type": "falcon", "n_head": 71, "n_layer": 32, "multi_query": True,
                         "new_decoder_architecture": False},
    "tiiuae/falcon-40b": {"model_type": "falcon", "n_head": 128, "n_head_kv": 8, "n_layer": 60,
                          "new_decoder_architecture": True},
    "RefinedWeb (old falcon-40b)": {"model_type": "RefinedWeb", "n_head": 128, "n_head_kv": 8, "n_layer": 60,
                                    "new_decoder_architecture": True, "multi_query": True},
    "bigcode/starcoder": {"model_type": "gpt_bigcode", "n_head": 48, "n_layer": 40, "multi_query": True},
    "gpt_bigcode without multi_query": {"model_type": "gpt_bigcode", "n_head": 16, "n_layer": 24, "multi_query": False},
    "gpt_bigcode, multi_query by default": {"model_type": "gpt_bigcode", "n_head": 32},
    "mosaicml/mpt-7b": {"model_type": "mpt", "n_heads": 32, "n_layers": 32, "attn_config": {"alibi": True}},
    "mpt with kv_n_heads": {"model_type": "mpt", "n_heads": 32, "n_layers": 32, "attn_config": {"kv_n_heads": 8}},
    "databricks/dbrx-instruct": {"model_type": "dbrx", "n_heads": 48, "n_layers": 40,
                                 "attn_config": {"kv_n_heads": 8, "clip_qkv": 8}},
    "THUDM/chatglm3-6b": {"model_type": "chatglm", "num_attention_heads": 32, "num_layers": 28,
                          "multi_query_attention": True, "multi_query_group_num": 2},
    "state-spaces/mamba-2.8b-hf": {"model_type": "mamba", "num_hidden_layers": 64},
    "Qwen/Qwen2.5-7B-Instruct": {"model_type": "qwen2", "num_attention_heads": 28, "num_key_value_heads": 4,
                                 "num_hidden_layers": 28, "sliding_window": 131072, "use_sliding_window": False},
    "mistralai/Mistral-7B-v0.1": {"model_type": "mistral", "num_attention_heads": 32, "num_key_value_heads": 8,
                                  "num_hidden_layers": 32, "sliding_window": 4096},
    "zero window": {"model_type": "mistral", "num_attention_heads": 32, "num_key_value_heads": 8,
                    "sliding_window": 0},
    "llava text_config": {"model_type": "llava", "text_config": {"model_type": "llama", "num_attention_heads": 32,
                                                                 "num_key_value_heads": 8}},
    "text_config without heads": {"model_type": "llava", "text_config": {"model_type": "llama"}},
    # sub-configs that lean on their config class's defaults (transformers builds them; vLLM reads the object)
    "llava-hf/llava-1.5-7b-hf": {
        "architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "image_token_index": 32000,
        "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
                        "max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05,
                        "torch_dtype": "float16", "vocab_size": 32064},
        "vision_config": {"hidden_size": 1024, "model_type": "clip_vision_model", "num_attention_heads": 16}},
    "llava text_config without model_type": {"model_type": "llava", "text_config": {"num_key_value_heads": 4}},
    "llava without text_config": {"model_type": "llava", "vision_config": {"model_type": "clip_vision_model"}},
    "google/gemma-3-4b-it": {"model_type": "gemma3", "text_config": {
        "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
        "sliding_window": 1024}, "vision_config": {"model_type": "siglip_vision_model"}},
    "gemma3 text_config naming another type": {"model_type": "gemma3", "text_config": {"model_type": "llama"}},
    "mistral3 text_config without window": {"model_type": "mistral3", "text_config": {
        "model_type": "mistral", "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 40}},
    "qwen2_vl flat": {"model_type": "qwen2_vl", "num_attention_heads": 28, "num_key_value_heads": 4,
                      "num_hidden_layers": 28, "sliding_window": 32768, "use_sliding_window": False},
    "gemma3_text without KV heads": {"model_type": "gemma3_text", "num_attention_heads": 16, "num_hidden_layers": 48},
    "mistral without window": {"model_type": "mistral", "num_attention_heads": 32, "num_key_value_heads": 8},
    "unknown composite, no heads": {"model_type": "acme_vlm", "text_config": {"model_type": "acme_text",
                                                                              "num_key_value_heads": 8}},
    "unknown text type in llava": {"model_type": "llava", "text_config": {"model_type": "acme_text"}},
    "llava over a class without heads": {"model_type": "llava", "text_config": {"model_type": "mamba"}},
    "null kv field": {"model_type": "llama", "num_attention_heads": 32, "num_kv_heads": None,
                      "num_key_value_heads": 8},
    "step3p5 groups": {"model_type": "step3p5", "num_attention_heads": 64, "num_attention_groups": 8},
    "nemotron-nas": {"model_type": "nemotron-nas", "num_attention_heads": 64, "block_configs": [
        {"attention": {"no_op": True, "n_heads_in_group": None}},
        {"attention": {"no_op": False, "n_heads_in_group": 8}}]},
    "kimi_k2": {"model_type": "kimi_k2", "num_attention_heads": 64, "num_key_value_heads": 64, "kv_lora_rank": 512},
    "glm4_moe_lite": {"model_type": "glm4_moe_lite", "num_attention_heads": 20, "num_key_value_heads": 20,
                      "kv_lora_rank": 512},
    "deepseek_v3 without MLA": {"model_type": "deepseek_v3", "num_attention_heads": 128, "kv_lora_rank": None},
    # convertors of their own (0.19.0 -, 0.24.0 -) read sub-configs pdlint does not model: the generic fields lie
    "cohere_asr": {"model_type": "cohere_asr", "num_attention_heads": 8, "num_key_value_heads": 8,
                   "encoder": {"n_heads": 16}, "transf_decoder": {"config_dict": {"num_attention_heads": 16,
                                                                                  "hidden_size": 1024}}},
    "moss_audio": {"model_type": "moss_audio", "num_attention_heads": 8,
                   "language_config": {"num_attention_heads": 32, "num_key_value_heads": 4, "num_hidden_layers": 2}},
}


def _transformers() -> Any:
    """transformers' CONFIG_MAPPING (the test extra pins the version tools/config_defaults.py read), or None."""
    try:
        from transformers import CONFIG_MAPPING
    except ImportError:
        return None
    return CONFIG_MAPPING


_MAPPING = _transformers()
_VLLM_OWN = config_defaults_tool.vllm_registered(list(ROOTS.values()))


def hf_config(data: dict[str, Any]) -> Any:
    """config.json as vLLM holds it: the object transformers' config class builds (its defaults filled in, a
    composite's text_config built into the class it picks), for the model types transformers has and vLLM does
    not register a class of its own for; a plain stand-in (Cfg) for the others."""
    model_type = data.get("model_type")
    if _MAPPING is None or model_type in _VLLM_OWN or model_type not in _MAPPING:
        return Cfg(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _MAPPING[model_type](**{k: v for k, v in data.items() if k != "model_type"})


class Cfg:
    """A stand-in for transformers' PretrainedConfig over a config.json dict: attributes, attribute_map aliases,
    sub-configs as configs, and the Qwen2/Qwen3 config classes nulling sliding_window when use_sliding_window is
    false (transformers' own __init__, which vLLM 0.10.1+ relies on)."""

    def __init__(self, data: dict[str, Any]) -> None:
        data = dict(data)
        if "use_sliding_window" in data and not data["use_sliding_window"]:
            data["sliding_window"] = None
        aliases = model_types.ATTRIBUTE_MAP.get(data.get("model_type"), {})  # type: ignore[arg-type]
        for standard, own in aliases.items():
            if own in data:
                data.setdefault(standard, data[own])
        self.__dict__["_data"] = {k: Cfg(v) if isinstance(v, dict) and k != "attn_config" or
                                  isinstance(v, dict) and data.get("model_type") == "dbrx" else
                                  [Cfg(b) if isinstance(b, dict) else b for b in v] if isinstance(v, list) else v
                                  for k, v in data.items()}

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_data"][name]
        except KeyError:
            if name == "name_or_path":  # every PretrainedConfig has it (Qwen3_5ModelArchConfigConvertor reads it)
                return ""
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:  # a plain dict field (CohereAsrConfig's encoder, transf_decoder)
        return self.__dict__["_data"][key]

    def __delattr__(self, name: str) -> None:  # vLLM strips MiMo-V2's attention_chunk_size (0.21.0 -)
        self.__dict__["_data"].pop(name, None)

    def get_text_config(self) -> Any:  # transformers' PretrainedConfig.get_text_config
        found = [n for n in model_types.TEXT_CONFIG_NAMES if self.__dict__["_data"].get(n) is not None]
        if len(found) > 1:
            raise ValueError(found)
        return getattr(self, found[0]) if found else self


def _classes(root: Path, relpath: str, env: dict[str, Any]) -> dict[str, Any]:
    """The classes and MODEL_ARCH_CONFIG_CONVERTORS of relpath, with decorators and annotations dropped."""
    tree = ast.parse((root / relpath).read_text(encoding="utf-8"))
    keep: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            node.decorator_list = []
            node.body = [n for n in node.body if not isinstance(n, ast.AnnAssign)] or [ast.Pass()]
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef):
                    fn.decorator_list, fn.returns = [], None
                    for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
                        arg.annotation = None
            keep.append(node)
        elif isinstance(node, ast.FunctionDef):  # module helpers the convertors call
            node.decorator_list, node.returns = [], None
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                arg.annotation = None
            keep.append(node)
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MODEL_ARCH_CONFIG_CONVERTORS":
            keep.append(node)
    namespace = dict(env)
    exec(compile(ast.Module(body=keep, type_ignores=[]), relpath, "exec"), namespace)  # noqa: S102
    return namespace


def _constant(root: Path, relpath: str, name: str) -> Any:
    tree = ast.parse((root / relpath).read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(
            node, ast.Assign) else None
        if getattr(target, "id", "") == name and node.value is not None:
            return ast.literal_eval(node.value)
    return None


def _compress_ratios(root: Path) -> Any:
    path = "vllm/transformers_utils/deepseek_v4_utils.py"
    if not (root / path).exists():
        return None
    return vllm_source.lift(root, path, {"get_compress_ratios"})["get_compress_ratios"]


def _vllm(release: Release) -> Any:
    """A function config dict -> (heads, kv heads, MLA, sliding window) computed by release's own code."""
    root = ROOTS[release]
    envs = types.SimpleNamespace(VLLM_MLA_DISABLE=False)
    text_fn = vllm_source.lift(root, "vllm/transformers_utils/config.py", {"get_hf_text_config"})["get_hf_text_config"]
    if release >= R("0.14.0"):
        utils = vllm_source.lift(root, "vllm/config/utils.py", {"getattr_iter"}, env={"logger": None})
        env = {"envs": envs, "getattr_iter": utils["getattr_iter"], "PretrainedConfig": object,
               "final": lambda f: f, "logger": None, "get_compress_ratios": _compress_ratios(root),
               "CONFIG_FIELD_ALIASES": _constant(root, "vllm/transformers_utils/config.py", "CONFIG_FIELD_ALIASES")}
        conv = _classes(root, "vllm/transformers_utils/model_arch_config_convertor.py", env)
        model = "vllm/config/model.py"
        window = vllm_source.lift(root, model, {"get_sliding_window"}, "ModelConfig")["get_sliding_window"]

        def run(data: dict[str, Any]) -> tuple[Any, ...]:
            hf = hf_config(data)
            text = text_fn(hf)
            klass = conv["MODEL_ARCH_CONFIG_CONVERTORS"].get(data.get("model_type"), conv["ModelArchConfigConvertorBase"])
            c = klass(hf, text)
            w = window(types.SimpleNamespace(hf_text_config=text))
            return (c.get_total_num_attention_heads(), c.get_total_num_kv_heads(), c.is_deepseek_mla(),
                    None if (w == 0 and release >= R("0.33.0")) else w)
        return run
    model = next(p for p in ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")
                 if (root / p).exists() and vllm_source.has(root, p, "get_total_num_kv_heads", "ModelConfig"))
    names = {"get_total_num_kv_heads", "is_deepseek_mla"}
    window_name = "get_hf_config_sliding_window" if release <= R("0.10.0") else "get_sliding_window"
    fns = vllm_source.lift(root, model, names | {window_name}, "ModelConfig", env={"envs": envs})

    def run_old(data: dict[str, Any]) -> tuple[Any, ...]:
        hf = hf_config(data)
        me = types.SimpleNamespace(hf_config=hf, hf_text_config=text_fn(hf),
                                   is_attention_free=data.get("model_type") in ("mamba", "falcon_mamba"))
        # ModelConfig.get_num_attention_heads: getattr(hf_text_config, "num_attention_heads", 0)
        return (getattr(me.hf_text_config, "num_attention_heads", 0), fns["get_total_num_kv_heads"](me),
                fns["is_deepseek_mla"](me), fns[window_name](me))
    return run_old


def _dropped(configs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Real composite configs with a text_config field taken out: the class default must stand in for it."""
    found = {}
    for name, data in configs.items():
        text = data.get("text_config")
        if isinstance(text, dict) and data.get("model_type") in ("llama4", "qwen3_vl", "qwen3_vl_moe", "gemma4"):
            for field in ("num_key_value_heads", "num_attention_heads", "sliding_window"):
                if field in text:
                    found[f"{name} without text_config.{field}"] = {
                        **data, "text_config": {k: v for k, v in text.items() if k != field}}
    return found


_AIC_CONFIGS = _aiconfigurator()
CONFIGS = {**_AIC_CONFIGS, **_dropped(_AIC_CONFIGS), **SHAPES}


@pytest.mark.parametrize(("name", "first"), [("cohere_asr", "0.19.0"), ("moss_audio", "0.24.0")])
def test_a_model_type_with_its_own_convertor_is_unknown(name: str, first: str) -> None:
    """From the release its convertor appears, pdlint does not read the generic fields; before, vLLM does too."""
    for release in KNOWN:
        ours = model_config.derive(SHAPES[name], release)
        facts = (ours.heads, ours.kv_heads)
        assert facts == ((None, None) if release >= R(first) else (8, 8)), (release, facts)


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_pdlint_derives_what_vllm_derives(release: Release) -> None:
    assert len(CONFIGS) > 60 or len(CONFIGS) == len(SHAPES)
    vllm = _vllm(release)
    wrong = []
    for name, data in CONFIGS.items():
        ours = model_config.derive(data, release)
        try:
            theirs = vllm(data)
        except (AttributeError, AssertionError, ValueError, RuntimeError, KeyError, TypeError) as exc:
            if ours.error is None and ours.kv_heads is not None:
                wrong.append(f"{name}: vLLM fails ({type(exc).__name__}: {exc}), pdlint says {ours}")
            continue
        if ours.error is not None or ours.kv_heads is None and data.get("model_type") in model_types.UNMODELLED.at(release):
            wrong.append(f"{name}: vLLM derives {theirs}, pdlint: {ours.error or 'unknown'}") if ours.error else None
            continue
        mine = (ours.heads, ours.kv_heads, ours.mla, ours.sliding_window)
        if mine != tuple(theirs):
            wrong.append(f"{name}: vLLM {theirs}, pdlint {mine}")
    assert not wrong, "\n".join(wrong)

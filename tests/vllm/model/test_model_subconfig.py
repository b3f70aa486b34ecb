"""A composite model's text config read as vLLM reads it: the transformers config object, whose class fills in what
config.json omits (vllm/config_defaults, data/config_defaults.json from tools/config_defaults.py).

vLLM's get_hf_text_config (vllm/transformers_utils/config.py) checks hasattr(config.get_text_config(),
"num_attention_heads") on the object LlavaConfig / Gemma3Config / Llama4Config builds; a class pdlint has no
defaults for makes the facts unknown (the model-facts warning), never an error. The per-release differential is
tests/vllm/model/test_vllm_model_config.py (its SHAPES and the real configs with a field taken out, against each release's
lifted code on transformers' own objects).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import vllm_source
from test_model_facts_sources import _hub, _inventory, _lint
from test_vllm_model_config import _AIC_CONFIGS

from pdlint.finding import Finding

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import config_defaults as tool  # the table's generator lives in tools/

# llava-hf/llava-1.5-7b-hf's config.json (its text_config leans on LlamaConfig: no heads, no KV heads, no layers)
LLAVA = {"architectures": ["LlavaForConditionalGeneration"], "ignore_index": -100, "image_token_index": 32000,
         "model_type": "llava", "pad_token_id": 32001, "projector_hidden_act": "gelu",
         "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
                         "max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05,
                         "torch_dtype": "float16", "vocab_size": 32064},
         "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.36.0.dev0",
         "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
                           "model_type": "clip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 24,
                           "patch_size": 14, "projection_dim": 768, "vocab_size": 32000},
         "vision_feature_layer": -2, "vision_feature_select_strategy": "default", "vocab_size": 32064}
# a Gemma 3 config whose text_config leaves heads and KV heads to Gemma3TextConfig (8 and 4)
GEMMA3 = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
          "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                          "num_hidden_layers": 34, "sliding_window": 1024},
          "vision_config": {"model_type": "siglip_vision_model", "num_attention_heads": 16}}


def _run(tmp_path: Path, repo: str, config: dict[str, Any], tp: int) -> list[Finding]:
    _hub(tmp_path / "hub", repo, config)
    return _lint(_inventory(tmp_path, repo, tp=tp), {"HF_HUB_CACHE": str(tmp_path / "hub")})


def _at(tmp_path: Path, host: str) -> tuple[str, int, int]:
    """The file:line:col of host's vllm_tensor_parallel_size value in _inventory's hosts.yml."""
    lines = (tmp_path / "inv" / "hosts.yml").read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{host}:"))
    return "hosts.yml", number + 1, lines[number].index("vllm_tensor_parallel_size: ") + 28


def _seen(found: list[Finding]) -> list[tuple[str, str, str, int | None, int | None]]:
    return sorted((f.rule, f.severity, Path(f.origin.file).name, f.origin.line, f.origin.column) for f in found)


@pytest.mark.parametrize(("repo", "config", "tp", "heads", "kv"), [
    ("llava-hf/llava-1.5-7b-hf", LLAVA, 3, 32, 32),   # LlamaConfig: 32 heads, KV heads = heads
    ("google/gemma-3-4b-it", GEMMA3, 3, 8, 4),         # Gemma3TextConfig: 8 heads, 4 KV heads
])
def test_a_text_config_class_fills_the_heads(tmp_path: Path, repo: str, config: dict[str, Any], tp: int,
                                             heads: int, kv: int) -> None:
    found = _run(tmp_path, repo, config, tp)
    assert not [f for f in found if f.rule == "model-facts"]  # no "vLLM stops with a ValueError", no warning
    expected = []
    for host in ("p1", "d1"):
        _name, line, col = _at(tmp_path, host)
        expected += [("tp[heads]", "error", "hosts.yml", line, col), ("tp[kv-heads]", "error", "hosts.yml", line, col)]
    assert _seen([f for f in found if f.rule.startswith("tp[")]) == sorted(expected)
    messages = {f.rule: f.message for f in found if f.origin.line == _at(tmp_path, "p1")[1]}
    assert messages["tp[heads]"].startswith(f"{heads} attention heads (from ")
    assert messages["tp[heads]"].endswith(f"config.json, as vLLM 0.33.0 derives it) are not divisible by TP {tp}")
    assert messages["tp[kv-heads]"].startswith(f"TP {tp} cannot split the model's {kv} KV heads (from ")


def test_a_real_config_without_its_kv_heads_gets_the_class_default(tmp_path: Path) -> None:
    """Llama-4-Scout's real config.json (aiconfigurator-core) with text_config.num_key_value_heads taken out:
    Llama4Config builds Llama4TextConfig, whose default is 8 (not the 40 heads), so TP 5 cannot split them."""
    name = "meta-llama--Llama-4-Scout-17B-16E-Instruct"
    if name not in _AIC_CONFIGS:
        pytest.skip("aiconfigurator-core cannot be fetched (offline)")
    config = json.loads(json.dumps(_AIC_CONFIGS[name]))
    del config["text_config"]["num_key_value_heads"]
    found = _run(tmp_path, "meta-llama/Llama-4-Scout-17B-16E-Instruct", config, 5)
    _name, line, col = _at(tmp_path, "p1")
    [kv] = [f for f in found if f.rule == "tp[kv-heads]" and f.origin.line == line]
    assert (kv.severity, kv.origin.column) == ("error", col)
    assert kv.message.startswith("TP 5 cannot split the model's 8 KV heads (from ")
    assert not [f for f in found if f.rule in ("tp[heads]", "model-facts")]  # 40 heads over TP 5 is fine


def test_an_unknown_text_config_class_is_a_warning(tmp_path: Path) -> None:
    config = {"model_type": "acme_vlm", "text_config": {"model_type": "acme_text", "num_key_value_heads": 8}}
    found = _run(tmp_path, "acme/vlm", config, 3)
    lines = (tmp_path / "inv" / "hosts.yml").read_text(encoding="utf-8").splitlines()
    assert _seen(found) == [("model-facts", "warning", "hosts.yml", 2, lines[1].index('"acme/vlm"') + 1)]
    message = found[0].message
    assert message.startswith("model 'acme/vlm': attention heads, KV heads, MLA flag unknown (looked in: ")
    assert ("text_config has no num_attention_heads and pdlint does not know the defaults of its config class "
            "(model_type 'acme_text', in 'acme_vlm')") in message
    assert message.endswith("TP and KV-head rules are skipped")


def test_a_text_config_class_without_heads_is_the_error_vllm_stops_with(tmp_path: Path) -> None:
    found = _run(tmp_path, "org/odd", {"model_type": "llava", "text_config": {"model_type": "mamba"}}, 2)
    [error] = [f for f in found if f.severity == "error"]
    assert (error.rule, Path(error.origin.file).name) == ("model-facts", "config.json")
    assert error.message == ("text_config has no num_attention_heads (nor has the mamba config class): vLLM 0.33.0 "
                             "stops with a ValueError in get_hf_text_config (vllm/transformers_utils/config.py)")


def test_the_committed_table_is_the_generated_one() -> None:
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != tool.TRANSFORMERS:
        pytest.skip(f"the table is read from transformers {tool.TRANSFORMERS}")
    from pdlint.vllm.releases import KNOWN

    table = tool.text(tool.generate(list(vllm_source.roots(KNOWN).values())))
    assert table == tool.TABLE.read_text(encoding="utf-8"), "run `python tools/config_defaults.py`"

"""memory[*]: weights and one max_model_len sequence of KV cache against the GPU's memory, release by release."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from test_vllm_memory import Config as _Config
from test_vllm_memory import spec as _spec
from vllm_source import lift, roots

from pdlint.topology import gpus
from pdlint.topology.types import Instance, ModelFacts
from pdlint.vllm.model import memory, memory_text
from pdlint.vllm.releases import KNOWN, R, Release

GIB = 1 << 30
LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"


def _hosts(top: dict[str, Any], **hosts: dict[str, Any]) -> str:
    lines = ["all:", f"  vars: {json.dumps(top)}", "  hosts:"]
    lines += [f"    {name}: {json.dumps(own)}" for name, own in hosts.items()]
    return "\n".join(lines) + "\n"


def _found(findings: list[Any], rule: str) -> list[Any]:
    return [f for f in findings if f.rule == rule]


def _at(hosts: str, line: int, key: str) -> tuple[int, int]:
    """(line, column) of key's value on that line of hosts (1-based, as findings give them)."""
    text = hosts.splitlines()[line - 1]
    return line, text.index(f'"{key}": ') + len(f'"{key}": ') + 1


# --- the GPU's memory --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spelling", "name"), [
    ("H100-SXM", "H100-SXM"), ("NVIDIA H100 80GB HBM3", "H100-SXM"), ("h100_sxm", "H100-SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100-40GB"), ("a100-80gb", "A100-80GB"), ("AMD Instinct MI300X", "MI300X"),
    ("nvidia l40s", "L40S"), ("NVIDIA H100 NVL", "H100-NVL"), ("GB200", "GB200"),
])
def test_gpu_spellings(spelling: str, name: str) -> None:
    found = gpus.find(spelling)
    assert found is not None and found.name == name


def test_every_gpu_cites_its_source() -> None:
    for gpu in gpus.listing():
        assert gpu.memory > 16 * GIB and gpu.kind and len(gpu.source) > 30, gpu


@pytest.mark.parametrize(("written", "meant"), [
    ("H100", "H100-SXM, H100-PCIe or H100-NVL"), ("A100", "A100-40GB or A100-80GB"), ("mi300", "MI300X"),
    ("L40", "L40S"),
])
def test_unknown_gpu_type_says_which_was_meant(lint, written: str, meant: str) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat"}, p1={"vllm_pd_role": "prefill"},
                   d1={"vllm_pd_role": "decode", "vllm_host_gpu_type": written})
    [hit] = _found(lint(hosts), "memory[gpu-type]")
    assert hit.message == f"vllm_host_gpu_type {written!r} is not a GPU pdlint knows, so its memory is unknown"
    assert hit.hint is not None and hit.hint.startswith(f"did you mean {meant}?")
    assert (hit.origin.line, hit.origin.column) == _at(hosts, 5, "vllm_host_gpu_type") and hit.hosts == ("d1",)


def test_memory_in_gib_wins_over_the_type(lint) -> None:
    """160 GiB written on an H100 host: the 70B model's weights fit at TP 1, the KV cache for 8k tokens too."""
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_max_model_len": 8192},
                   p1={"vllm_pd_role": "prefill", "vllm_host_gpu_type": "H100-SXM", "vllm_host_gpu_memory_gib": 160},
                   d1={"vllm_pd_role": "decode", "vllm_host_gpu_type": "H100-SXM"})
    assert [f.hosts for f in lint(hosts) if f.rule.startswith("memory")] == [("d1",)]


# --- the rule, at the line ---------------------------------------------------------------------------------------


def test_llama70_tp1_is_an_error_at_the_tp_line(lint) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_host_gpu_type": "H100-SXM"},
                   p1={"vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 1},
                   d1={"vllm_pd_role": "decode", "vllm_tensor_parallel_size": 4})
    [hit] = [f for f in lint(hosts) if f.rule.startswith("memory")]
    assert hit.rule == "memory[weights]" and hit.severity == "error" and hit.hosts == ("p1",)
    assert hit.message.startswith(f"{LLAMA70}'s weights take 131.42 GiB per rank at TP 1 x PP 1, all of the "
                                  "73.28 GiB a worker may use (79.65 GiB x gpu_memory_utilization 0.92): vLLM 0.33.0 "
                                  'stops with "No available memory for the cache blocks.')
    assert hit.hint is not None and hit.hint.startswith("use TP 2 (65.71 GiB of weights per rank)")
    assert (hit.origin.line, hit.origin.column) == _at(hosts, 4, "vllm_tensor_parallel_size")


@pytest.mark.parametrize(("version", "util", "said"), [
    ("0.33.0", None, "To serve at least one request with the model's max seq len (131072), (20.0 GiB KV cache is "
                     "needed, which is larger than the available KV cache memory (7.56 GiB). Based on the available "
                     "memory, the estimated maximum model length is 49568. Try increasing"),
    ("0.12.0", None, "To serve at least one request with the models's max seq len (131072), (20.00 GiB KV cache is "
                     "needed, which is larger than the available KV cache memory (5.97 GiB). Based on the available "
                     "memory, the estimated maximum model length is 39152. Try increasing"),
    ("0.8.5", 0.95, "To serve at least one request with the models's max seq len (131072), (20.00 GiB KV cache is "
                    "needed, which is larger than the available KV cache memory (9.96 GiB). Based on the available "
                    "memory,  Try increasing"),
])
def test_llama70_tp2_long_context_names_the_length_that_fits(lint, version: str, util: float | None,
                                                             said: str) -> None:
    own: dict[str, Any] = {"vllm_pd_role": "decode", "vllm_tensor_parallel_size": 2, "vllm_max_model_len": 131072}
    if util is not None:
        own["vllm_gpu_memory_utilization"] = util
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_host_gpu_type": "H100-SXM",
                    "vllm_version": version},
                   p1={"vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 4}, d1=own)
    [hit] = [f for f in lint(hosts) if f.rule.startswith("memory")]
    assert hit.rule == "memory[kv-cache]" and hit.hosts == ("d1",)
    assert hit.message.startswith(f"vLLM {version} refuses to start: {said}")
    longest = said.split("length is ")[1].split(".")[0] if "length is" in said else None
    assert hit.hint is not None and (longest is None or hit.hint.startswith(f"set vllm_max_model_len to at most {longest}"))
    assert (hit.origin.line, hit.origin.column) == _at(hosts, 5, "vllm_max_model_len")


@pytest.mark.parametrize(("model", "gpu", "tp", "clean"), [
    (LLAMA70, "H100-SXM", 4, True), (LLAMA70, "A100-80GB", 4, True), (LLAMA70, "L40S", 4, True), (LLAMA70, "L40S", 2, False),
    ("meta-llama/Llama-3.1-8B-Instruct", "L4", 1, False), ("meta-llama/Llama-3.1-8B-Instruct", "L40S", 1, True),
    ("Qwen/Qwen3-32B", "H200", 1, True), ("Qwen/Qwen3-32B", "L40S", 1, False),
])
def test_other_models_and_gpus(lint, model: str, gpu: str, tp: int, clean: bool) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": model, "vllm_host_gpu_type": gpu,
                    "vllm_tensor_parallel_size": tp, "vllm_max_model_len": 32768},
                   p1={"vllm_pd_role": "prefill"}, d1={"vllm_pd_role": "decode"})
    memory_hits = {f.rule for f in lint(hosts) if f.rule.startswith("memory")}
    assert (not memory_hits) is clean, memory_hits
    if not clean:
        assert memory_hits <= {"memory[weights]", "memory[kv-cache]", "memory[margin]"}


def test_margin_is_a_warning(lint) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_host_gpu_type": "H100-SXM",
                    "vllm_tensor_parallel_size": 2, "vllm_max_model_len": 32768, "vllm_gpu_memory_utilization": 0.9},
                   p1={"vllm_pd_role": "prefill"}, d1={"vllm_pd_role": "decode"})
    hits = _found(lint(hosts), "memory[margin]")
    assert [h.hosts for h in hits] == [("d1", "p1")] and {h.severity for h in hits} == {"warning"}
    assert "0.97 GiB is left of the 71.68 GiB a worker may use" in hits[0].message


def test_unknown_gpu_memory_gives_nothing(lint) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70}, p1={"vllm_pd_role": "prefill"},
                   d1={"vllm_pd_role": "decode"})
    assert not [f for f in lint(hosts) if f.rule.startswith("memory")]


def test_fp8_kv_cache_halves_the_need() -> None:
    base = Instance("h", None, "d", "decode", "h", "h", "0.33.0", model=LLAMA70, tp=2, gpu_type="H100-SXM",
                    facts=_facts(), sizing={"max_model_len": 131072})
    fp8 = Instance("h", None, "d", "decode", "h", "h", "0.33.0", model=LLAMA70, tp=2, gpu_type="H100-SXM",
                   facts=_facts(), sizing={"max_model_len": 131072}, kv_cache_dtype="fp8")
    one, other = memory.fit(base), memory.fit(fp8)
    assert one is not None and other is not None and one.per_token == 2 * (other.per_token or 0) == 163840


def _facts(**over: Any) -> ModelFacts:
    from pdlint.topology import facts

    return facts.known(LLAMA70) if not over else ModelFacts(**over)


# --- vLLM's own code, release by release ------------------------------------------------------------------------

ROOTS = roots(KNOWN)


def _instance(release: Release, tp: int, length: int, facts: ModelFacts, **more: Any) -> Instance:
    return Instance("h", None, "d", "decode", "h", "h", release.text, model="m", tp=tp, gpu_type="H100-SXM",
                    facts=facts, sizing={"max_model_len": length, **more.pop("sizing", {})}, **more)


_MODELS = {
    "llama70": ModelFacts(heads=64, kv_heads=8, mla=False, ssm=False, layers=80, layer_kinds=("full",) * 80,
                          head_size=128, weight_bytes=141107412992, max_len=131072),
    "mla": ModelFacts(heads=128, kv_heads=128, mla=True, ssm=False, layers=61, layer_kinds=("full",) * 61,
                      head_size=576, weight_bytes=300 * GIB, max_len=163840),
}


@pytest.mark.releases
@pytest.mark.parametrize("release", KNOWN, ids=str)
@pytest.mark.parametrize(("model", "tp", "length"), [("llama70", 2, 131072), ("llama70", 4, 65536),
                                                     ("mla", 8, 163840)])
def test_kv_need_is_the_release_spec_arithmetic(release: Release, model: str, tp: int, length: int) -> None:
    root = ROOTS[release]
    inst = _instance(release, tp, length, _MODELS[model])
    found = memory.fit(inst)
    assert found is not None and found.layers
    facts = _MODELS[model]
    heads = 1 if facts.mla else max(1, (facts.kv_heads or 0) // tp)
    spec = _spec(root, "full", 16, heads, facts.head_size or 0, 2, None, bool(facts.mla))
    theirs = spec.max_memory_usage_bytes(_Config(length, 2048)) * len(found.layers)
    assert found.needed(length) == theirs


@pytest.mark.releases
@pytest.mark.parametrize("release", [r for r in KNOWN if r >= R("0.9.0")], ids=str)
def test_sliding_layer_need_is_the_release_spec_arithmetic(release: Release) -> None:
    root = ROOTS[release]
    facts = ModelFacts(heads=32, kv_heads=8, mla=False, ssm=False, layers=2, layer_kinds=("sliding", "full"),
                       sliding_window=4096, head_size=64, max_len=131072)
    found = memory.fit(_instance(release, 1, 131072, facts, sizing={"max_num_batched_tokens": 8192}))
    assert found is not None and found.layers
    if dict(found.layers).get("sliding") is None:
        pytest.skip("the hybrid KV cache manager is off in this release: both layers are full attention")
    mine = found.needed(131072)
    full = _spec(root, "full", 16, 8, 64, 2, None, False).max_memory_usage_bytes(_Config(131072, 8192))
    sliding = _spec(root, "sliding", 16, 8, 64, 2, 4096, False).max_memory_usage_bytes(_Config(131072, 8192))
    assert mine == full + sliding


def _their_message(root: Path, release: Release, needed: int, available: int, length: int,
                   estimate: int) -> str:
    utils = "vllm/v1/core/kv_cache_planning.py" if release >= R("0.33.0") else "vllm/v1/core/kv_cache_utils.py"
    env: dict[str, Any] = {"GiB_bytes": GIB, "format_gib": lambda b: f"{round(b / GIB, 2)}"}
    if release >= R("0.14.0"):
        check = lift(root, utils, {"_check_enough_kv_cache_memory"}, env=env)["_check_enough_kv_cache_memory"]
        call = lambda: check(available, lambda: needed, length, lambda _a: estimate)  # noqa: E731
    else:
        spec = type("Spec", (), {"max_memory_usage_bytes": lambda self, cfg: needed})()
        names = {"check_enough_kv_cache_memory"}
        env["estimate_max_model_len"] = lambda *_a: estimate
        env["max_memory_usage_bytes"] = lambda cfg, specs: sum(s.max_memory_usage_bytes(cfg) for s in specs)
        check = lift(root, utils, names, env=env)["check_enough_kv_cache_memory"]
        call = lambda: check(_Config(length, 2048), {"layer": spec}, available)  # noqa: E731
    with pytest.raises(ValueError) as raised:
        call()
    return str(raised.value)


@pytest.mark.releases
@pytest.mark.parametrize("release", KNOWN, ids=str)
@pytest.mark.parametrize(("needed", "available", "length", "estimate"), [
    (20 * GIB, int(5.97 * GIB), 131072, 39104), (7 * GIB + 12345, 3 * GIB, 32768, 14000), (GIB, 1000, 8192, 0),
])
def test_message_is_the_release_own(release: Release, needed: int, available: int, length: int,
                                    estimate: int) -> None:
    theirs = _their_message(ROOTS[release], release, needed, available, length, estimate)
    assert memory_text.not_enough(release, length, needed, available, estimate) == theirs


@pytest.mark.releases
@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_no_memory_message_is_the_release_own(release: Release) -> None:
    theirs = _their_message(ROOTS[release], release, GIB, 0, 8192, 0)
    assert memory_text.no_memory(release) == theirs


def test_gpu_page_is_the_table() -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "gpus.md"
    assert page.read_text(encoding="utf-8") == gpus.markdown(), "regenerate docs/gpus.md from gpus.markdown()"


# --- explain and `pdlint models` show the figures ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_explain_shows_each_engine_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    from pdlint.cli import main

    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_host_gpu_type": "H100-SXM"},
                   p1={"vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 4},
                   d1={"vllm_pd_role": "decode", "vllm_tensor_parallel_size": 2, "vllm_max_model_len": 131072})
    (tmp_path / "hosts.yml").write_text(hosts)
    main(["explain", str(tmp_path / "hosts.yml"), "--format", fmt])
    out = capsys.readouterr().out
    if fmt == "json":
        engines = {e["name"]: e["memory"] for d in json.loads(out)["deployments"] for e in d["engines"]}
        assert engines["d1"] == {"gpu_gib": 79.65, "budget_gib": 73.28, "utilization": 0.92, "weights_gib": 65.71,
                                 "kv_bytes_per_token": 163840, "kv_capacity_tokens": 49568,
                                 "max_model_len": 131072, "fits_max_model_len": 49568}
        assert engines["p1"]["kv_bytes_per_token"] == 81920 and engines["p1"]["weights_gib"] == 32.85
    else:
        flat = " ".join(out.split())
        assert ("GPU 79.65 GiB x 0.92 = budget 73.28 GiB; weights 65.71 GiB per rank; KV 163,840 bytes per token "
                "per rank; KV capacity 49,568 tokens; max_model_len 131,072, 49,568 fits") in flat


def test_explain_json_has_no_memory_where_the_gpu_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pdlint.cli import main

    (tmp_path / "hosts.yml").write_text(_hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70},
                                               p1={"vllm_pd_role": "prefill"}, d1={"vllm_pd_role": "decode"}))
    main(["explain", str(tmp_path / "hosts.yml"), "--format", "json"])
    assert all("memory" not in e for d in json.loads(capsys.readouterr().out)["deployments"] for e in d["engines"])


@pytest.mark.parametrize(("model", "weights", "kv"), [
    (LLAMA70, "141,107,412,992 bytes (131.42 GiB;", "327,680 bytes per token at TP 1 in bf16 (K and V"),
    ("meta-llama/Llama-3.1-8B-Instruct", "16,060,522,496 bytes", "131,072 bytes per token"),
    ("deepseek-ai/DeepSeek-V3", "unknown", "70,272 bytes per token at TP 1 in bf16 (one MLA latent"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "unknown", "unknown"),
])
def test_models_shows_weights_and_kv_per_token(capsys: pytest.CaptureFixture[str], model: str, weights: str,
                                               kv: str) -> None:
    from pdlint.cli import main

    assert main(["models", model]) == 0
    out = capsys.readouterr().out
    assert f"  weights: {weights}" in out and f"  KV cache: {kv}" in out


@pytest.mark.parametrize(("more", "checked"), [
    ({}, True), ({"vllm_enable_expert_parallel": True, "vllm_data_parallel_size": 8}, False),
    ({"vllm_quantization": "fp8"}, False), ({"vllm_dtype": "float32"}, False),
])
def test_weights_not_checked_where_the_share_is_not_weights_over_tp_pp(lint, more: dict[str, Any],
                                                                      checked: bool) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": "Qwen/Qwen3-235B-A22B", "vllm_host_gpu_type": "H200",
                    "vllm_tensor_parallel_size": 2, **more},
                   p1={"vllm_pd_role": "prefill"}, d1={"vllm_pd_role": "decode"})
    assert bool(_found(lint(hosts), "memory[weights]")) is checked


@pytest.mark.parametrize(("total", "error"), [(141107412992, False), (60 * GIB, False), (200 * GIB, True),
                                              (None, False)])
def test_weights_from_the_safetensors_index_beside_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               total: int, error: bool) -> None:
    """A model directory's config.json and model.safetensors.index.json: the index's metadata.total_size is the
    weights (the model table's lower bound is not used), divided by TP."""
    model = tmp_path / "llama70"
    model.mkdir()
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 8192,
              "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 80,
              "intermediate_size": 28672, "vocab_size": 128256, "max_position_embeddings": 8192,
              "torch_dtype": "bfloat16"}
    (model / "config.json").write_text(json.dumps(config))
    if total is not None:  # else the parameter count of config.json: 141,107,412,992 bytes, 65.71 GiB at TP 2
        (model / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                        "weight_map": {}}))
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": str(model), "vllm_host_gpu_type": "H100-SXM",
                    "vllm_tensor_parallel_size": 2}, p1={"vllm_pd_role": "prefill"},
                   d1={"vllm_pd_role": "decode", "vllm_tensor_parallel_size": 1})
    from pdlint.cli import main

    (tmp_path / "hosts.yml").write_text(hosts)
    main([str(tmp_path / "hosts.yml"), "--format", "json"])
    hits = [f for f in json.loads(capsys.readouterr().out) if f["rule"].startswith("memory")]
    on_p1 = [f for f in hits if f["hosts"] == ["p1"]]
    assert bool([f for f in on_p1 if f["rule"] == "memory[weights]"]) is error, hits
    if error:
        assert f"weights take {(total or 0) / 2 / GIB:.2f} GiB per rank at TP 2" in on_p1[0]["message"]
    else:
        assert not on_p1
    # d1 at TP 1: the index's weights (or the parameter count's) against one GPU
    assert bool([f for f in hits if f["hosts"] == ["d1"] and f["rule"] == "memory[weights]"]) is \
        ((total or 141107412992) > 73 * GIB)


@pytest.mark.parametrize(("kinds", "group"), [
    # get_kv_cache_groups' own examples (v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size):
    # 10 full + 20 sliding: groups of 10; gpt-oss-20b + eagle, 12 sliding + 13 full: groups of 13; Gemma 3's 5:1
    (("full",) * 10 + ("sliding",) * 20, 10), (("sliding",) * 12 + ("full",) * 13, 13),
    ((("sliding",) * 5 + ("full",)) * 4, 4), (("full",) * 32, 32),
])
def test_null_block_is_one_block_of_the_largest_group(kinds: tuple[str, ...], group: int) -> None:
    """From 0.29.0 the check holds back one block of the largest KV cache group, not one of every layer."""
    page = 16 * 8 * 64 * 2 * 2
    found = memory.Fit(R("0.33.0"), 80 * GIB, "", 0.9, 72 * GIB, None, 60 * GIB, "", None, 8192, "",
                       tuple((kind, page) for kind in kinds))
    assert found.pool_block() == group * page and found.available == 12 * GIB - group * page
    older = dataclasses.replace(found, release=R("0.28.0"))
    assert older.available == 12 * GIB


def test_capacity_counts_the_full_attention_layers(lint) -> None:
    """gpt-oss-20b: its 12 sliding-window layers hold 128 tokens a request, so the decode's capacity in tokens is its
    KV memory over the 12 full-attention layers' pages (43,680 tokens in 1 GiB), not over all 24 (21,840)."""
    page = 16 * 8 * 64 * 2 * 2
    tokens = (GIB - 12 * page) // (12 * page) * 16  # less the null block: one block of a 12-layer group
    for batch, warned in ((32768, False), (65536, True)):
        hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": "openai/gpt-oss-20b", "vllm_host_gpu_type": "L4",
                        "vllm_kv_cache_memory_bytes": "1G", "vllm_max_model_len": 8192},
                       p1={"vllm_pd_role": "prefill", "vllm_max_num_batched_tokens": batch}, d1={"vllm_pd_role": "decode"})
        hits = [f for f in lint(hosts) if f.rule == "memory[kv-capacity]"]
        assert [h.message.split(",")[0] for h in hits] == ([f"decode KV cache holds {tokens} tokens"] if warned else [])


@pytest.mark.parametrize(("model", "gpu", "small", "long", "fits"), [
    (LLAMA70, "A100-80GB", 1, 2, 4), ("meta-llama/Llama-3.1-405B-Instruct", "MI300X", 4, None, 8),
    ("meta-llama/Llama-3.1-8B-Instruct", "L4", None, 1, 2), ("Qwen/Qwen3-32B", "NVIDIA L40S", 1, None, 2),
])
def test_too_small_too_long_and_right_on_other_models(lint, model: str, gpu: str, small: int | None,
                                                      long: int | None, fits: int) -> None:
    """The same three engines on other models and GPUs: the weights at the TP line, one config-length sequence at
    the TP line (max_model_len unset) naming the length that fits, and nothing at a TP large enough."""
    tps = {"small": small, "long": long, "fits": fits}
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": model, "vllm_host_gpu_type": gpu},
                   **{name: {"vllm_pd_role": "prefill" if name == "fits" else "decode", "vllm_tensor_parallel_size": tp}
                      for name, tp in tps.items() if tp is not None})
    hits = {f.hosts: f for f in lint(hosts) if f.rule.startswith("memory")}
    assert set(hits) == {(name,) for name in ("small", "long") if tps[name] is not None}, hits
    for line, name in enumerate((n for n, tp in tps.items() if tp is not None), start=4):
        if name == "fits":
            continue
        hit = hits[(name,)]
        assert hit.severity == "error" and (hit.origin.line, hit.origin.column) == _at(hosts, line,
                                                                                      "vllm_tensor_parallel_size")
        if name == "small":
            assert hit.rule == "memory[weights]" and hit.message.startswith(f"{model}'s weights take ")
            assert f"per rank at TP {small} x PP 1, all of the " in hit.message
        else:
            assert hit.rule == "memory[kv-cache]" and hit.message.startswith(
                "vLLM 0.33.0 refuses to start: To serve at least one request with the model's max seq len (131072)")
            longest = hit.message.split("the estimated maximum model length is ")[1].split(".")[0]
            assert hit.hint is not None and hit.hint.startswith(
                f"set vllm_max_model_len to at most {longest} (max_model_len unset: the model's config's)")
            assert 0 < int(longest) < 131072


@pytest.mark.parametrize(("offload", "tp", "error"), [(None, 1, True), (100, 1, False), (40, 1, True), ("70", 1, False),
                                                    (15, 2, False), (0, 2, True)])
def test_cpu_offload_keeps_part_of_each_gpu_weights_in_cpu_memory(lint, offload: Any, tp: int, error: bool) -> None:
    """--cpu-offload-gb is per GPU: 131.42 GiB at TP 1 less 100 (or 70) fits an H100's 73.28 with an 8192-token
    sequence, less 40 does not; at TP 2 the 65.71 GiB share leaves too little for a 131072-token sequence's 20 GiB
    unless 15 GiB of it stays in CPU memory."""
    own: dict[str, Any] = {"vllm_pd_role": "decode", "vllm_tensor_parallel_size": tp,
                           "vllm_max_model_len": 8192 if tp == 1 else 131072}
    if offload is not None:
        own["vllm_cpu_offload_gb"] = offload
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_host_gpu_type": "H100-SXM"},
                   p1={"vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 4}, d1=own)
    hits = [f for f in lint(hosts) if f.rule in ("memory[weights]", "memory[kv-cache]")]
    assert bool(hits) is error, hits
    if error:
        assert hits[0].rule == ("memory[weights]" if tp == 1 else "memory[kv-cache]") and hits[0].hosts == ("d1",)


@pytest.mark.parametrize("dcp", [2, 4, "{{ dcp }}"])
def test_decode_context_parallel_kv_is_not_judged(lint, dcp: Any) -> None:
    """DCP shards each sequence's KV cache over its ranks: pdlint does not size that, so it does not judge it."""
    for size, expected in ((1, ["memory[kv-cache]"]), (dcp, [])):
        hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": LLAMA70, "vllm_host_gpu_type": "H100-SXM"},
                       p1={"vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 4},
                       d1={"vllm_pd_role": "decode", "vllm_tensor_parallel_size": 2, "vllm_max_model_len": 131072,
                           "vllm_decode_context_parallel_size": size})
        assert [f.rule for f in lint(hosts) if f.rule.startswith("memory[")] == expected

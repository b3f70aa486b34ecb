"""Chunked local attention (Llama 4) in whole inventories: HMA as VllmConfig.__post_init__ resolves it, per release.

Models other than the outside pass's Scout: a Maverick-like config.json (no no_rope_layers: transformers' default
pattern) and a hand-written one (12 layers, a RoPE-free layer every third, chunk 4096), each in a model directory
the inventory names. vllm/model/chunked.py has the spans; test_vllm_chunked.py holds them against each release's code.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pdlint.engine import core as engine
from pdlint.finding import Finding
from pdlint.load import select
from pdlint.load.model_files import Files
from pdlint.vllm.model import chunked

ENV = chunked.ENV
MAVERICK = {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
            "text_config": {"model_type": "llama4_text", "num_attention_heads": 40, "num_key_value_heads": 8,
                            "head_dim": 128, "hidden_size": 5120, "num_hidden_layers": 48,
                            "attention_chunk_size": 8192, "interleave_moe_layer_step": 2}}
HANDMADE = {"model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"], "num_attention_heads": 16,
            "num_key_value_heads": 4, "hidden_size": 2048, "num_hidden_layers": 12, "attention_chunk_size": 4096,
            "no_rope_layer_interval": 3}
MODELS = {"maverick": MAVERICK, "handmade": HANDMADE}


def _lint(tmp_path: Path, model: str, version: str, prefill: str = "", decode: str = "", env: str = "",
          pp: int = 1, kv: str = "{kv_connector: NixlConnector, kv_role: kv_both}") -> list[Finding]:
    """A NIXL pair of the model at version; prefill/decode: extra group_vars lines; env: extra vllm_env items."""
    if model in MODELS:
        (tmp_path / "models" / model).mkdir(parents=True, exist_ok=True)
        (tmp_path / "models" / model / "config.json").write_text(json.dumps(MODELS[model]), encoding="utf-8")
    inv = tmp_path / "inv"
    (inv / "group_vars").mkdir(parents=True, exist_ok=True)
    (inv / "hosts.yml").write_text(textwrap.dedent("""\
        all:
          children:
            l4_prefill: {hosts: {gpu-p1: {ansible_host: 10.0.0.1}}}
            l4_decode: {hosts: {gpu-d1: {ansible_host: 10.0.0.2}}}
        """), encoding="utf-8")
    (inv / "group_vars" / "all.yml").write_text(textwrap.dedent(f"""\
        vllm_pd_deployment: l4
        vllm_model: {model if model not in MODELS else "../models/" + model}
        vllm_version: "{version}"
        vllm_tensor_parallel_size: 4
        vllm_pipeline_parallel_size: {pp}
        vllm_kv_transfer_config: {kv}
        vllm_env: {{VLLM_NIXL_SIDE_CHANNEL_HOST: "{{{{ ansible_host }}}}"{env}}}
        """), encoding="utf-8")
    (inv / "group_vars" / "l4_prefill.yml").write_text("vllm_pd_role: prefill\n" + prefill, encoding="utf-8")
    (inv / "group_vars" / "l4_decode.yml").write_text("vllm_pd_role: decode\n" + decode, encoding="utf-8")
    hosts = select.load([str(inv)])
    found = engine.lint(hosts, files=Files.of([str(inv)], {"HF_HUB_CACHE": "/nonexistent"})).findings
    return [f for f in found if f.severity == "error"]


def _where(f: Finding) -> str:
    return f"{Path(f.origin.file).name}:{f.origin.line}:{f.origin.column}"


def _said(found: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.rule, _where(f), f.message) for f in found]


OFF = "vllm_disable_hybrid_kv_cache_manager: true\n"
ON = "vllm_disable_hybrid_kv_cache_manager: false\n"


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("version", "env"), [("0.13.0", ""), ("0.33.0", f', {ENV}: "0"'),
                                               ("0.26.0", f", {ENV}: '00'")])
def test_chunked_attention_turns_hma_off_on_both_sides(tmp_path: Path, model: str, version: str, env: str) -> None:
    """Prefill off by its flag, decode unset: vLLM turns the decode's off too (0.10.1 - 0.13.0 by default, from 0.14.0
    when the variable is 0), so the NIXL hashes agree and nothing is wrong."""
    assert _said(_lint(tmp_path, model, version, prefill=OFF, env=env)) == []


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("version", "env", "said"), [
    ("0.13.0", "", f"{ENV} is unset (false by default in vLLM 0.13.0)"),
    ("0.33.0", f', {ENV}: "0"', f"{ENV}=0"),
    ("0.20.0", f", {ENV}: '0'", f"{ENV}=0"),
])
def test_an_explicit_enable_is_post_init_s_value_error(tmp_path: Path, model: str, version: str, env: str,
                                                       said: str) -> None:
    chunk = MODELS[model].get("text_config", MODELS[model])["attention_chunk_size"]
    found = _said(_lint(tmp_path, model, version, prefill=OFF, decode=ON, env=env))
    assert found == [("connector[config]", "l4_decode.yml:2:1", (
        f"vllm_disable_hybrid_kv_cache_manager is false, but the model uses chunked local attention "
        f"(attention_chunk_size {chunk}) and {said}, so vLLM {version} VllmConfig.__post_init__ turns it off: "
        "ValueError \"Hybrid KV cache manager was explicitly enabled but is not supported in this configuration.\""))]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("version", ["0.22.0", "0.33.0"])
def test_with_the_variable_at_its_default_of_1_hma_stays_on(tmp_path: Path, model: str, version: str) -> None:
    """From 0.14.0 envs.py defaults the variable to 1, so the unset decode runs HMA (NIXL is SupportsHMA from
    0.22.0) while the prefill turned it off: the handshake hash differs (the issue's text says otherwise)."""
    found = _said(_lint(tmp_path, model, version, prefill=OFF))
    assert [(rule, where) for rule, where, _m in found] == [("pd-mismatch[hma]", "l4_prefill.yml:2:1")]
    assert "off on prefill but on on decode" in found[0][2]


@pytest.mark.parametrize("value", ["true", "on", "1.0"])
def test_a_variable_int_cannot_read_is_a_value_error(tmp_path: Path, value: str) -> None:
    found = _said(_lint(tmp_path, "handmade", "0.33.0", env=f", {ENV}: '{value}'"))
    line = (tmp_path / "inv" / "group_vars" / "all.yml").read_text(encoding="utf-8").splitlines()[6]
    assert found == [("connector[config]", f"all.yml:7:{line.index(repr(value)) + 1}", (
        f"{ENV}={value!r} is not an integer: for a model with attention_chunk_size vLLM 0.33.0 reads it with "
        "bool(int(...)) in VllmConfig.__post_init__, which raises ValueError"))]


@pytest.mark.parametrize("model", MODELS)
def test_nixl_pp_with_hma_on_sees_the_chunked_layers(tmp_path: Path, model: str) -> None:
    """Chunked local layers are ChunkedLocalAttentionSpec, not full attention: NIXL's `_is_hma_required` holds, so
    PP > 1 with HMA on raises in 0.26.0 - 0.30.0 (vllm/connectors/nixl/pp.py PP_HMA)."""
    found = _said(_lint(tmp_path, model, "0.26.0", pp=2))
    said = ("pipeline_parallel_size 2 with the hybrid KV cache manager on a model with chunked local attention layers: "
            "NIXL in vLLM 0.26.0 raises NotImplementedError")
    assert [(rule, where) for rule, where, m in found if said in m] == [("tp-ratio[nixl]", "all.yml:5:30")] * 2, found
    off = _said(_lint(tmp_path, model, "0.26.0", pp=2, prefill=OFF, decode=OFF))
    assert off and not [m for _r, _w, m in off if "hybrid KV cache manager on" in m], off


def test_the_layer_kinds(tmp_path: Path) -> None:
    from pdlint.vllm.model import layers as model_layers
    from pdlint.vllm.releases import R

    assert model_layers.run_length(model_layers.layer_kinds(HANDMADE, R("0.33.0")) or ()) == \
        "chunked*2 full*1 chunked*2 full*1 chunked*2 full*1 chunked*2 full*1"
    assert model_layers.layer_kinds(MAVERICK, R("0.10.0")) == ("full",) * 48  # no ChunkedLocalAttention yet




@pytest.mark.parametrize(("version", "kinds"), [
    ("0.33.0", "chunked*2 full*1 chunked*2 full*1 chunked*2 full*1 chunked*2 full*1"),
    ("0.10.0", "full*12"),
])
def test_pdlint_models_shows_the_chunked_layers(tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str,
                                                kinds: str) -> None:
    from pdlint import cli

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(HANDMADE), encoding="utf-8")
    assert cli.main(["models", str(tmp_path / "m"), "--vllm-version", version]) == 0
    out = capsys.readouterr().out
    assert f"  layer_kinds     {kinds}\n  attention_chunk_size 4096\n" in out, out


@pytest.mark.parametrize("name", ["meta-llama/Llama-4-Maverick-17B-128E-Instruct", "meta-llama/Llama-4-Scout-17B-16E"])
def test_the_model_table_knows_llama_4_s_chunked_attention(tmp_path: Path, name: str) -> None:
    """By name alone (no config.json): pdlint's table rows, generated from the real config.json files."""
    found = _said(_lint(tmp_path, name, "0.13.0", prefill=OFF, decode=ON))
    assert [(rule, where) for rule, where, _m in found] == [("connector[config]", "l4_decode.yml:2:1")], found
    assert "attention_chunk_size 8192" in found[0][2]
    assert _said(_lint(tmp_path, name, "0.13.0", prefill=OFF)) == []


@pytest.mark.parametrize(("version", "fails"), [("0.9.2", False), ("0.10.2", True), ("0.11.0", False)])
def test_pp_stages_of_chunked_layers_only_before_0_11(tmp_path: Path, version: str, fails: bool) -> None:
    """PP 16 puts layers 0-2 (chunked only) and 3-5 (chunked and full) on different stages: per-worker groups differ
    (AssertionError) from 0.10.1, the first release whose Llama 4 has ChunkedLocalAttention, until 0.11.0."""
    found = _said(_lint(tmp_path, "meta-llama/Llama-4-Scout-17B-16E-Instruct", version, pp=16))
    stage = [(rule, where) for rule, where, m in found if "get different KV cache specs" in m]
    assert stage == ([("connector[config]", "all.yml:5:30")] if fails else []), found


def test_an_unrendered_variable_is_never_guessed(tmp_path: Path) -> None:
    """The variable decides HMA for a chunked model: a template pdlint cannot render leaves HMA unknown, so neither
    the hash mismatch nor the explicit-enable ValueError is claimed."""
    for decode in ("", ON):
        found = _lint(tmp_path, "maverick", "0.33.0", prefill=OFF, decode=decode, env=f", {ENV}: '{{{{ nope }}}}'")
        assert [f.rule for f in found if f.rule in ("pd-mismatch[hma]", "connector[config]")] == [], _said(found)


def _moriio(role: str, read: str) -> str:
    return (f"vllm_kv_transfer_config: {{kv_connector: MoRIIOConnector, kv_role: {role}, kv_connector_extra_config: "
            f"{{http_port: 8000{read}}}}}\n")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("read", ["", ", read_mode: 'true'"])
@pytest.mark.parametrize("version", ["0.30.0", "0.33.0"])
def test_moriio_under_hma_refuses_chunked_groups(tmp_path: Path, model: str, read: str, version: str) -> None:
    """MoRIIO is SupportsHMA from 0.30.0, so an unset flag runs HMA on a chunked model (the variable defaults to 1),
    and MoRIIOConnectorScheduler.__init__ lists ChunkedLocalAttentionSpec as unsupported, in either mode."""
    sides = {"prefill": _moriio("kv_producer", read), "decode": _moriio("kv_consumer", read)}
    found = _said(_lint(tmp_path, model, version, **sides))
    col = sides["prefill"].index("{http_port") + 1
    assert [(rule, where) for rule, where, m in found if "ChunkedLocalAttentionSpec" in m] == \
        [("connector[config]", f"l4_decode.yml:2:{col}"), ("connector[config]", f"l4_prefill.yml:2:{col}")], found
    assert _said(_lint(tmp_path, model, version, env=f", {ENV}: '0'", **sides)) == []
    assert _said(_lint(tmp_path, model, "0.29.0", **sides)) == []


def test_explain_says_why_hma_is_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pdlint import cli

    _lint(tmp_path, "handmade", "0.13.0")
    capsys.readouterr()
    cli.main(["explain", str(tmp_path / "inv"), "--no-cache"])
    out = " ".join(capsys.readouterr().out.split())
    assert ("both sides: HMA off (the model uses chunked local attention (attention_chunk_size 4096) and "
            f"{ENV} is unset (false by default in vLLM 0.13.0), so vLLM 0.13.0 VllmConfig.__post_init__ turns it "
            "off) [config/vllm.py VllmConfig.__post_init__") in out, out
    assert "chunked local attention, 12 layers" in out and "8 chunked local + 4 full" in out, out

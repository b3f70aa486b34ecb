"""Model facts from config.json: a model directory, the Hugging Face cache, the config file's models: table.

A model absent from pdlint's table gets the verdicts vLLM's derivation of its config.json implies, for the
instance's release, with no model-facts warning; the facts say where they came from; an edited config.json is
seen by a cached run.
"""
from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pdlint import cli
from pdlint.config import files as configfile
from pdlint.config.configuration import DEFAULT, Config
from pdlint.engine import core as engine
from pdlint.finding import Finding
from pdlint.load import select
from pdlint.load.model_files import Files

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"
GQA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_attention_heads": 24,
       "num_key_value_heads": 4, "num_hidden_layers": 2}
RULES = ("tp[heads]", "tp[kv-heads]", "model-facts")


def _inventory(tmp_path: Path, model: str, tp: int = 6, extra: str = "") -> Path:
    path = tmp_path / "inv" / "hosts.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(f"""\
        all:
          vars: {{vllm_pd_deployment: chat, vllm_model: {json.dumps(model)}{extra}}}
          hosts:
            p1: {{vllm_pd_role: prefill, vllm_tensor_parallel_size: {tp}}}
            d1: {{vllm_pd_role: decode, vllm_tensor_parallel_size: {tp}}}
        """), encoding="utf-8")
    return path


def _hub(root: Path, repo: str, config: Mapping[str, Any], commit: str = COMMIT, ref: str = "main") -> None:
    """huggingface_hub's cache layout (file_download.hf_hub_download): the file a link into blobs/."""
    folder = root / ("models--" + repo.replace("/", "--"))
    blob = folder / "blobs" / f"{commit[:8]}-config"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_text(json.dumps(config), encoding="utf-8")
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / ref).write_text(commit, encoding="utf-8")
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(blob, snapshot), snapshot / "config.json")


def _lint(inventory: Path, env: Mapping[str, str] | None = None, config: Config = DEFAULT) -> list[Finding]:
    hosts = select.load([str(inventory)])
    return engine.lint(hosts, config, Files.of([str(inventory)], env or {"HF_HUB_CACHE": "/nonexistent"})).findings


def _rules(found: list[Finding]) -> list[str]:
    return sorted(f.rule for f in found if f.rule in RULES)


def _model_dir(base: Path, name: str, config: Mapping[str, Any]) -> None:
    (base / name).mkdir(parents=True)
    (base / name / "config.json").write_text(json.dumps(config), encoding="utf-8")


def test_a_model_directory_relative_to_the_inventory(tmp_path: Path) -> None:
    _model_dir(tmp_path / "inv", "models/fine-tune", GQA)
    found = _lint(_inventory(tmp_path, "models/fine-tune"))  # TP 6 > 4 KV heads: 6 % 4 cannot replicate
    assert _rules(found) == ["tp[kv-heads]", "tp[kv-heads]"]
    assert "config.json" in next(f.message for f in found if f.rule == "tp[kv-heads]")
    _model_dir(tmp_path, "abs", GQA)
    assert _rules(_lint(_inventory(tmp_path, str(tmp_path / "abs"), tp=4))) == []


def test_a_model_in_the_hugging_face_cache(tmp_path: Path) -> None:
    _hub(tmp_path / "hub", "my-org/private-13b", GQA)
    inventory = _inventory(tmp_path, "my-org/private-13b")
    assert _rules(_lint(inventory, {"HF_HUB_CACHE": str(tmp_path / "hub")})) == ["tp[kv-heads]"] * 2
    assert _rules(_lint(inventory, {"HF_HOME": str(tmp_path)})) == ["tp[kv-heads]"] * 2
    assert _rules(_lint(_inventory(tmp_path, "my-org/private-13b", tp=4),
                        {"HF_HUB_CACHE": str(tmp_path / "hub")})) == []


def test_vllm_revision_selects_the_snapshot(tmp_path: Path) -> None:
    _hub(tmp_path, "org/m", GQA)
    _hub(tmp_path, "org/m", {**GQA, "num_key_value_heads": 6}, commit=OTHER, ref="v2")
    env = {"HF_HUB_CACHE": str(tmp_path)}
    assert _rules(_lint(_inventory(tmp_path, "org/m"), env)) == ["tp[kv-heads]"] * 2
    for revision in ("v2", OTHER):
        assert _rules(_lint(_inventory(tmp_path, "org/m", extra=f", vllm_revision: {revision}"), env)) == []


def test_the_hub_layout_is_huggingface_hubs_own(tmp_path: Path) -> None:
    hub = pytest.importorskip("huggingface_hub")
    _hub(tmp_path, "org/m", GQA)
    theirs = hub.try_to_load_from_cache("org/m", "config.json", cache_dir=tmp_path)
    assert isinstance(theirs, str) and json.loads(Path(theirs).read_text()) == GQA


@pytest.mark.parametrize(("version", "expected"), [("0.9.2", ["tp[kv-heads]"] * 2), ("0.10.0", [])])
def test_an_mla_model_is_exempt_where_vllm_exempts_it(tmp_path: Path, version: str, expected: list[str]) -> None:
    """Kimi K2 is MLA from 0.10.0 (is_deepseek_mla's model types): before, its 24 KV heads cannot be replicated
    over TP 16."""
    config = {"model_type": "kimi_k2", "num_attention_heads": 64, "num_key_value_heads": 24, "kv_lora_rank": 512}
    _model_dir(tmp_path / "inv", "kimi", config)
    found = _lint(_inventory(tmp_path, "kimi", tp=16, extra=f", vllm_version: '{version}'"))
    assert _rules(found) == expected


def test_the_models_table_of_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "conf" / "cfgs").mkdir(parents=True)
    (tmp_path / "conf" / "cfgs" / "m.json").write_text(json.dumps(GQA), encoding="utf-8")
    (tmp_path / "conf" / ".pdlint.yaml").write_text(textwrap.dedent("""\
        models:
          Org/Listed: {num_attention_heads: 24, num_kv_heads: 4, is_mla: false}
          org/from-file: {config: cfgs/m.json}
        """), encoding="utf-8")
    config = configfile.read(tmp_path / "conf" / ".pdlint.yaml")
    for model in ("org/listed", "org/from-file"):
        found = _lint(_inventory(tmp_path, model), config=config)
        assert _rules(found) == ["tp[kv-heads]"] * 2, model
    found = _lint(_inventory(tmp_path, "org/from-file", tp=4), config=config)
    assert _rules(found) == []


def test_the_inventory_comes_first_and_each_fact_says_where_it_came_from(tmp_path: Path) -> None:
    _model_dir(tmp_path / "inv", "m", GQA)
    inventory = _inventory(tmp_path, "m", tp=4, extra=", vllm_model_num_kv_heads: 3")
    hosts = select.load([str(inventory)])
    result = engine.lint(hosts, DEFAULT, Files.of([str(inventory)], {}))
    facts = result.topology.instances[0].facts
    where = dict(facts.where)
    assert (facts.heads, facts.kv_heads, facts.mla) == (24, 3, False)
    assert where["kv_heads"] == "inventory" and "m/config.json" in where["heads"]
    assert "inventory" in facts.source and "config.json" in facts.source
    assert _rules(result.findings) == ["tp[kv-heads]"] * 2  # TP 4 over the inventory's 3 KV heads


def test_a_config_vllm_rejects_is_a_finding_at_that_file(tmp_path: Path) -> None:
    # LlavaConfig builds this text_config as a MambaConfig, which has no num_attention_heads at all
    _model_dir(tmp_path / "inv", "vl", {"model_type": "llava",
                                        "text_config": {"model_type": "mamba", "hidden_size": 64}})
    found = _lint(_inventory(tmp_path, "vl"))
    at_file = [f for f in found if f.origin.file.endswith("vl/config.json")]
    assert [(f.rule, f.severity) for f in at_file] == [("model-facts", "error")]
    assert "num_attention_heads" in at_file[0].message


def test_the_warning_lists_the_places_looked(tmp_path: Path) -> None:
    found = _lint(_inventory(tmp_path, "org/absent"), {"HF_HUB_CACHE": str(tmp_path / "hub")})
    warning = next(f for f in found if f.rule == "model-facts")
    for place in ("vllm_model_*", "directory", "Hugging Face cache", "models--org--absent", "pdlint's model table"):
        assert place in warning.message


def test_without_files_the_table_alone(tmp_path: Path) -> None:
    """engine.lint without files (the filters, the rule tests) reads no file: the inventory, the config's table,
    pdlint's table."""
    _model_dir(tmp_path / "inv", "m", GQA)
    found = engine.lint(select.load([str(_inventory(tmp_path, "m"))])).findings
    assert _rules(found) == ["model-facts"]


def test_the_cli_sees_an_edited_or_downloaded_config_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PDLINT_NO_CACHE", "")
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    inventory = str(_inventory(tmp_path, "org/later", tp=4))

    def run() -> str:
        cli.main([inventory, "--format", "json"])
        return capsys.readouterr().out

    assert "model-facts" in run()
    assert any((tmp_path / "cache").iterdir())  # the result was stored: the next runs would reuse it
    _hub(tmp_path / "hub", "org/later", {**GQA, "num_key_value_heads": 6})  # downloaded after the first run
    assert "tp[kv-heads]" in run() and "model-facts" not in run()
    blob = next((tmp_path / "hub").rglob("blobs/*"))
    blob.write_text(json.dumps({**GQA, "num_key_value_heads": 8, "max_position_embeddings": 8192}))
    assert "tp[kv-heads]" not in run()  # edited: 8 KV heads split over TP 4


def test_explain_says_where_the_facts_came_from(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _model_dir(tmp_path / "inv", "m", GQA)
    inventory = str(_inventory(tmp_path, "m", tp=4))
    assert cli.main(["explain", inventory, "-f", "json"]) == 0
    [model] = json.loads(capsys.readouterr().out)["deployments"][0]["models"]
    assert (model["model"], model["heads"], model["kv_heads"], model["mla"]) == ("m", 24, 4, False)
    assert model["source"].startswith(str(tmp_path / "inv" / "m" / "config.json"))
    assert model["engines"] == ["p1", "d1"]
    assert cli.main(["explain", str(_inventory(tmp_path, "org/absent", tp=4))]) == 0
    assert "looked in: the inventory's vllm_model_* variables; directory" in capsys.readouterr().out


def test_a_vaulted_model_id_is_masked_in_the_places_looked(tmp_path: Path) -> None:
    from pdlint.hostvars import HostVars

    hosts = [HostVars(name, {"vllm_pd_deployment": "chat", "vllm_pd_role": role, "vllm_tensor_parallel_size": 4,
                             "vllm_model": "secret-org/secret-model"}, secrets=frozenset({("vllm_model",)}))
             for name, role in (("p1", "prefill"), ("d1", "decode"))]
    found = engine.lint(hosts, DEFAULT, Files(tmp_path, {"HF_HUB_CACHE": str(tmp_path / "hub")})).findings
    warning = next(f for f in found if f.rule == "model-facts")
    assert "Hugging Face cache" in warning.message and "secret" not in warning.message

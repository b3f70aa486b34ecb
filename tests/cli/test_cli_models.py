"""`pdlint models PATH|ID`: a config.json's facts as the release named derives them, from a file, a model directory
or the Hugging Face cache; other words still filter pdlint's table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdlint import cli

KIMI = {"model_type": "kimi_k2", "num_attention_heads": 64, "num_key_value_heads": 64, "kv_lora_rank": 512,
        "num_hidden_layers": 61}
COMMIT = "c" * 40


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("  ") and
            not line.startswith("  from")}


@pytest.mark.parametrize(("version", "mla"), [("0.9.2", "false"), ("0.10.0", "true")])
def test_a_file_or_directory_as_the_release_derives_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str], version: str,
                                                       mla: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kimi").mkdir()
    (tmp_path / "kimi" / "config.json").write_text(json.dumps(KIMI))
    for word in ("kimi", "kimi/config.json"):
        code, out, _ = _run(["models", word, "--vllm-version", version], capsys)
        assert code == 0 and f"as vLLM {version} derives it" in out
        assert _rows(out) == {"model_type": "kimi_k2", "heads": "64", "kv_heads": "64", "mla": mla,
                              "sliding_window": "none", "layers": "61", "layer_kinds": "full*61"}


def test_a_cached_model_by_its_id_and_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "models--org--m"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "v1").write_text(COMMIT)
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / "snapshots" / COMMIT / "config.json").write_text(json.dumps({**KIMI, "model_type": "llama"}))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(["models", "org/m", "--revision=v1"], capsys)
    assert code == 0 and _rows(out)["mla"] == "false" and COMMIT in out
    code, _, err = _run(["models", "org/m"], capsys)  # no refs/main: not cached, and not in pdlint's table
    assert code == 2 and "Hugging Face cache" in err


def test_a_config_vllm_rejects_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llava", "text_config": {"model_type": "mamba", "hidden_size": 8}}))
    code, out, _ = _run(["models", str(bad)], capsys)
    assert code == 1 and "no num_attention_heads" in out


@pytest.mark.parametrize("argv", [["--vllm-version"], ["--vllm-version", "latest"], ["--revision="]])
def test_bad_options_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["models", *argv], capsys)
    assert code == 2 and "pdlint: error:" in err


def test_a_config_json_shows_each_layers_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A hybrid's layer mix as the release reads it: NemotronH's hybrid_override_pattern, 0.9.1 on."""
    monkeypatch.chdir(tmp_path)
    config = {"model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"], "num_attention_heads": 32,
              "num_key_value_heads": 8, "num_hidden_layers": 6, "hybrid_override_pattern": "M-M*-E"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out, _ = _run(["models", "config.json", "--vllm-version", "0.20.0"], capsys)
    assert code == 0 and "  layer_kinds     mamba*1 none*1 mamba*1 full*1 none*2\n" in out

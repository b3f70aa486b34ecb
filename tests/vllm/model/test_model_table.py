"""The built-in model table is generated (tools/model_table.py) from real config.json files: regenerating it from
the cached wheels gives the committed file, and `pdlint models` lists every row with its source."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import vllm_source

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import model_table  # the generator lives in tools/

from pdlint import cli
from pdlint.topology import facts
from pdlint.vllm.model import layers as model_layers

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code


def _committed() -> dict:
    return json.loads(model_table.TABLE.read_text(encoding="utf-8"))


def test_the_committed_table_is_the_generated_one() -> None:
    table = model_table.generate(_committed(), vllm_source.CACHE)
    if table is None:
        pytest.skip(f"{model_table.AIC} or {model_table.TRANSFORMERS} cannot be fetched (offline); the table test "
                    "needs network once")
    assert model_table.text(table) == model_table.TABLE.read_text(encoding="utf-8"), \
        "run `python tools/model_table.py` (or fix the hand-edited row)"


def test_every_row_cites_a_real_config_or_says_it_has_none() -> None:
    for name, row in _committed().items():
        source = row["source"]
        assert source.startswith((f"{model_table.AIC}:", f"{model_table.TRANSFORMERS}:",
                                  "no real config.json")), name
        assert ("derived_by" in row) == (name in model_table.SOURCES), name


def test_transformers_defaults_are_read_statically() -> None:
    source = "class XConfig(P):\n    model_type = 'x'\n    def __init__(self, a=1, b=None, c=4096 * 32, **kw):\n" \
             "        pass\n"
    assert model_table.class_defaults(source, "XConfig") == {"model_type": "x", "a": 1, "b": None}


def test_the_table_knows_each_rows_layers() -> None:
    oss = facts.known("openai/gpt-oss-20b")
    assert oss.layers == 24 and oss.layer_kinds is not None and set(oss.layer_kinds) == {"sliding", "full"}
    qwen = facts.known("Qwen/Qwen3.5-35B-A3B")
    assert model_layers.stage_layers(qwen, 2, 1, {}) is not None
    assert "linear" in (model_layers.stage_layers(qwen, 2, 1, {}) or ())
    # Mistral-7B-v0.1 has a sliding window on every layer (v0.2 and v0.3 have none): its own row, not an alias
    assert facts.known("mistralai/Mistral-7B-v0.1").sliding_window == 4096
    assert facts.known("mistralai/Mistral-7B-Instruct-v0.3").sliding_window is None


def test_pdlint_models_lists_every_row_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    for name, row in _committed().items():
        assert name in out and row["source"] in out, name
    assert cli.main(["models", "gpt-oss-20b"]) == 0
    assert "sliding*1 full*1" in capsys.readouterr().out

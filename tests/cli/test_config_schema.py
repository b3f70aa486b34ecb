"""schemas/pdlint-config.schema.json is generated (`pdlint schema config`) and documents every models: key."""
from __future__ import annotations

from pathlib import Path

import pytest

from pdlint import cli
from pdlint.cli import config_schema
from pdlint.config.models import KEYS

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_config_schema_is_the_generated_one(capsys: pytest.CaptureFixture[str]) -> None:
    committed = (ROOT / "schemas" / "pdlint-config.schema.json").read_text(encoding="utf-8")
    assert committed == config_schema.dumps(), "run `pdlint schema config > schemas/pdlint-config.schema.json`"
    assert cli.main(["schema", "config"]) == 0
    assert capsys.readouterr().out == committed


def test_every_models_key_is_described() -> None:
    entry = config_schema.document()["properties"]["models"]["additionalProperties"]
    assert set(entry["properties"]) == set(KEYS)
    assert all(p["description"] for p in entry["properties"].values())
    assert entry["additionalProperties"] is False


def test_the_readme_links_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "schemas/pdlint-config.schema.json" in readme

"""--format sarif: valid SARIF 2.1.0, with what GitHub code scanning reads (rules, levels, repo-relative uris)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from conftest import write_tree
from test_rules_cli import run, seed

from pdlint.rules import REGISTRY

SCHEMAS = sorted((Path(__file__).parents[1] / "data" / "sarif").glob("*.json"))


def sarif(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code, out, err = run([*argv, "--format", "sarif"], capsys)
    assert err == ""
    return code, json.loads(out)


def test_uri_formats_are_checked() -> None:
    """The schema's "uri" format is only enforced when jsonschema has an RFC 3986 checker (the test extra)."""
    schema = {"type": "string", "format": "uri"}
    checker = jsonschema.Draft4Validator.FORMAT_CHECKER
    assert not jsonschema.Draft4Validator(schema, format_checker=checker).is_valid("not a uri")


def validate(log: dict) -> None:
    assert "sarif-schema-2.1.0.json" in {p.name for p in SCHEMAS}, "the official schema is not vendored"
    for path in SCHEMAS:
        schema = json.loads(path.read_text(encoding="utf-8"))
        validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
        errors = sorted(validator.iter_errors(log), key=str)
        assert not errors, f"{path.name}: {errors[0]}"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout whose inventory is in inventories/prod, linted from inside inventories/."""
    (tmp_path / ".git").mkdir()
    seed(tmp_path / "inventories" / "prod", 6)
    monkeypatch.chdir(tmp_path / "inventories")
    return tmp_path


def test_output_validates_against_the_sarif_schema(repo: Path, capsys) -> None:
    code, log = sarif(["prod"], capsys)
    assert code == 1
    validate(log)
    assert log["version"] == "2.1.0"


def test_driver_lists_every_rule_as_github_reads_it(repo: Path, capsys) -> None:
    _, log = sarif(["prod"], capsys)
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "pdlint" and driver["version"] and driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == list(REGISTRY)
    for rule in driver["rules"]:
        assert rule["name"].isalnum(), rule["name"]
        assert rule["shortDescription"]["text"] == REGISTRY[rule["id"]].summary
        assert len(rule["fullDescription"]["text"]) >= len(rule["shortDescription"]["text"])
        assert "PASS:" not in rule["fullDescription"]["text"] and "FAIL:" in rule["help"]["text"]
        assert rule["helpUri"].endswith("#what-pdlint-checks")
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")


def test_results_point_repo_relative_at_the_value(repo: Path, capsys) -> None:
    _, log = sarif(["prod"], capsys)
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    [moriio] = [r for r in run_["results"] if r["ruleId"] == "tp-ratio[moriio]"]
    assert rules[moriio["ruleIndex"]]["id"] == "tp-ratio[moriio]"
    assert moriio["level"] == "error"
    assert moriio["message"]["text"].startswith("decode TP 6 is not a multiple of prefill TP 4")
    physical = moriio["locations"][0]["physicalLocation"]
    # relative to the git root, not to the working directory (inventories/)
    assert physical["artifactLocation"] == {"uri": "inventories/prod/group_vars/decode.yml", "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 2, "startColumn": 28}
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    assert all(r["ruleIndex"] == list(REGISTRY).index(r["ruleId"]) for r in run_["results"])


def test_without_git_paths_are_relative_to_the_working_directory(tmp_path: Path, monkeypatch, capsys) -> None:
    seed(tmp_path / "inv", 6)
    monkeypatch.chdir(tmp_path)
    _, log = sarif(["inv"], capsys)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"inv/group_vars/decode.yml"}


def test_clean_inventory_is_a_valid_empty_run(repo: Path, capsys) -> None:
    seed(repo / "inventories" / "prod", 4)
    code, log = sarif(["prod"], capsys)
    assert code == 0 and log["runs"][0]["results"] == []
    validate(log)


def test_suppressed_results_carry_a_suppression(repo: Path, capsys) -> None:
    write_tree(repo / "inventories" / "prod", {"group_vars/all.yml": "pdlint_skip: [tp-ratio, tp]\n"})
    code, log = sarif(["prod", "--show-suppressed"], capsys)
    assert code == 0
    validate(log)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"tp-ratio[moriio]", "tp[heads]"}
    assert all(r["suppressions"] == [{"kind": "inSource", "justification": "pdlint_skip in the inventory"}]
               for r in results)
    _, plain = sarif(["prod"], capsys)
    assert plain["runs"][0]["results"] == []

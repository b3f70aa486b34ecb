"""Configuration: the select/ignore decision, finding the file, bad config as exit 2, CLI flags over config."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_tree
from test_rules_cli import run, seed

from pdlint.config.configuration import selected, severity_for
from pdlint.config.files import find


@pytest.mark.parametrize(("rule", "select", "ignore", "expected"), [
    ("gpu[count]", None, [], True),
    ("gpu[count]", None, ["gpu"], False),
    ("gpu[count]", None, ["gpu[count]"], False),
    ("gpu[count]", None, ["gpu[overlap]"], True),
    ("gpu[count]", ["gpu"], [], True),
    ("tp[heads]", ["gpu"], [], False),
    ("gpu[count]", ["gpu[count]"], ["gpu"], True),   # the more specific select wins
    ("gpu[count]", ["gpu"], ["gpu[count]"], False),  # the more specific ignore wins
    ("gpu[count]", ["gpu"], ["gpu"], False),         # a tie: ignore wins
    ("schema", ["schema"], [], True),
    ("schema", [], [], False),                       # an empty select selects nothing
])
def test_selected(rule: str, select: list[str] | None, ignore: list[str], expected: bool) -> None:
    assert selected(rule, select, ignore) is expected


def test_severity_override_prefers_the_rule_over_its_family() -> None:
    overrides = {"gpu": "warning", "gpu[count]": "info"}
    assert [severity_for(r, "error", overrides) for r in ("gpu[count]", "gpu[overlap]", "tp[heads]")] == \
        ["info", "warning", "error"]


def test_find_walks_up_to_the_git_root(tmp_path: Path) -> None:
    write_tree(tmp_path, {"outside/.pdlint.yaml": "ignore: [gpu]\n", "outside/repo/pyproject.toml": "[project]\n"})
    repo = tmp_path / "outside" / "repo"
    (repo / ".git").mkdir()
    (repo / "a" / "b").mkdir(parents=True)
    assert find(repo / "a" / "b") is None  # stops at the git root: the file above it is not read
    write_tree(repo, {"pyproject.toml": "[tool.pdlint]\nignore = ['gpu']\n"})
    assert find(repo / "a" / "b") == (repo / "pyproject.toml").resolve()
    write_tree(repo, {"a/.pdlint.yaml": "ignore: [tp]\n", "a/pyproject.toml": "[tool.pdlint]\n"})
    assert find(repo / "a" / "b") == (repo / "a" / ".pdlint.yaml").resolve()  # nearest; yaml before toml


def test_find_outside_git_reads_only_the_working_directory(tmp_path: Path) -> None:
    write_tree(tmp_path, {".pdlint.yaml": "ignore: [gpu]\n"})
    (tmp_path / "sub").mkdir()
    assert find(tmp_path / "sub") is None
    assert find(tmp_path) == (tmp_path / ".pdlint.yaml").resolve()


BAD = [
    (".pdlint.yaml", "selct: [gpu]\n", ".pdlint.yaml: selct: unknown key"),
    (".pdlint.yaml", "ignore: ['gpu[cuont]']\n", ".pdlint.yaml: ignore: unknown rule 'gpu[cuont]'"),
    (".pdlint.yaml", "ignore: 3\n", ".pdlint.yaml: ignore: expected a list of rule ids"),
    (".pdlint.yaml", "strict: yes please\n", ".pdlint.yaml: strict: expected true or false"),
    (".pdlint.yaml", "severity: {gpu: fatal}\n", ".pdlint.yaml: severity.gpu: expected one of error, warning, info"),
    (".pdlint.yaml", "severity: {nosuch: error}\n", ".pdlint.yaml: severity: unknown rule 'nosuch'"),
    (".pdlint.yaml", "vllm_version: 32\n", ".pdlint.yaml: vllm_version: expected a release"),
    (".pdlint.yaml", "- gpu\n", ".pdlint.yaml: config: expected a mapping"),
    (".pdlint.yaml", "ignore: [gpu]\nselect: [gpu\n", ".pdlint.yaml:3:1: cannot parse: expected ',' or ']'"),
    ("pyproject.toml", "[tool.pdlint]\nselect = 'gpu'\nignor = []\n", "pyproject.toml: tool.pdlint.ignor: unknown key"),
    ("pyproject.toml", "[tool.pdlint]\nstrict = 1\n", "pyproject.toml: tool.pdlint.strict: expected true or false"),
    ("pyproject.toml", "[tool.pdlint\n", "pyproject.toml: cannot read"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD)
def test_bad_config_is_exit_2_naming_file_and_key(tmp_path: Path, monkeypatch, capsys, name: str, text: str,
                                                   message: str) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    (tmp_path / name).write_text(text)
    code, out, err = run(["hosts.yml"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"pdlint: error: {message}"), err
    assert "Traceback" not in err


def test_missing_explicit_config_is_exit_2(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    code, _, err = run(["hosts.yml", "--config", "nope.yaml"], capsys)
    assert code == 2 and err.startswith("pdlint: error: nope.yaml: cannot read")


def rules(out: str) -> list[str]:
    return sorted(f["rule"] for f in json.loads(out))


@pytest.mark.parametrize(("config", "argv", "code", "found"), [
    ("", [], 1, ["tp-ratio[moriio]", "tp[heads]"]),
    ("ignore: [tp]\n", [], 1, ["tp-ratio[moriio]"]),
    ("ignore: [tp]\n", ["--ignore", "tp-ratio"], 1, ["tp[heads]"]),  # the flag replaces the config's list
    ("select: [tp]\n", [], 1, ["tp[heads]"]),
    ("select: [tp]\n", ["--select", "tp,tp-ratio"], 1, ["tp-ratio[moriio]", "tp[heads]"]),
    ("severity: {tp: warning, tp-ratio: info}\n", [], 0, ["tp-ratio[moriio]", "tp[heads]"]),
    ("severity: {tp: warning}\nignore: [tp-ratio]\nstrict: true\n", [], 1, ["tp[heads]"]),
    ("severity: {tp: warning}\nignore: [tp-ratio]\nstrict: true\n", ["--no-strict"], 0, ["tp[heads]"]),
    ("severity: {tp: warning}\nignore: [tp-ratio]\n", ["--strict"], 1, ["tp[heads]"]),
])
def test_config_and_flags(tmp_path: Path, monkeypatch, capsys, config: str, argv: list[str], code: int,
                          found: list[str]) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    (tmp_path / ".pdlint.yaml").write_text(config)
    got, out, err = run(["hosts.yml", "-f", "json", *argv], capsys)
    assert (got, rules(out)) == (code, found), err


def test_severity_override_shows_in_the_output(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    (tmp_path / "pyproject.toml").write_text("[tool.pdlint]\nseverity = {'tp[heads]' = 'warning'}\n")
    code, out, _ = run(["hosts.yml"], capsys)
    assert code == 1
    assert "tp[heads] [warning] 128 attention heads" in out
    assert out.splitlines()[-1].startswith("pdlint: 1 error, 1 warning in 2 hosts, 1 deployment; vLLM 0.33.0 assumed")


def test_default_vllm_version_reaches_hosts_that_do_not_set_one(tmp_path: Path, monkeypatch, capsys) -> None:
    write_tree(tmp_path, {
        "hosts.yml": """\
            all:
              vars:
                vllm_pd_deployment: chat
                vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
              hosts:
                p1: {vllm_pd_role: prefill, vllm_version: "0.32.0"}
                d1: {vllm_pd_role: decode}
            """,
        ".pdlint.yaml": "vllm_version: '0.31.1'\n",
    })
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(["hosts.yml", "-f", "json"], capsys)
    [mismatch] = [f for f in json.loads(out) if f["rule"] == "pd-mismatch[vllm-version]"]
    assert "0.31.1" in mismatch["message"] and "0.32.0" in mismatch["message"]
    (tmp_path / ".pdlint.yaml").write_text("vllm_version: '0.32.0'\n")
    code, out, _ = run(["hosts.yml", "-f", "json"], capsys)
    assert code == 1 and "pd-mismatch[vllm-version]" not in rules(out)  # nixl[side-channel-host] remains


def test_explicit_config_file_wins_over_discovery(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    (tmp_path / ".pdlint.yaml").write_text("ignore: [tp]\n")
    (tmp_path / "ci.yaml").write_text("ignore: [tp-ratio]\n")
    _, out, _ = run(["hosts.yml", "-f", "json", "--config", "ci.yaml"], capsys)
    assert rules(out) == ["tp[heads]"]


def test_unknown_rule_in_a_flag_is_exit_2(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    code, _, err = run(["hosts.yml", "--select", "tp,nope"], capsys)
    assert code == 2 and "--select: unknown rule 'nope'" in err


def test_readme_config_example_is_valid() -> None:
    import re
    import tomllib

    from conftest import ROOT

    from pdlint.config.configuration import parse

    [block] = re.findall(r"```toml\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    config = parse(tomllib.loads(block)["tool"]["pdlint"], "README.md", "tool.pdlint.")
    assert config.select and config.ignore and config.severity and config.vllm_version

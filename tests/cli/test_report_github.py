"""--format github: workflow commands with GitHub's escaping, chosen by itself inside GitHub Actions."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_rules_cli import run, seed

from pdlint.finding import Finding, Origin
from pdlint.report.github import command, escape_data, escape_property


@pytest.mark.parametrize(("text", "data", "prop"), [
    ("plain", "plain", "plain"),
    ("50%", "50%25", "50%25"),
    ("%0A", "%250A", "%250A"),  # an already-escaped-looking text stays literal
    ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
    ("file:line,col", "file:line,col", "file%3Aline%2Ccol"),
    ("tp-ratio[moriio]", "tp-ratio[moriio]", "tp-ratio[moriio]"),
    ("::error::x", "::error::x", "%3A%3Aerror%3A%3Ax"),
])
def test_escaping(text: str, data: str, prop: str) -> None:
    assert (escape_data(text), escape_property(text)) == (data, prop)


def test_command_escapes_each_part() -> None:
    f = Finding(Origin("inv/group_vars/a,b.yml", 3, 7), "port[collision]", "warning", "port 8000: 100% taken\nby two",
                "use 8001", ("h1", "h2"))
    assert command(f, f.origin.file) == (
        "::warning file=inv/group_vars/a%2Cb.yml,line=3,col=7,title=port[collision]::"
        "port 8000: 100%25 taken%0Aby two%0Ahint: use 8001%0Ahosts: h1, h2")


def test_info_is_a_notice_and_unknown_places_are_left_out() -> None:
    f = Finding(Origin(), "model-facts", "info", "m")
    assert command(f, None) == "::notice title=model-facts::m"
    no_column = Finding(Origin("x.yml", 4), "schema", "error", "m")
    assert command(no_column, "x.yml") == "::error file=x.yml,line=4,title=schema::m"


def test_cli_annotations_are_repo_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / ".git").mkdir()
    seed(tmp_path / "inventories" / "prod", 6)
    monkeypatch.chdir(tmp_path / "inventories")
    code, out, _ = run(["prod", "--format", "github"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("::error file=inventories/prod/group_vars/decode.yml,line=2,col=28,title=")
    assert lines[-1].startswith("pdlint: 2 errors in 2 hosts, 1 deployment")


@pytest.mark.parametrize(("env", "argv", "first"), [
    ("true", [], "::error "),
    ("true", ["--format", "text"], "group_vars/decode.yml:2:28: "),
    ("", [], "group_vars/decode.yml:2:28: "),
    ("false", [], "group_vars/decode.yml:2:28: "),
])
def test_github_format_is_chosen_in_github_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys,
                                                   env: str, argv: list[str], first: str) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    monkeypatch.setenv("GITHUB_ACTIONS", env)
    code, out, _ = run(["hosts.yml", *argv], capsys)
    assert code == 1 and out.startswith(first), out

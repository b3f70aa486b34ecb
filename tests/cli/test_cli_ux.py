"""The command line's edges: help that names every subcommand, closed pipes, unwritable outputs, explain's options."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, write_tree

from pdlint.cli import commands, main

PDLINT = Path(sys.executable).parent / "pdlint"
INVENTORY = {"hosts.yml": """\
    all:
      hosts:
        p1: {vllm_pd_role: prefill, vllm_pd_deployment: d, vllm_tensor_parallel_size: 3}
        d1: {vllm_pd_role: decode, vllm_pd_deployment: d}
    """}


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in commands.BY_NAME:  # the table main dispatches on
        assert f"  pdlint {name}" in out, name
    assert "write ./models (or\nmodels/) to check a folder named models" in out


# Each subcommand, and what only it prints (a test below holds this to the dispatch table).
RUNS = {
    "explain": (["explain", "hosts.yml"], "deployment d (vLLM"),
    "rules": (["rules", "tp"], "tp[heads] (error)\n"),
    "models": (["models", "Qwen/Qwen3-0.6B"], "Qwen/Qwen3-0.6B  16     8         false  false  28\n"),
    "versions": (["versions"], "pdlint applies the rules of these"),
    "schema": (["schema", "config"], '"$schema"'),
    "lsp": (["lsp", "--help"], "usage: pdlint lsp"),
}


def test_every_subcommand_is_run_below() -> None:
    assert set(RUNS) == set(commands.BY_NAME)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_subcommand_runs_beside_a_folder_of_its_name(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A repository root with models/ (config.json files) or rules/: the word is the subcommand, as --help says."""
    monkeypatch.chdir(write_tree(tmp_path, {**INVENTORY, f"{name}/hosts.yml": INVENTORY["hosts.yml"]}))
    argv, said = RUNS[name]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert said in captured.out and "no such file" not in captured.err, captured


@pytest.mark.parametrize("path", ["./models", "models/", "./rules"])
def test_the_path_form_of_a_subcommand_name_is_the_folder(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = path.strip("./")
    monkeypatch.chdir(write_tree(tmp_path, {f"{folder}/hosts.yml": INVENTORY["hosts.yml"]}))
    assert main(["--no-cache", "--strict", path]) == 1
    assert f"{folder}/hosts.yml:3:83: model-facts [warning]" in capsys.readouterr().out.replace("./", "")


@pytest.mark.parametrize(("argv", "meant"), [
    (["model", "show", "Qwen/Qwen3-0.6B"], "`pdlint models Qwen/Qwen3-0.6B`"),
    (["model", "deepseek-ai/DeepSeek-V3"], "`pdlint models deepseek-ai/DeepSeek-V3`"),
    (["rule", "tp"], "`pdlint rules tp`"),
    (["version"], "`pdlint versions` or `pdlint --version`"),
    (["explian", "--format", "json", "inv/"], "`pdlint explain --format json inv/`"),
    (["schemas", "config"], "`pdlint schema config`"),
])
def test_a_near_miss_suggests_the_subcommand(argv: list[str], meant: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"pdlint: error: {argv[0]}: no such subcommand, file or directory; "
                                       f"did you mean {meant}? (`pdlint --help` lists them)\n")


def test_a_near_miss_that_is_a_path_is_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(write_tree(tmp_path, {"model/hosts.yml": INVENTORY["hosts.yml"]}))
    assert main(["--no-cache", "--strict", "model"]) == 1
    assert "model/hosts.yml:3:83: model-facts [warning]" in capsys.readouterr().out
    assert main(["model", "show"]) == 2
    assert capsys.readouterr().err == "pdlint: error: show: no such file or directory\n"


@pytest.mark.parametrize("argv", [["lsp", "--help"], ["lsp", "-h"]])
def test_lsp_help_exits_0(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert "usage: pdlint lsp" in capsys.readouterr().out


def test_lsp_help_needs_no_pygls(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pygls", None)  # `import pygls` now raises ImportError
    monkeypatch.delitem(sys.modules, "pdlint.lsp.server", raising=False)
    assert main(["lsp", "--help"]) == 0
    assert main(["lsp", "--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


# A value for each option's metavar (a new metavar fails the test below until it gets one here).
VALUES = {"SOURCE": "hosts.yml", "FILE": "pdlint.yaml", "RULES": "tp", "BYTES": "8M", "RELEASE": "0.32.0",
          "PLAYBOOK": "site.yml"}


def _values(action: argparse.Action, explain_action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    if action.choices:  # one both commands accept (their formats differ)
        return [next(c for c in sorted(action.choices, key=lambda c: c != "text") if c in explain_action.choices)]
    assert action.metavar in VALUES, f"give {action.option_strings[-1]}'s metavar {action.metavar} a value"
    return [VALUES[str(action.metavar)]]


def _options(ap: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in ap._actions for o in a.option_strings if a.dest not in ("help", "version")}


def test_explain_takes_every_option_of_the_lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A wrapper passes one option set to `pdlint` and `pdlint explain`: each of the lint's options, from its parser."""
    from pdlint.cli.explain import _parser as explain_parser
    from pdlint.cli.options import parser

    monkeypatch.chdir(write_tree(tmp_path, {**INVENTORY, "pdlint.yaml": "select: [tp]\n",
                                            "site.yml": "- hosts: all\n  gather_facts: false\n"}))
    lint, explain = _options(parser()), _options(explain_parser())
    assert set(lint) <= set(explain), set(lint) - set(explain)
    for flag, action in lint.items():
        argv = ["explain", "hosts.yml", flag, *_values(action, explain[flag])]
        assert main(argv) == 0, argv
        captured = capsys.readouterr()
        assert "deployment d (vLLM" in captured.out and "error" not in captured.err, (argv, captured.err)


@pytest.mark.parametrize("flag", ["--strict", "--show-suppressed"])
def test_explain_says_a_verdict_option_is_not_used(flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(write_tree(tmp_path, INVENTORY))
    assert main(["explain", "hosts.yml", flag, "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"pdlint explain: note: {flag} is not used by explain (it shows every finding and exits 0)\n"
    assert "model-facts (warning)" in captured.out
    assert main(["explain", "--help"]) == 0
    assert f"{flag}" in capsys.readouterr().out


def test_explain_reads_with_the_loading_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The options change what explain loads as they change what pdlint loads: -i, --vllm-version, --max-file-size."""
    monkeypatch.chdir(write_tree(tmp_path, INVENTORY))
    assert main(["explain", "--no-cache", "-i", "hosts.yml", "--vllm-version", "0.20.0", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["deployments"][0]["releases"] == ["0.20.0"]
    refused = "hosts.yml: load-error file is 153 bytes, over the 10-byte limit\n"
    assert main(["explain", "--no-cache", "hosts.yml", "--max-file-size", "10"]) == 2
    assert capsys.readouterr().err.startswith(refused)
    assert main(["--no-cache", "hosts.yml", "--max-file-size", "10"]) == 2
    assert capsys.readouterr().out.startswith(refused)


def _closed_pipe(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run pdlint with a stdout whose reader is gone before the first write (`| head` that left at once)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([str(PDLINT), *argv], stdout=write, stderr=subprocess.PIPE, cwd=cwd, check=False,
                              timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize("argv", [["rules"], ["rules", "--markdown"], ["rules", "tp"], ["versions"], ["schema"],
                                  ["models"], ["explain", "hosts.yml"], ["explain", "hosts.yml", "-f", "html"],
                                  ["--help"], ["lsp", "--help"]])
def test_a_closed_pipe_exits_0_silently(argv: list[str], tmp_path: Path) -> None:
    proc = _closed_pipe(argv, write_tree(tmp_path, INVENTORY))
    assert (proc.returncode, proc.stderr) == (0, b"")


def test_a_closed_pipe_keeps_the_lint_verdict(tmp_path: Path) -> None:
    """The reader leaving says nothing about the inventory: findings still exit 1, a clean one 0."""
    write_tree(tmp_path, INVENTORY)
    hosts = (tmp_path / "hosts.yml").read_text()
    (tmp_path / "hosts.yml").write_text(hosts.replace("vllm_pd_role: decode", "vllm_pd_role: prefill"))
    proc = _closed_pipe(["hosts.yml"], tmp_path)  # deployment[incomplete]
    assert (proc.returncode, proc.stderr) == (1, b"")
    (tmp_path / "hosts.yml").write_text(hosts)
    proc = _closed_pipe(["hosts.yml"], tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")


@pytest.mark.parametrize("where", ["missing/report.html", ".", "readonly/report.html"])
def test_explain_output_that_cannot_be_written(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(write_tree(tmp_path, INVENTORY))
    (tmp_path / "readonly").mkdir()
    (tmp_path / "readonly").chmod(0o500)
    if where.startswith("readonly") and os.access(tmp_path / "readonly", os.W_OK):
        pytest.skip("root writes anywhere")
    try:
        assert main(["explain", "hosts.yml", "-o", where]) == 2
    finally:
        (tmp_path / "readonly").chmod(0o700)
    err = capsys.readouterr().err
    assert err.startswith(f"pdlint: error: cannot write {where}: ") and err.count("\n") == 1, err
    assert "internal error" not in err


def test_readme_contract_table_names_the_newest_release() -> None:
    from pdlint import NEWEST_VLLM

    row = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `vllm_version`"))
    assert "for now" not in row and NEWEST_VLLM in row, row


def test_the_language_server_exits_without_a_traceback(tmp_path: Path) -> None:
    """An editor's initialize, shutdown and exit: the server ends with exit code 0 and says nothing on stderr (its
    transport closes stdout before the command's own last flush)."""
    def framed(payload: dict[str, object]) -> bytes:
        body = json.dumps(payload).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    messages = b"".join(framed(m) for m in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"}))
    proc = subprocess.run([str(PDLINT), "lsp"], input=messages, capture_output=True, cwd=tmp_path, timeout=60,
                          check=False)
    assert b'"id": 2' in proc.stdout.replace(b'"id":2', b'"id": 2')  # the shutdown was answered
    assert (proc.returncode, proc.stderr.decode()) == (0, "")

"""The editor and the CLI give the same verdict: every example and fixture inventory through `pdlint lsp` (over
stdio, pytest-lsp's client) and through `pdlint --format json` on the same inventory: same rule, severity, message,
hint, file, line and column."""
from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
import yaml
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

from pdlint import cli
from pdlint.lsp.inventory import inventory_of

ROOT = Path(__file__).resolve().parents[2]
PDLINT = str(Path(sys.executable).parent / "pdlint")
SEVERITY = {t.DiagnosticSeverity.Error: "error", t.DiagnosticSeverity.Warning: "warning",
            t.DiagnosticSeverity.Information: "info"}


def _opened(directory: Path) -> Path:
    """The file an operator would open: the inventory file itself (the one a hostile case passes)."""
    case = directory / "case.yml"
    if case.is_file():
        return directory / yaml.safe_load(case.read_text())["args"][0]
    for name in ("hosts.yml", "hosts.ini", "hosts"):
        if (directory / name).is_file():
            return directory / name
    raise AssertionError(f"no inventory file in {directory}")


def _static_hostile() -> list[Path]:
    """Hostile cases that are files in git (the rest are made by test_hostile.py) and take no flags."""
    out = []
    for case in sorted((ROOT / "tests" / "hostile" / "cases").glob("*/case.yml")):
        args = yaml.safe_load(case.read_text()).get("args", [])
        if len(args) == 1 and (case.parent / args[0]).is_file() and not (case.parent / args[0]).stat().st_size > 1 << 20:
            out.append(case.parent)
    return out


ALL = [*sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir() and p.name != "kubernetes"),  # manifests: tests/kubernetes
       *sorted({p.parent for name in ("hosts.yml", "hosts.ini", "hosts")  # every fixture inventory, at any depth
                for p in (ROOT / "tests" / "fixtures").rglob(name)}), *_static_hostile()]
# A YAML file that is neither in a directory with group_vars/host_vars nor named like an inventory is not taken for
# one by the server (a playbook is not an inventory); only this case's plugin configuration, evil.yml, is such a file.
CASES = [c for c in ALL if inventory_of(str(_opened(c))) is not None]


def test_only_the_plugin_configuration_is_not_taken_for_an_inventory() -> None:
    assert [c.name for c in ALL if c not in CASES] == ["inventory-plugin"]
    assert len(CASES) >= 25


def _cli(source: str) -> set[tuple[object, ...]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main([source, "--format", "json"])
    return {(os.path.abspath(f["file"]) if f["file"] else None, f["line"], f["column"], f["rule"], f["severity"],
             f["message"] + (f"\nhint: {f['hint']}" if f["hint"] else "")) for f in json.loads(out.getvalue())}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[PDLINT, "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(t.InitializeParams(capabilities=t.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(ROOT)) for c in CASES])
async def test_lsp_reports_what_the_cli_reports(client: LanguageClient, case: Path) -> None:
    opened = _opened(case)
    source = inventory_of(str(opened))
    assert source is not None
    expected = _cli(source)
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
        opened.as_uri(), "yaml", 1, opened.read_text(errors="replace"))))
    async with asyncio.timeout(60):
        while opened.as_uri() not in client.diagnostics:  # the opened file is published last
            await asyncio.sleep(0.01)
    got = set()
    for uri, diags in client.diagnostics.items():
        for d in diags:
            if d.source != "pdlint" or d.code is None:
                continue
            f = d.data  # the finding as the CLI's JSON has it; the range must show the same place
            assert d.code == f["rule"] and SEVERITY[d.severity] == f["severity"]
            if f["file"] is None:
                assert uri == opened.as_uri()  # a finding without a file is shown on the opened file
            else:
                assert uri == Path(os.path.abspath(f["file"])).as_uri()
                if f["line"] is not None:
                    assert d.range.start.line == f["line"] - 1
                    assert d.range.start.character == (f["column"] or 1) - 1
            got.add((os.path.abspath(f["file"]) if f["file"] else None, f["line"], f["column"], d.code,
                     SEVERITY[d.severity], d.message))
    assert got == expected

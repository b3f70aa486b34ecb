"""The language server reads the playbook a `.pdlint.yaml` names (`playbook: site.yml`), as the CLI does: on
examples/playbook (a copy, with that config file), `pdlint lsp` publishes the same findings as `pdlint --format
json`, the seed's mistake at the decode play's var in site.yml; saving the play again re-checks the inventory."""
from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

from pdlint import cli

ROOT = Path(__file__).resolve().parents[2]
PDLINT = str(Path(sys.executable).parent / "pdlint")
SEVERITY = {t.DiagnosticSeverity.Error: "error", t.DiagnosticSeverity.Warning: "warning",
            t.DiagnosticSeverity.Information: "info"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[PDLINT, "lsp"]))
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await lsp_client.initialize_session(t.InitializeParams(capabilities=t.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


def _project(tmp: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "playbook", tmp / "project")
    (tmp / "project" / ".git").mkdir()  # the config file is looked for up to the git root
    (tmp / "project" / ".pdlint.yaml").write_text("playbook: site.yml\n", encoding="utf-8")
    return tmp / "project"


def _cli(project: Path, monkeypatch: pytest.MonkeyPatch) -> set[tuple[object, ...]]:
    monkeypatch.chdir(project)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["inventory", "--format", "json"])
    return {(os.path.abspath(f["file"]), f["line"], f["column"], f["rule"], f["severity"],
             f["message"] + (f"\nhint: {f['hint']}" if f["hint"] else "")) for f in json.loads(out.getvalue())}


async def _published(client: LanguageClient, opened: Path) -> set[tuple[object, ...]]:
    async with asyncio.timeout(60):
        while opened.as_uri() not in client.diagnostics:
            await asyncio.sleep(0.01)
    got = set()
    for uri, diags in client.diagnostics.items():
        for d in diags:
            if d.source != "pdlint" or d.code is None:
                continue
            f = d.data
            assert uri == Path(os.path.abspath(f["file"])).as_uri()
            assert (d.range.start.line, d.range.start.character) == (f["line"] - 1, f["column"] - 1)
            got.add((os.path.abspath(f["file"]), f["line"], f["column"], d.code, SEVERITY[d.severity], d.message))
    return got


@pytest.mark.asyncio
async def test_lsp_reads_the_playbook_as_the_cli(client: LanguageClient, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path)
    expected = _cli(project, monkeypatch)
    site = str(project / "site.yml")
    assert {(f[0], f[1], f[2], f[3]) for f in expected} == {
        (site, 13, 32, "tp-ratio[moriio]"), (site, 13, 32, "tp[heads]")}
    opened = project / "inventory" / "hosts.yml"
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
        opened.as_uri(), "yaml", 1, opened.read_text())))
    assert await _published(client, opened) == expected


@pytest.mark.asyncio
async def test_saving_the_play_checks_again(client: LanguageClient, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The decode play's TP back to 4, saved: the inventory's findings are published again, now none."""
    project = _project(tmp_path)
    opened = project / "inventory" / "hosts.yml"
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
        opened.as_uri(), "yaml", 1, opened.read_text())))
    assert await _published(client, opened)
    site = project / "site.yml"
    site.write_text(site.read_text().replace("vllm_tensor_parallel_size: 6", "vllm_tensor_parallel_size: 4"))
    expected = _cli(project, monkeypatch)
    assert expected == set()
    client.text_document_did_save(t.DidSaveTextDocumentParams(t.TextDocumentIdentifier(site.as_uri())))
    async with asyncio.timeout(60):
        while client.diagnostics.get(Path(site).as_uri()):
            await asyncio.sleep(0.01)
    assert await _published(client, opened) == expected

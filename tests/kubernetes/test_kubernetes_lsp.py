"""`pdlint lsp` serves manifests too: an opened manifest names its folder, whose manifests are checked together with
the editor's unsaved buffers in place, each diagnostic at the manifest's own line."""
from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from conftest import ROOT
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

PDLINT = str(Path(sys.executable).parent / "pdlint")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[PDLINT, "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(t.InitializeParams(capabilities=t.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, path: Path, timeout: float = 30) -> list[t.Diagnostic]:
    uri = path.as_uri()
    async with asyncio.timeout(timeout):
        while uri not in client.diagnostics:
            await asyncio.sleep(0.01)
    return list(client.diagnostics[uri])


@pytest.mark.asyncio
async def test_a_manifest_gets_its_findings_and_an_unsaved_fix_clears_them(client: LanguageClient,
                                                                           tmp_path: Path) -> None:
    folder = Path(shutil.copytree(ROOT / "examples" / "kubernetes" / "aibrix", tmp_path / "aibrix"))
    manifest = folder / "deepseek.yaml"
    text = manifest.read_text()
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(manifest.as_uri(), "yaml", 1, text)))
    diags = await published(client, manifest)
    assert sorted(str(d.code) for d in diags) == ["tp-ratio[moriio]", "tp[heads]"]
    ratio = next(d for d in diags if d.code == "tp-ratio[moriio]")
    assert ratio.range.start == t.Position(52, 22)  # line 53, column 23: the decode's --tensor-parallel-size word
    assert ratio.message.startswith("decode TP 6 is not a multiple of prefill TP 4")
    client.diagnostics.pop(manifest.as_uri(), None)
    client.text_document_did_change(t.DidChangeTextDocumentParams(
        t.VersionedTextDocumentIdentifier(2, manifest.as_uri()),
        [t.TextDocumentContentChangeWholeDocument(text.replace("--tensor-parallel-size 6", "--tensor-parallel-size 4"))]))
    assert await published(client, manifest) == []


@pytest.mark.asyncio
@pytest.mark.parametrize(("folder", "name"), [("plain", "deepseek.yaml"), ("dynamo", "deepseek.yaml"),
                                              ("kserve", "deepseek.yaml"), ("aibrix", "deepseek.yaml"),
                                              ("llm-d", "deepseek.yaml"), ("modelservice", "values.yaml")])
async def test_the_editor_shows_what_the_cli_finds(client: LanguageClient, tmp_path: Path, folder: str,
                                                   name: str) -> None:
    """CLI = editor on each system's example: the same rule, message (the editor's carries the hint on a second
    line) and line:column for the opened manifest."""
    import json
    import os
    import subprocess

    copied = Path(shutil.copytree(ROOT / "examples" / "kubernetes" / folder, tmp_path / folder))
    manifest = copied / name
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PDLINT_"))}
    env["PDLINT_NO_CACHE"] = "1"
    done = subprocess.run([PDLINT, str(copied), "--format", "json"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    cli = {(f["rule"], f["message"] + (f"\nhint: {f['hint']}" if f.get("hint") else ""), f["line"], f["column"])
           for f in json.loads(done.stdout) if Path(f["file"]).resolve() == manifest.resolve()}
    assert "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)" in {
        message.split("\n")[0] for rule, message, *_ in cli if rule == "tp-ratio[moriio]"}
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
        manifest.as_uri(), "yaml", 1, manifest.read_text())))
    diags = await published(client, manifest)
    assert {(str(d.code), d.message, d.range.start.line + 1, d.range.start.character + 1) for d in diags} == cli

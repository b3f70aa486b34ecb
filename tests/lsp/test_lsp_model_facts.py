"""`pdlint lsp` and model facts from config.json: the hover says where each fact came from, and a saved
config.json is read again (the inventory's diagnostics follow it)."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

PDLINT = str(Path(sys.executable).parent / "pdlint")
HOSTS = """\
all:
  vars: {vllm_pd_deployment: chat, vllm_model: models/ft}
  hosts:
    p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 6}
    d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 6}
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[PDLINT, "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(t.InitializeParams(capabilities=t.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def _codes(client: LanguageClient, path: Path) -> list[str]:
    async with asyncio.timeout(30):
        while path.as_uri() not in client.diagnostics:
            await asyncio.sleep(0.01)
    return sorted(str(d.code) for d in client.diagnostics[path.as_uri()])


def _config(path: Path, kv_heads: int) -> str:
    text = json.dumps({"model_type": "llama", "num_attention_heads": 24, "num_key_value_heads": kv_heads})
    path.write_text(text)
    return text


@pytest.mark.asyncio
async def test_hover_names_the_config_json_and_a_saved_one_is_read_again(client: LanguageClient, tmp_path: Path):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(HOSTS)
    config = tmp_path / "models" / "ft" / "config.json"
    config.parent.mkdir(parents=True)
    _config(config, 4)  # TP 6 over 4 KV heads: tp[kv-heads]
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
        hosts.as_uri(), "yaml", 1, HOSTS)))
    assert await _codes(client, hosts) == ["tp[kv-heads]", "tp[kv-heads]"]
    hover = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(hosts.as_uri()), t.Position(1, 36)))  # on vllm_model
    assert hover is not None and isinstance(hover.contents, t.MarkupContent)
    assert "KV heads: `4`" in hover.contents.value and str(config) in hover.contents.value
    client.diagnostics.pop(hosts.as_uri(), None)
    text = _config(config, 6)  # 6 KV heads split over TP 6
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(config.as_uri(), "json", 1, text)))
    client.text_document_did_save(t.DidSaveTextDocumentParams(t.TextDocumentIdentifier(config.as_uri())))
    assert await _codes(client, hosts) == []

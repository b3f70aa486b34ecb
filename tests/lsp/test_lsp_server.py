"""`pdlint lsp` end to end: the server as a subprocess over stdio, driven by pytest-lsp's client."""
from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = Path(__file__).resolve().parents[2]
PDLINT = str(Path(sys.executable).parent / "pdlint")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[PDLINT, "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(t.InitializeParams(capabilities=t.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ROOT / "examples" / "inventory", tmp_path / "inventory"))


async def published(client: LanguageClient, path: Path, timeout: float = 30) -> list[t.Diagnostic]:
    """The diagnostics of path published since open_doc/change forgot its last ones (the server publishes the
    edited file after the other files of the inventory)."""
    uri = path.as_uri()
    async with asyncio.timeout(timeout):
        while uri not in client.diagnostics:
            await asyncio.sleep(0.01)
    return list(client.diagnostics[uri])


def open_doc(client: LanguageClient, path: Path, text: str | None = None) -> None:
    client.diagnostics.pop(path.as_uri(), None)
    client.text_document_did_open(t.DidOpenTextDocumentParams(t.TextDocumentItem(
        path.as_uri(), "yaml", 1, path.read_text() if text is None else text)))


def change(client: LanguageClient, path: Path, version: int, text: str) -> None:
    client.diagnostics.pop(path.as_uri(), None)
    client.text_document_did_change(t.DidChangeTextDocumentParams(
        t.VersionedTextDocumentIdentifier(version, path.as_uri()), [t.TextDocumentContentChangeWholeDocument(text)]))


def codes(diags: list[t.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diags)


@pytest.mark.asyncio
async def test_open_publishes_findings_with_rule_docs_hint_and_the_other_side(client: LanguageClient, inv: Path):
    decode = inv / "host_vars" / "mi-b02.yml"
    open_doc(client, decode)
    diags = await published(client, decode)
    assert codes(diags) == ["tp-ratio[moriio]", "tp[heads]"]
    ratio = next(d for d in diags if d.code == "tp-ratio[moriio]")
    assert ratio.severity == t.DiagnosticSeverity.Error and ratio.source == "pdlint"
    assert ratio.range == t.Range(t.Position(1, 27), t.Position(1, 28))  # the `6` of line 2
    assert ratio.message.startswith("decode TP 6 is not a multiple of prefill TP 4")
    assert "hint: use decode TP 4 or 8" in ratio.message
    assert ratio.code_description is not None and ratio.code_description.href.startswith("https://")
    related = ratio.related_information or []
    assert [(r.location.uri, r.location.range.start.line) for r in related] == [
        ((inv / "group_vars" / "deepseek_prefill.yml").as_uri(), 1)]
    assert "prefill mi-b01" in related[0].message


@pytest.mark.asyncio
async def test_unsaved_edit_changes_the_diagnostics_of_another_file(client: LanguageClient, inv: Path):
    decode, prefill = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "deepseek_prefill.yml"
    open_doc(client, decode)
    assert "tp-ratio[moriio]" in codes(await published(client, decode))
    text = prefill.read_text()
    open_doc(client, prefill, text)
    await published(client, prefill)
    change(client, prefill, 2, text.replace("vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 2"))
    await published(client, prefill)
    # decode TP 6 over prefill TP 2 is a whole ratio: the decode file's tp-ratio finding went, with nothing saved
    assert codes(client.diagnostics[decode.as_uri()]) == ["tp[heads]"]
    assert prefill.read_text() == text


@pytest.mark.asyncio
async def test_half_typed_yaml_is_a_load_error_there_and_other_files_keep_theirs(client: LanguageClient, inv: Path):
    decode, group = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "deepseek.yml"
    open_doc(client, decode)
    before = codes(await published(client, decode))
    open_doc(client, group)
    await published(client, group)
    change(client, group, 2, group.read_text() + "vllm_env: {CUDA_VISIBLE_DEVICES: [0, 1\n")
    broken = await published(client, group)
    assert codes(broken) == ["load-error"] and broken[0].range.start.line >= 4
    assert codes(client.diagnostics[decode.as_uri()]) == before
    change(client, group, 3, group.read_text())  # fixed again: the server is still there and checks
    assert codes(await published(client, group)) == []
    assert codes(client.diagnostics[decode.as_uri()]) == before


def apply(text: str, edits: list[t.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start = sum(len(x) for x in lines[:e.range.start.line]) + e.range.start.character
        end = sum(len(x) for x in lines[:e.range.end.line]) + e.range.end.character
        text = text[:start] + e.new_text + text[end:]
        lines = text.splitlines(keepends=True)
    return text


@pytest.mark.asyncio
async def test_code_actions_set_the_hinted_tp_in_place_and_suppress(client: LanguageClient, inv: Path):
    decode = inv / "host_vars" / "mi-b02.yml"
    text = decode.read_text()
    open_doc(client, decode)
    await published(client, decode)
    found = await client.text_document_code_action_async(t.CodeActionParams(
        t.TextDocumentIdentifier(decode.as_uri()), t.Range(t.Position(1, 0), t.Position(1, 0)),
        t.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in found or []]
    assert "set vllm_tensor_parallel_size (decode) to 4" in titles
    assert "set vllm_tensor_parallel_size (decode) to 8" in titles
    to8 = next(a for a in found if a.title == "set vllm_tensor_parallel_size (decode) to 8")
    fixed = apply(text, to8.edit.changes[decode.as_uri()])
    assert fixed == text.replace("vllm_tensor_parallel_size: 6", "vllm_tensor_parallel_size: 8")
    assert fixed.startswith("# The seed's mistake")  # comments and layout kept
    change(client, decode, 2, fixed)
    assert codes(await published(client, decode)) == []

    # suppress: the edit goes to a file every host of the finding reads; applied unsaved, the finding is gone
    change(client, decode, 3, text)
    await published(client, decode)
    found = await client.text_document_code_action_async(t.CodeActionParams(
        t.TextDocumentIdentifier(decode.as_uri()), t.Range(t.Position(1, 0), t.Position(1, 0)),
        t.CodeActionContext(diagnostics=[])))
    skip = next(a for a in found if a.title.startswith("suppress tp-ratio[moriio] with pdlint_skip in"))
    (uri, edits), = skip.edit.changes.items()
    target = Path(uri.removeprefix("file://"))
    assert target == inv / "group_vars" / "deepseek.yml"  # the deployment's group: both sides read it
    new = apply(target.read_text(), edits)
    assert new.startswith(target.read_text()) and new.endswith('pdlint_skip: ["tp-ratio[moriio]"]\n')
    open_doc(client, target, new)
    await published(client, target)
    assert codes(client.diagnostics[decode.as_uri()]) == ["tp[heads]"]


@pytest.mark.asyncio
async def test_hover_shows_the_effective_value_and_which_file_wins(client: LanguageClient, inv: Path):
    group = inv / "group_vars" / "deepseek_decode.yml"
    group.write_text("vllm_pd_role: decode\nvllm_tensor_parallel_size: 8  # the group's size\n")
    open_doc(client, group)
    await published(client, group)
    hover = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(group.as_uri()), t.Position(1, 5)))
    assert hover is not None
    text = hover.contents.value
    assert "vllm_tensor_parallel_size" in text
    assert "`6` (overridden by " in text and "host_vars/mi-b02.yml:2:28): mi-b02" in text


async def hover_text(client: LanguageClient, path: Path, line: int, character: int) -> str:
    found = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(path.as_uri()), t.Position(line, character)))
    assert found is not None and isinstance(found.contents, t.MarkupContent)
    assert found.contents.kind == t.MarkupKind.Markdown
    return found.contents.value


@pytest.mark.asyncio
async def test_hover_on_a_tp_value_shows_each_pairs_status_rank_map_and_acks(client: LanguageClient, inv: Path):
    decode, prefill = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "llama70b_prefill.yml"
    open_doc(client, decode)
    await published(client, decode)
    text = await hover_text(client, decode, 1, 27)  # on the `6`
    assert "`6` (set here): mi-b02" in text  # the value per host, as before, then the pair
    assert "**`mi-b01` -> `mi-b02`** (deployment `deepseek-r1`): **rejected** by `tp-ratio[moriio]`" in text
    assert "| decode rank |" not in text  # vLLM cannot map 6 over 4: no rank map

    text = await hover_text(client, prefill, 1, 3)  # on the key, in a file not opened yet
    assert "each prefill rank waits for 2 completion notifications per request" in text
    assert "| decode rank | prefill ranks | KV heads |\n|---|---|---|\n| 0 | 0 | head 0 |" in text
    assert "| 7 | 3 | head 7 |" in text and "mi-b01" not in text

    # an unsaved edit: prefill TP 2 under decode TP 6 pairs (3 acks), and the hover says so before any save
    deepseek = inv / "group_vars" / "deepseek_prefill.yml"
    source = deepseek.read_text()
    open_doc(client, deepseek, source)
    await published(client, deepseek)
    change(client, deepseek, 2, source.replace("vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 2"))
    await published(client, deepseek)
    text = await hover_text(client, deepseek, 1, 27)
    assert "(deployment `deepseek-r1`): ok; MoRIIOConnector, decode reads" in text
    assert "each prefill rank waits for 3 MoRIIO release acks per request" in text
    assert "| 5 | 1 |" in text


@pytest.mark.asyncio
async def test_hover_on_an_instance_items_tp_shows_its_pair_and_other_keys_show_none(client: LanguageClient,
                                                                                     inv: Path):
    host = inv / "host_vars" / "gpu-c01.yml"
    open_doc(client, host)
    await published(client, host)
    text = await hover_text(client, host, 5, 6)  # `    tensor_parallel_size: 4`
    assert "**`gpu-c01[0]` -> `gpu-c01[1]`** (deployment `qwen3-chat`): ok; MooncakeConnector" in text
    plain = await hover_text(client, host, 0, 3)  # vllm_pd_deployment: its value, no pairs
    assert "P/D pair" not in plain


@pytest.mark.asyncio
async def test_unsaved_edits_count_for_hosts_a_template_touches(client: LanguageClient, tmp_path: Path):
    """The README's quick start renders `{{ inventory_hostname }}` for every host, so ansible-core's loader reads
    them: it must read the unsaved buffers too (an edit of the decode TP in the buffer changes the finding)."""
    from conftest import write_tree

    inv = write_tree(tmp_path / "inventory", {
        "hosts.yml": "all:\n  children:\n    chat_prefill: {hosts: {gpu-p1: {}}}\n    chat_decode: {hosts: {gpu-d1: {}}}\n",
        "group_vars/all.yml": "vllm_pd_deployment: chat\nvllm_model: meta-llama/Llama-3.1-8B-Instruct\n"
                              "vllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: \"{{ inventory_hostname }}\"\n",
        "group_vars/chat_prefill.yml": "vllm_pd_role: prefill\nvllm_tensor_parallel_size: 2\n"
                                       "vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_producer}\n",
        "group_vars/chat_decode.yml": "vllm_pd_role: decode\nvllm_tensor_parallel_size: 4\n"
                                      "vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_consumer}\n",
    })
    decode = inv / "group_vars" / "chat_decode.yml"
    text = decode.read_text()
    open_doc(client, decode, text.replace("vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 6"))
    heads = [d for d in await published(client, decode) if d.code == "tp[heads]"]
    assert len(heads) == 1 and "TP 6" in heads[0].message, heads
    change(client, decode, 2, text.replace("vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 3"))
    diags = await published(client, decode)
    heads = [d for d in diags if d.code == "tp[heads]"]
    assert len(heads) == 1 and "TP 3" in heads[0].message and "TP 6" not in heads[0].message, heads
    change(client, decode, 3, text)
    assert [d for d in await published(client, decode) if d.severity != t.DiagnosticSeverity.Information] == []
    assert decode.read_text() == text

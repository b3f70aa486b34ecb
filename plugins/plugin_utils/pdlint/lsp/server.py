"""The language server: pygls over stdio, checks off the event loop, debounced, one inventory at a time."""
from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar
from urllib.parse import unquote, urlparse

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..cache import filememo
from ..load.preflight.layout import source_dir
from . import actions, diagnostics, hover, inventory, pairs

DEBOUNCE = 0.05  # seconds of quiet after a keystroke before the inventory is re-checked
_SETTINGS = ("ansible.cfg", ".pdlint.yaml", "pyproject.toml")  # change every inventory's verdict
log = logging.getLogger(__name__)
R = TypeVar("R")


def path_of(uri: str) -> str:
    return os.path.abspath(unquote(urlparse(uri).path))


class Server(LanguageServer):
    def __init__(self) -> None:
        super().__init__("pdlint", __version__, text_document_sync_kind=t.TextDocumentSyncKind.Incremental)
        self.outcomes: dict[str, inventory.Outcome] = {}  # inventory source -> its last check
        self.published: dict[str, set[str]] = {}  # inventory source -> files it has diagnostics on
        self._waiting: dict[str, asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pdlint-check")
        self._memos: dict[str, filememo.Memo] = {}  # inventory source -> per-file results kept between checks

    def read(self, path: str) -> str | None:
        """The open buffer's text, else the file's, else None."""
        doc = self.workspace.text_documents.get(diagnostics.uri(path))
        if doc is not None:
            return doc.source
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:  # for positions: pdlint reports bad bytes
                return fh.read()
        except OSError:
            return None

    async def off_loop(self, fn: Callable[..., R], *args: object) -> R:
        """fn(*args) on the check thread, so the editor's other requests keep flowing meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def overlay(self, source: str) -> dict[str, str]:
        """Open buffers of the inventory whose text differs from the file on disk."""
        root = source_dir(source)
        out = {}
        for uri, doc in list(self.workspace.text_documents.items()):
            path = path_of(uri)
            if not path.startswith(root + os.sep) and path != source:
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    on_disk: str | None = fh.read()
            except (OSError, UnicodeDecodeError):
                on_disk = None
            if doc.source != on_disk:
                out[path] = doc.source
        return out

    def schedule(self, source: str, anchor: str, delay: float) -> None:
        """Check source after delay; a newer request for it while waiting replaces this one."""
        waiting = self._waiting.pop(source, None)
        if waiting is not None:
            waiting.cancel()
        self._waiting[source] = asyncio.ensure_future(self._check(source, anchor, delay))

    async def _check(self, source: str, anchor: str, delay: float) -> None:
        await asyncio.sleep(delay)
        async with self._lock:
            if self._waiting.get(source) is asyncio.current_task():
                del self._waiting[source]  # from here on the check runs to the end
            overlay = self.overlay(source)
            loop = asyncio.get_running_loop()
            try:
                memo = self._memos.setdefault(source, filememo.Memo())
                last = self.outcomes.get(source)  # after an edit: only what it touched is checked again
                outcome = await loop.run_in_executor(self._pool, inventory.check, source, overlay, memo, last)
                self.publish(outcome, anchor)
            except Exception as exc:  # the editor keeps its server whatever the input
                log.exception("check of %s failed", source)
                self.window_log_message(t.LogMessageParams(t.MessageType.Error, f"pdlint: {source}: {exc}"))

    def publish(self, outcome: inventory.Outcome, anchor: str) -> None:
        found = diagnostics.by_file(outcome, functools.lru_cache(maxsize=None)(self.read), anchor)  # a read per file
        before = self.published.get(outcome.source, set())
        if outcome.failed is None:
            self.outcomes[outcome.source] = outcome
            cleared = before - set(found)
            self.published[outcome.source] = set(found)
        else:  # the other files keep their last good diagnostics; the broken one shows why
            cleared = set()
            self.published[outcome.source] = before | set(found)
        # The edited file always, and last: a client waiting for it has the whole inventory's picture by then.
        for path in sorted(cleared | set(found) | {anchor}, key=lambda p: p == anchor):
            self.text_document_publish_diagnostics(
                t.PublishDiagnosticsParams(uri=diagnostics.uri(path), diagnostics=found.get(path, [])))

    def touched(self, uri: str, delay: float) -> None:
        path = path_of(uri)
        if os.path.basename(path) in _SETTINGS:
            for known in list(self.outcomes):
                self.schedule(known, known if os.path.isfile(known) else path, delay)
            return
        readers = [known for known, outcome in list(self.outcomes.items()) if path in outcome.model_files
                   or (outcome.playbook_dir and path.startswith(outcome.playbook_dir + os.sep)
                       and inventory.inventory_of(path) != known)]
        # a model's config.json: the inventories whose facts came from it (vLLM reads disk); a file of the playbook
        # (a role's template, a play): the inventories it launches
        for known in readers:
            self.schedule(known, known if os.path.isfile(known) else path, delay)
        source = inventory.inventory_of(path)
        if source is not None and not readers:
            self.schedule(source, path, delay)


server = Server()


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: Server, params: t.DidOpenTextDocumentParams) -> None:
    ls.touched(params.text_document.uri, 0)


@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: Server, params: t.DidChangeTextDocumentParams) -> None:
    ls.touched(params.text_document.uri, DEBOUNCE)


@server.feature(t.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: Server, params: t.DidSaveTextDocumentParams) -> None:
    ls.touched(params.text_document.uri, 0)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: Server, params: t.DidCloseTextDocumentParams) -> None:
    ls.touched(params.text_document.uri, 0)  # the file on disk counts again


def _outcome(ls: Server, uri: str) -> inventory.Outcome | None:
    source = inventory.inventory_of(path_of(uri))
    return None if source is None else ls.outcomes.get(source)


def _pairs(outcome: inventory.Outcome, path: str) -> str | None:
    if outcome.topology is None:
        return None
    readers = {hv.host for hv in hover.seeing(outcome.hosts, path)}
    return pairs.describe(pairs.model(outcome.topology, outcome.findings, readers), readers)


@server.feature(t.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: Server, params: t.HoverParams) -> t.Hover | None:
    outcome = _outcome(ls, params.text_document.uri)
    doc = ls.workspace.get_text_document(params.text_document.uri)
    line = doc.lines[params.position.line] if params.position.line < len(doc.lines) else ""
    tp = pairs.tp_at(line, params.position.character)
    # On a TP value too: the top-level key's values per host (an instance item's are the instance's, not the host's)
    name = hover.name_at(line, params.position.character) or (tp if tp and tp.startswith("vllm_") else None)
    key = hover.key_at(line, params.position.character) if outcome is not None and outcome.mapped else None
    if outcome is None or (name is None and tp is None and key is None):
        return None
    path = path_of(params.text_document.uri)
    parts = [hover.describe(name, path, outcome.hosts) if name is not None else None]
    if key is not None:  # a role's own name the `variables:` mapping read: which contract value it became
        parts.append(hover.mapped(key, path, outcome.mapped))
    if name in ("vllm_model", "vllm_revision") and outcome.topology is not None:
        parts.append(hover.model_facts(outcome.topology.instances, hover.seeing(outcome.hosts, path)))
    if tp is not None:  # off the event loop: all.yml of 1,000 hosts explains every deployment (about 0.6 s)
        parts.append(await ls.off_loop(_pairs, outcome, path))
    text = "\n---\n\n".join(p for p in parts if p)
    return t.Hover(t.MarkupContent(t.MarkupKind.Markdown, text)) if text else None


@server.feature(t.TEXT_DOCUMENT_CODE_ACTION,
                t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix]))
def on_code_action(ls: Server, params: t.CodeActionParams) -> list[t.CodeAction] | None:
    outcome = _outcome(ls, params.text_document.uri)
    if outcome is None or outcome.topology is None:
        return None
    path = path_of(params.text_document.uri)
    first, last = params.range.start.line + 1, params.range.end.line + 1
    out: list[t.CodeAction] = []
    for f in outcome.findings:
        if not f.origin.file or os.path.abspath(f.origin.file) != path or not first <= (f.origin.line or 0) <= last:
            continue
        found = actions.value_actions(f, outcome.topology, ls.read)
        skip = actions.skip_action(f, outcome.hosts, ls.read)
        for action in found + ([skip] if skip is not None else []):
            out.append(_code_action(action, ls.read, diagnostics.diagnostic(f, outcome, ls.read)))
    return out or None


def _code_action(action: actions.Action, read: actions.Read, diagnostic: t.Diagnostic) -> t.CodeAction:
    from . import text as tx

    text = read(action.path) or ""
    edits = []
    for e in action.edits:
        line = tx.line_of(text, e.line + 1)
        edits.append(t.TextEdit(t.Range(t.Position(e.line, tx.utf16(line, e.start)),
                                        t.Position(e.line, tx.utf16(line, e.end))), e.text))
    return t.CodeAction(title=action.title, kind=t.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                        is_preferred=action.preferred or None,
                        edit=t.WorkspaceEdit(changes={diagnostics.uri(action.path): edits}))


def main() -> int:
    from ..load.preflight import safety

    safety.configure(False)  # no inventory plugins or scripts, before anything imports ansible-core
    server.start_io()
    return 0

"""A minimal Language Server Protocol client over stdio, enough to drive the real yaml-language-server."""
from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any


def _read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """One Content-Length framed JSON-RPC message, or None at end of stream."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.lower() == "content-length":
            length = int(value)
    if length is None:
        return None
    return json.loads(stream.read(length))


class LanguageServer:
    """A running server: requests wait for their response, notifications are queued by method."""

    def __init__(self, argv: list[str], root: Path, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._next_id = 0
        self._responses: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._published: dict[str, tuple[int, list[dict[str, Any]]]] = {}  # uri -> (how many times, last)
        self._changed = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()
        self.request("initialize", {
            "processId": None, "rootUri": root.as_uri(), "workspaceFolders": [{"uri": root.as_uri(), "name": "t"}],
            "capabilities": {"textDocument": {"publishDiagnostics": {},
                                              "hover": {"contentFormat": ["markdown", "plaintext"]},
                                              "completion": {"completionItem": {"snippetSupport": True}}}},
        })
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": settings})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _reader(self) -> None:
        assert self.proc.stdout is not None
        while (message := _read_message(self.proc.stdout)) is not None:
            if "id" in message and "method" in message:  # a request from the server
                self._send({"id": message["id"], "result": self._answer(message)})
            elif "id" in message:
                self._responses[message["id"]].put(message)
            elif message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                with self._changed:
                    count = self._published.get(params["uri"], (0, []))[0]
                    self._published[params["uri"]] = (count + 1, params["diagnostics"])
                    self._changed.notify_all()

    def _answer(self, request: dict[str, Any]) -> Any:
        if request["method"] == "workspace/configuration":
            return [self.settings.get(item.get("section", ""), None) for item in request["params"]["items"]]
        return None  # client/registerCapability, window/workDoneProgress/create

    def request(self, method: str, params: dict[str, Any], timeout: float = 30) -> Any:
        with self._lock:
            self._next_id += 1
            rid = self._next_id
            self._responses[rid] = queue.Queue()
        self._send({"id": rid, "method": method, "params": params})
        try:
            reply = self._responses[rid].get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no response to {method} within {timeout}s") from None
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result")

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def open(self, path: Path) -> str:
        uri = path.resolve().as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "yaml", "version": 1, "text": path.read_text(encoding="utf-8")}})
        return uri

    def diagnostics_for(self, uri: str, timeout: float = 30, settle: float = 1.0) -> list[dict[str, Any]]:
        """The diagnostics published for uri: wait for the first publication, then until none follows for settle s."""
        deadline = time.monotonic() + timeout
        with self._changed:
            if not self._changed.wait_for(lambda: uri in self._published, timeout=timeout):
                raise TimeoutError(f"no diagnostics for {uri} within {timeout}s")
            while True:
                seen = self._published[uri][0]

                def republished(seen: int = seen) -> bool:
                    return self._published[uri][0] != seen

                quiet = not self._changed.wait_for(republished, timeout=min(settle, max(0.0, deadline - time.monotonic())))
                if quiet or time.monotonic() >= deadline:
                    return self._published[uri][1]

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=10)
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - never leave the server running
            self.proc.kill()
            self.proc.wait()

"""Latency of `pdlint lsp` after an edit: a generated N-host inventory, the server over stdio (not a test).

Usage: .venv/bin/python bench/lsp.py [--hosts 1000] [--edits 12] [--shape fleet|quickstart]

`fleet` (bench/generate.py's default shape) opens group_vars/dep0000_decode.yml; `quickstart` (bench/quickstart.py:
one deployment, 1:3, the side channel host templated in group_vars/all.yml) opens group_vars/chat_decode.yml. Then
it changes the file's TP back and forth without saving (each edit flips the verdict: TP 6 splits neither
Llama-3.3-70B's 64 heads nor Llama-3.1-8B's 32) and times each didChange until the edited file's diagnostics arrive
(the server publishes the edited file after every other file of the inventory, debounce included).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from generate import generate
from lsp_client import LanguageServer
from quickstart import generate as quickstart


def wait(server: LanguageServer, uri: str, seen: int, timeout: float = 60) -> list[dict[str, object]]:
    with server._changed:
        if not server._changed.wait_for(lambda: server._published.get(uri, (0, []))[0] > seen, timeout=timeout):
            raise TimeoutError(uri)
        return server._published[uri][1]


def count(server: LanguageServer, uri: str) -> int:
    with server._changed:
        return server._published.get(uri, (0, []))[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=12)
    ap.add_argument("--shape", choices=("fleet", "quickstart"), default="fleet")
    args = ap.parse_args()
    name, good = ("chat_decode.yml", "4") if args.shape == "quickstart" else ("dep0000_decode.yml", "8")
    with tempfile.TemporaryDirectory() as tmp:
        inv = Path(tmp) / "inventory"
        if args.shape == "quickstart":
            quickstart(args.hosts, inv, "template")
        else:
            generate(args.hosts, inv)
        (Path(tmp) / "empty.cfg").write_text("[defaults]\n")
        os.environ["ANSIBLE_CONFIG"] = str(Path(tmp) / "empty.cfg")
        edited = inv / "group_vars" / name
        text = edited.read_text()
        started = time.perf_counter()
        server = LanguageServer([str(Path(sys.executable).parent / "pdlint"), "lsp"], Path(tmp), {})
        uri = server.open(edited)
        first = wait(server, uri, 0)
        cold = time.perf_counter() - started
        times = []
        for version in range(2, args.edits + 2):
            tp = "6" if version % 2 == 0 else good
            seen = count(server, uri)
            t0 = time.perf_counter()
            server.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text.replace(f"vllm_tensor_parallel_size: {good}", f"vllm_tensor_parallel_size: {tp}")}]})
            shown = wait(server, uri, seen)
            times.append(time.perf_counter() - t0)
            assert bool(shown) == (tp == "6"), (tp, shown)
        server.close()
    print(f"{args.shape} hosts {args.hosts}: first diagnostics {cold:.2f} s after start ({len(first)} on the file); "
          f"after an edit: median {statistics.median(times):.3f} s, min {min(times):.3f} s, max {max(times):.3f} s "
          f"over {len(times)} edits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

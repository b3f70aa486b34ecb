"""explain's Markdown through Mermaid's own parser (Node, pinned in tests/mermaid) and its HTML in headless Chromium.

Without node + `npm ci --prefix tests/mermaid`, or without Chromium (`apt-get install chromium`), these skip
with one line saying why; under CI=true they fail instead.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT

from pdlint.cli import main

pytestmark = pytest.mark.browser  # slow tier: headless Chromium

INVENTORIES = ["examples/inventory", "examples/releases", "examples/ini/hosts.ini", "tests/fixtures/explain/multinode"]
MERMAID = ROOT / "tests" / "mermaid"
SCREENSHOT = ROOT / "docs" / "explain.png"


def _missing(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {why}")
    pytest.skip(why)


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (MERMAID / "node_modules" / "mermaid").is_dir():
        _missing("Mermaid parser not installed (needs node and `npm ci --prefix tests/mermaid`)")
    return str(node)


def _chromium() -> str:
    found = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    if found is None:
        _missing("Chromium not installed (`apt-get install chromium`)")
    return str(found)


def explain(tmp_path: Path, inventory: str, fmt: str, *argv: str) -> Path:
    out = tmp_path / f"{Path(inventory).name}.{fmt}"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert main(["explain", inventory, "-f", fmt, "-o", str(out), *argv]) == 0
    finally:
        os.chdir(cwd)
    return out


def mermaid_parse(*files: Path) -> tuple[int, list[dict[str, object]]]:
    proc = subprocess.run([_node(), str(MERMAID / "check.mjs"), *map(str, files)], capture_output=True, text=True,
                          timeout=300, check=False)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_markdown_mermaid_parses(tmp_path: Path, inventory: str) -> None:
    md = explain(tmp_path, inventory, "markdown")
    code, blocks = mermaid_parse(md)
    deployments = md.read_text(encoding="utf-8").count("### Deployment ")
    assert code == 0, blocks
    assert len(blocks) == deployments > 0 and all(b["type"] == "flowchart-v2" for b in blocks)


def test_mermaid_check_rejects_a_broken_block(tmp_path: Path) -> None:
    broken = tmp_path / "broken.md"
    broken.write_text('```mermaid\nflowchart LR\n  a["x"] -- "unclosed --> b\n```\n', encoding="utf-8")
    code, blocks = mermaid_parse(broken)
    assert code == 1 and blocks[0]["ok"] is False


class _Dom(HTMLParser):
    """Deployments, rank cells and anything that would load a resource, from the DOM Chromium dumps."""

    def __init__(self) -> None:
        super().__init__()
        self.deployments: set[str] = set()
        self.ranks: set[tuple[str, int]] = set()
        self.fetches: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("data-deployment"):
            self.deployments.add(str(a["data-deployment"]))
        if a.get("data-engine") is not None and a.get("data-tp-rank") is not None:
            self.ranks.add((str(a["data-engine"]), int(str(a["data-tp-rank"]))))
        self.fetches += [f"{tag} {k}={v}" for k, v in attrs if k in ("src", "href", "srcset", "data", "action")]


def chromium(page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--proxy-server=127.0.0.1:9", "--enable-logging=stderr",
                           "--v=0", *extra, page.as_uri()], capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_html_loads_offline_without_console_errors(tmp_path: Path, inventory: str) -> None:
    page = explain(tmp_path, inventory, "html")
    proc = chromium(page, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, console
    dom = _Dom()
    dom.feed(proc.stdout)
    model = json.loads(explain(tmp_path, inventory, "json").read_text(encoding="utf-8"))
    assert dom.deployments == {d["name"] for d in model["deployments"]}
    assert dom.ranks == {(e["name"], r) for d in model["deployments"] for e in d["engines"] for r in range(e["tp"])}
    assert not dom.fetches and "url(" not in page.read_text(encoding="utf-8")


def test_console_errors_are_seen(tmp_path: Path) -> None:
    """The check above can fail: a page that logs an error shows up in Chromium's log."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><p>x</p><script>console.error('explain-test-error')</script>", encoding="utf-8")
    assert "explain-test-error" in chromium(page, "--dump-dom").stderr


def non_background(png: bytes) -> float:
    """Share of pixels that differ from the top-left pixel (8-bit RGB/RGBA PNG, filters undone)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        size, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += size + 12
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(line)
        prev = line
    background = bytes(rows[0][:channels])
    pixels = [bytes(r[i:i + channels]) for r in rows[::4] for i in range(0, stride, channels * 4)]
    return sum(p != background for p in pixels) / len(pixels)


def test_screenshot_of_the_bundled_example_is_not_blank(tmp_path: Path) -> None:
    page = explain(tmp_path, "examples/inventory", "html")
    shot = tmp_path / "explain.png"
    proc = chromium(page, f"--screenshot={shot}", "--window-size=1100,1750", "--hide-scrollbars")
    assert shot.exists(), proc.stderr[-2000:]
    assert non_background(shot.read_bytes()) > 0.02
    if os.environ.get("PDLINT_UPDATE_SCREENSHOT") == "1":  # regenerate the README's picture
        shutil.copy(shot, SCREENSHOT)


def test_readme_screenshot_is_the_tests_and_not_blank() -> None:
    assert "docs/explain.png" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert non_background(SCREENSHOT.read_bytes()) > 0.02

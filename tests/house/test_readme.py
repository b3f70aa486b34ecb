"""Every code block of README.md is executed (or, where it cannot run here, says why right above it).

A block preceded by `<!-- not run: REASON -->` is only parsed. Every other block is run by the runner
for its kind (picked from its language and first line); a block no runner recognises fails the test,
so a new example cannot be added without being run.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

BIN = Path(sys.executable).parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_SKIP = re.compile(r"<!-- not run: (.+?) -->\n$")


class Block:
    def __init__(self, lang: str, text: str, line: int, skip: str | None) -> None:
        self.lang, self.text, self.line, self.skip = lang, text, line, skip

    def __repr__(self) -> str:
        return f"README.md:{self.line} ({self.lang})"


def blocks() -> list[Block]:
    found = []
    for match in _FENCE.finditer(README):
        before = README[:match.start()]
        skip = _SKIP.search(before)
        found.append(Block(match.group(1), match.group(2), before.count("\n") + 1, skip.group(1) if skip else None))
    return found


BLOCKS = blocks()


def _env(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(tmp / "collections"), "ANSIBLE_LOCALHOST_WARNING": "0",
           "ANSIBLE_STDOUT_CALLBACK": "default"}
    env.pop("GITHUB_ACTIONS", None)
    return env


def _sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=_env(cwd), capture_output=True, text=True,
                          check=False, timeout=300)


def _workspace(tmp: Path, inventory: Path = ROOT / "examples" / "inventory") -> Path:
    """A user's checkout: this repository's files, and `inventory/` (the example unless told otherwise)."""
    for name in ("examples", "schemas", "playbooks", "plugins", "roles", "meta", "docs", "tests/fixtures"):
        shutil.copytree(ROOT / name, tmp / name, ignore=shutil.ignore_patterns("__pycache__", ".*cache*"))
    for name in ("README.md", "galaxy.yml", "pyproject.toml", "requirements.txt", ".pre-commit-hooks.yaml"):
        shutil.copy(ROOT / name, tmp / name)
    shutil.copytree(inventory, tmp / "inventory")
    return tmp


def _quick_start_inventory(tmp: Path) -> Path:
    """The quick start's files, written where their first-line comments say."""
    for block in BLOCKS:
        first = block.text.splitlines()[0]
        if block.lang == "yaml" and first.startswith("# inventory/") and "," not in first:  # not another way in
            path = tmp / "qs" / first[2:]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
    return tmp / "qs" / "inventory"


# --- runners: (block, tmp_path) -> None, asserting what the README says -------------------------------------

def run_newcomer(block: Block, tmp: Path) -> None:
    """The first block is what CI runs (.ci/run executes its two lines and checks the first exits 1)."""
    ci = subprocess.run(["bash", "-c", "mapfile -t cmds < <(awk '/^```sh$/{n++; next} /^```/{if(n==1) exit} n==1' "
                         "README.md); printf '%s\\n' \"${cmds[@]}\""], cwd=ROOT, capture_output=True, text=True,
                        check=True)
    assert ci.stdout == block.text


def run_transcript(block: Block, tmp: Path) -> None:
    """`$ command` then its output: run it, compare (the time taken may differ). A line `...` elides output: the
    runs of lines between elisions appear in the output in that order, each whole; without a first `...` the
    output starts with the first run, without a last one it ends with the last."""
    command, *expected = block.text.splitlines()
    ws = _workspace(tmp)
    proc = _sh(command[2:].replace(".venv/bin/", ""), ws)
    strip = re.compile(r"\(\d+\.\d+ s\)")
    got = strip.sub("(T)", proc.stdout).splitlines()
    runs: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == "...":
            runs.append([])
        else:
            runs[-1].append(strip.sub("(T)", line))
    if len(runs) == 1:
        assert got == runs[0], proc.stdout
        return
    at = 0
    for i, run in enumerate(runs):
        if not run:
            continue
        starts = [k for k in range(at, len(got) - len(run) + 1) if got[k:k + len(run)] == run]
        assert starts and (i > 0 or starts[0] == 0), (run, proc.stdout)
        at = starts[0] + len(run)
    assert runs[-1] == [] or at == len(got), proc.stdout


def run_synopsis(block: Block, tmp: Path) -> None:
    """Every option and subcommand of the synopsis exists (`pdlint SUB [...]`: SUB's options)."""
    sub = re.match(r"pdlint ([a-z]+) \[", block.text)
    command = [str(BIN / "pdlint"), *([sub.group(1)] if sub else []), "--help"]
    help_text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    for option in re.findall(r"--[a-z-]+", block.text):  # --no-strict pairs with --strict; --no-cache is alone
        assert option in help_text or "--" + option.removeprefix("--no-") in help_text, option
    for name in [] if sub else re.findall(r"^pdlint (\w+)", block.text, re.M):  # a subcommand's: its options
        assert subprocess.run([str(BIN / "pdlint"), name], capture_output=True, check=False).returncode == 0, name


def run_shell(block: Block, tmp: Path) -> None:
    """Shell lines, run in a user's checkout with the example as `inventory/`: they must not fail to run
    (exit 0, or 1 or 2 where the example's own mistake makes pdlint or the play fail)."""
    ws = _workspace(tmp)
    for command in block.text.splitlines():
        proc = _sh(command, ws)
        if command.startswith("check-jsonschema"):
            assert proc.returncode == 0, proc.stdout + proc.stderr
        elif "ansible-playbook" in command:  # the example inventory holds the seed's mistake: the play fails on it
            assert proc.returncode == 2 and "tp-ratio[moriio]" in proc.stdout, proc.stdout + proc.stderr
        else:
            assert proc.returncode == 0, proc.stdout + proc.stderr


def _engines(inventory: Path, cwd: Path) -> list[dict[str, object]]:
    proc = subprocess.run([str(BIN / "pdlint"), "explain", str(inventory), "-f", "json"], capture_output=True,
                          text=True, check=False, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    keep = ("name", "role", "release", "connector", "tp", "pp", "dp", "nnodes", "hosts", "ports")
    return [{k: e[k] for k in keep} for d in json.loads(proc.stdout)["deployments"] for e in d["engines"]]


def run_way_in(block: Block, tmp: Path) -> None:
    """Another way to write a quick start file (`# inventory/PATH, how`): the same engines, ports and verdict as
    the contract's form, and nothing the schema or the command line's parser objects to."""
    inventory = _quick_start_inventory(tmp)
    before = _engines(inventory, tmp)
    target = inventory.parent / block.text.splitlines()[0][2:].split(",")[0]
    target.write_text(block.text)
    proc = subprocess.run([str(BIN / "pdlint"), str(inventory), "-f", "json"], capture_output=True, text=True,
                          check=False, cwd=tmp)
    assert proc.returncode == 0 and json.loads(proc.stdout) == [], proc.stdout + proc.stderr
    assert _engines(inventory, tmp) == before


def run_inventory_file(block: Block, tmp: Path) -> None:
    """The quick start's inventory: written as the comments say, it lints clean."""
    inventory = _quick_start_inventory(tmp)
    proc = subprocess.run([str(BIN / "pdlint"), str(inventory)], capture_output=True, text=True, check=False,
                          cwd=tmp)
    assert proc.returncode == 0 and "0 errors in 2 hosts, 1 deployment" in proc.stdout, proc.stdout + proc.stderr


def run_vars(block: Block, tmp: Path) -> None:
    """A host_vars snippet: valid in the quick start inventory (no schema finding, and its skip is used or known)."""
    inventory = _quick_start_inventory(tmp)
    (inventory / "host_vars").mkdir(exist_ok=True)
    (inventory / "host_vars" / "gpu-d1.yml").write_text(block.text)
    proc = subprocess.run([str(BIN / "pdlint"), str(inventory), "-f", "json"], capture_output=True, text=True,
                          check=False, cwd=tmp)
    assert proc.returncode in (0, 1), proc.stderr
    rules = {f["rule"] for f in json.loads(proc.stdout)}
    assert not rules & {"schema", "skip[unknown]", "load-error"}, proc.stdout


def run_config(block: Block, tmp: Path) -> None:
    """The configuration example is a valid pyproject.toml table for pdlint."""
    (tmp / "pyproject.toml").write_text(block.text)
    proc = subprocess.run([str(BIN / "pdlint"), str(ROOT / "examples" / "inventory")], capture_output=True,
                          text=True, check=False, cwd=tmp)
    assert proc.returncode in (0, 1), proc.stderr
    assert tomllib.loads(block.text)["tool"]["pdlint"]


def run_ci(block: Block, tmp: Path) -> None:
    """A CI job: its pdlint commands run in a checkout with the example inventory (the install step is the
    quick start's, not run here)."""
    ws = _workspace(tmp)
    doc = yaml.safe_load(block.text)
    steps = [s["run"] for job in doc.get("jobs", {}).values() for s in job["steps"] if "run" in s]
    steps += [line for job in doc.values() if isinstance(job, dict) for line in job.get("script", [])]
    commands = [c for c in steps if c.startswith("pdlint")]
    assert commands and all(c.startswith(("pdlint", "pip install")) for c in steps), steps
    for command in commands:
        proc = _sh(command, ws)
        assert proc.returncode in (0, 1) or "|| true" in command, proc.stderr
        if "--format sarif" in command:
            assert json.loads((ws / "pdlint.sarif").read_text())["version"] == "2.1.0"


def _install_collection(tmp: Path) -> None:
    out = tmp / "build"
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", str(ROOT), "--output-path", str(out)],
                   check=True, capture_output=True)
    [tarball] = out.glob("*.tar.gz")
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", str(tarball), "-p", str(tmp / "collections")],
                   check=True, capture_output=True)


def run_play(block: Block, tmp: Path) -> None:
    """A play (or tasks, run in one) against the bundled valid inventory: it must succeed."""
    _install_collection(tmp)
    doc = yaml.safe_load(block.text)
    if "hosts" not in doc[0]:
        doc = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": doc}]
    (tmp / "playbooks").mkdir()
    (tmp / "playbooks" / "play.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (tmp / "pyproject.toml").write_text("[tool.pdlint]\nignore = []\n")  # the config the task names
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(ROOT / "examples" / "ini" / "hosts.ini"),
                           "playbooks/play.yml"], cwd=tmp, env=_env(tmp), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run_precommit_config(block: Block, tmp: Path) -> None:
    """The hook id exists in this repository's .pre-commit-hooks.yaml; rev is the placeholder the text explains."""
    [repo] = yaml.safe_load(block.text)["repos"]
    hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {h["id"] for h in repo["hooks"]} <= hooks
    assert repo["rev"] == "COMMIT_SHA"


def run_editor_settings(block: Block, tmp: Path) -> None:
    """VS Code settings: the schema path exists and the globs cover group_vars/host_vars."""
    settings = json.loads(block.text)
    [(path, globs)] = settings["yaml.schemas"].items()
    assert (ROOT / path).is_file() and {"**/group_vars/**", "**/host_vars/**"} <= set(globs)


def run_vscode_manifest(block: Block, tmp: Path) -> None:
    """The VS Code extension's package.json is the one tests/vscode/extension pins and installs (its lock)."""
    pinned = ROOT / "tests" / "vscode" / "extension"
    assert json.loads(block.text) == json.loads((pinned / "package.json").read_text())
    lock = json.loads((pinned / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == json.loads(block.text)["dependencies"]


def run_vscode_extension(block: Block, tmp: Path) -> None:
    """The VS Code extension's extension.js is valid JavaScript (tests/lsp/test_lsp_vscode.py runs it in code-server)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    (tmp / "extension.js").write_text(block.text)
    proc = subprocess.run([node, "--check", str(tmp / "extension.js")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def run_modeline(block: Block, tmp: Path) -> None:
    """The modeline's relative path resolves from inventory/group_vars/FILE to the schema."""
    path = block.text.split("$schema=", 1)[1].strip()
    assert (ROOT / "inventory" / "group_vars" / path).resolve() == ROOT / "schemas" / "pdlint-vars.schema.json"


def run_house(block: Block, tmp: Path) -> None:
    """The README's tree of the package is the package (tests/house/test_layers.py)."""
    from test_layers import check_house

    check_house(block.text)


# The role the README's `variables:` example describes: its own names, the seed's TP 4 / TP 6 over MoRIIO
_KV = ('{kv_connector: MoRIIOConnector, kv_role: %s, kv_connector_extra_config: {read_mode: "true", '
       'http_port: 8000, handshake_port: 6301, notify_port: 61005}}')
ROLE = {
    "hosts.yml": "all:\n  vars: {service: chat, model_name: deepseek-ai/DeepSeek-V2-Lite}\n  children:\n"
                 "    prefill: {hosts: {p1: {}}}\n    decode: {hosts: {d1: {}}}\n",
    "group_vars/prefill.yml": "tp: 4\nkv: " + _KV % "kv_producer" + "\n",
    "group_vars/decode.yml": "tp: 6\nkv: " + _KV % "kv_consumer" + "\n",
}


def run_mapping(block: Block, tmp: Path) -> None:
    """The `variables:` example, as .pdlint.yaml beside the role it describes: the seed's mistake at `tp: 6`."""
    for name, text in ROLE.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    (tmp / ".pdlint.yaml").write_text(block.text)
    proc = subprocess.run([str(BIN / "pdlint"), "hosts.yml", "--format", "json", "--no-cache"], capture_output=True,
                          text=True, check=False, cwd=tmp)
    assert proc.returncode == 1, proc.stderr
    found = {(f["rule"], f["file"], f["line"]) for f in json.loads(proc.stdout)}
    assert ("tp-ratio[moriio]", "group_vars/decode.yml", 1) in found, found
    proc = subprocess.run([str(BIN / "pdlint"), "explain", "hosts.yml"], capture_output=True, text=True, check=False,
                          cwd=tmp)
    said = "vllm_tensor_parallel_size mapped by .pdlint.yaml:5:30 from tp (group_vars/decode.yml:1:5)"
    assert said in proc.stdout, proc.stdout + proc.stderr


def runner(block: Block) -> Callable[[Block, Path], None] | None:
    first = block.text.splitlines()[0] if block.text else ""
    if block is BLOCKS[0]:
        return run_newcomer
    if block.lang == "text" and first.startswith("cli/ "):
        return run_house
    if block.lang == "text":
        synopsis = re.match(r"pdlint ([a-z]+ )?\[", first)
        return run_transcript if first.startswith("$ ") else run_synopsis if synopsis else None
    if block.lang == "sh":
        return run_shell
    if block.lang == "toml":
        return run_config
    if block.lang == "json":
        return run_vscode_manifest if '"engines"' in block.text else run_editor_settings
    if block.lang == "js":
        return run_vscode_extension
    if block.lang == "yaml":
        if first.startswith("# inventory/"):
            return run_way_in if "," in first else run_inventory_file
        if first == "# .pdlint.yaml":
            return run_mapping
        if first.startswith("# yaml-language-server:"):
            return run_modeline
        doc = yaml.safe_load(block.text)
        if isinstance(doc, list):
            return run_play
        if isinstance(doc, dict) and "repos" in doc:
            return run_precommit_config
        jobs = isinstance(doc, dict) and any(isinstance(v, dict) and "script" in v for v in doc.values())
        if isinstance(doc, dict) and ("jobs" in doc or jobs):
            return run_ci
        if isinstance(doc, dict) and all(k.startswith(("vllm_", "pdlint_")) for k in doc):
            return run_vars
    return None


def test_every_block_is_run_or_says_why_not() -> None:
    unhandled = [b for b in BLOCKS if b.skip is None and runner(b) is None]
    assert not unhandled, f"README blocks with no runner (add one, or mark them <!-- not run: why -->): {unhandled}"
    assert len([b for b in BLOCKS if b.skip]) <= 3, "most README examples must run"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.skip is None], ids=repr)
def test_readme_block(block: Block, tmp_path: Path) -> None:
    run = runner(block)
    assert run is not None
    run(block, tmp_path)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.skip], ids=repr)
def test_blocks_not_run_still_parse(block: Block) -> None:
    if block.lang == "sh":
        for line in block.text.splitlines():
            shlex.split(line)
    assert block.skip and len(block.skip) > 10

"""Comments and docstrings point only at what a contributor can open: files of this repository that exist, or
vLLM's own files (read from each release's wheel, tests/vllm_source.py); never a document or tracker outside it.

A path in a comment is a repository path when it starts at the repository's top (`tests/`, `docs/`, `examples/`
...) or at one of the package's folders (`load/`, `cache/`, `rules/` ...): it must exist there. A bare `*.py`
or `*.md` name must be a file of the repository, or one of vLLM's files below. Inventory file names in examples
(`group_vars/all.yml`, `hosts.yml`) name a user's files, not ours, and are not checked.
"""
from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

PKG = ROOT / "plugins" / "plugin_utils" / "pdlint"
SCANNED = ("plugins/", "tools/", "bench/", "tests/")
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} | {".ci"}
PACKAGE_DIRS = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
# vLLM has folders of these names too (vllm/config/, vllm/engine/): a path under them that pdlint lacks is vLLM's
# when its next part is one of vLLM's (vllm/distributed/..., vllm/envs.py) or the file is listed in VLLM_FILES.
SHARED_DIRS = {"vllm", "config", "engine"}
VLLM_TREE = {"attention", "config", "distributed", "engine", "entrypoints", "model_executor", "transformers_utils",
             "utils", "v1", "platforms", "envs.py", "utils.py", "config.py", "version.py", "_version.py"}
# vLLM's (and Dynamo's) files that comments name by their file name or a path inside vllm/: they live in each
# release's wheel, not here.
VLLM_FILES = {
    "envs.py", "factory.py", "serve.py", "utils.py", "config.py", "main.py", "worker.py", "base_worker.py",
    "moriio_connector.py", "moriio_common.py", "moriio_engine.py", "moriio_tp_mapping.py", "mooncake_connector.py",
    "multi_connector.py", "p2p_nccl_engine.py", "kv_connector_protocols.py", "kv_cache_utils.py",
    "kv_cache_planning.py", "backend_args.py", "arg_utils.py", "cli_args.py", "core.py", "registry.py",
    "engine/arg_utils.py", "config/model.py", "config/parallel.py", "config/cache.py", "config/utils.py",
    "config/vllm.py", "config/manager.py", "config/kv_transfer.py", "llama4.py", "mllama4.py",
    "model_arch_config_convertor.py", "configuration_llama4.py",  # the last: transformers'
}
PATH = re.compile(r"(?<![\w./~-])((?:[\w-]+/)*[\w-]+\.(?:py|json|yml|yaml|md))\b")
OUTSIDE = re.compile(r"DESIGN\.md|STYLE\.md|\.\./shared|/work/shared|\b[Ii]ssues? \d+|\b[Ii]tems? \d+ of")


def _files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", *SCANNED], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / f for f in listed.stdout.split() if f.endswith(".py") and "/fixtures/" not in f
            and "node_modules" not in f]


def _texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of path."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc


NAMES = {p.name for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts and "node_modules" not in p.parts}


def missing(name: str, here: Path) -> bool:
    """True when name, read in a comment of file here, is a repository path that does not exist."""
    parts = name.split("/")
    if len(parts) == 1:
        if name.endswith((".py", ".md")):
            return name not in NAMES and name not in VLLM_FILES
        return False  # config.json, hosts.yml: a user's files
    first = parts[0]
    if first in TOP:
        return not (ROOT / name).exists()
    if first in PACKAGE_DIRS:
        if (PKG / name).exists() or (here.parent / name).exists():
            return False
        if first in SHARED_DIRS:
            return not (parts[1] in VLLM_TREE or name in VLLM_FILES)
        return True
    return False  # another tree's path: vLLM's v1/..., an inventory's group_vars/...


@pytest.mark.parametrize("name, expected", [
    ("load/runs.py", True), ("events.py", True), ("inventory_ops.py", True), ("DESIGN.md", True),
    ("load/fast/variables/vars_events.py", False), ("cache/runs.py", False), ("vllm/envs.py", False),
    ("vllm/distributed/kv_transfer/kv_connector/factory.py", False), ("vllm/model/hma.py", False),
    ("vllm/nixl_gone.py", True), ("tests/vllm_source.py", False), ("docs/nowhere.md", True),
    ("group_vars/all.yml", False),
])
def test_the_check_tells_a_moved_file_from_one_that_is_there(name: str, expected: bool) -> None:
    assert missing(name, PKG / "finding.py") is expected


def test_every_path_named_in_a_comment_exists() -> None:
    stale = [f"{path.relative_to(ROOT)}:{line}: {m.group(1)}" for path in _files() for line, text in _texts(path)
             for m in PATH.finditer(text) if missing(m.group(1), path)]
    assert not stale, "comments name files that are not there (moved? say where they are now):\n" + "\n".join(stale)


def test_no_comment_points_outside_the_repository() -> None:
    outside = [f"{path.relative_to(ROOT)}:{line}: {m.group(0)}" for path in _files() if path.name != "test_comments.py"
               for line, text in _texts(path) for m in OUTSIDE.finditer(text)]
    assert not outside, ("comments cite documents or tracker entries outside the repository (put what a "
                         "contributor needs in README.md or docs/):\n" + "\n".join(outside))

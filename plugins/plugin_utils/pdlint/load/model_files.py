"""Finding a model's config.json on the controller: a model directory, or the Hugging Face cache. Never the network.

The cache is read the way huggingface_hub lays it out (file_download.try_to_load_from_cache):
`<cache>/models--ORG--NAME/refs/<revision>` holds a commit hash, `snapshots/<commit>/config.json` the file; a
40-hex revision names the snapshot itself. The cache is HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else
HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub.constants).
huggingface_hub is not imported: it costs the pre-commit hook a second-scale cold start for three path joins.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def shown(path: Path) -> str:
    """A model file as messages name it: absolute, so the CLI (any working directory), the play and the language
    server say the same (the finding's origin is printed relative, as every origin is)."""
    return os.path.abspath(path)


_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_MAX_BYTES = 4 << 20  # a config.json is a few KB; a quantization config inlined may reach a few MB


@dataclasses.dataclass(frozen=True)
class Found:
    """config.json's content and the file it came from (None: not found), the places looked, a read error."""

    config: Mapping[str, Any] | None = None
    path: str | None = None
    looked: tuple[str, ...] = ()
    error: str | None = None
    # every file whose presence or content decided the answer (absent ones too: a result cached without the
    # model must not outlive the model's download), for the run cache to stat
    files: tuple[str, ...] = ()


def hub_cache(env: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache directory env points at (huggingface_hub.constants.HF_HUB_CACHE)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return Path(env[name]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(xdg).expanduser() / "huggingface" / "hub"


def read_config(path: Path) -> Found:
    """config.json at path, parsed; an unreadable or malformed file is an error, never a traceback."""
    name = shown(path)
    try:
        if path.stat().st_size > _MAX_BYTES:
            return Found(path=name, error=f"{name} is larger than {_MAX_BYTES >> 20} MB; not read")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Found(path=name, error=f"{name}: cannot read: {getattr(exc, 'strerror', None) or exc}")
    if not isinstance(data, dict):
        return Found(path=name, error=f"{name}: not a JSON object")
    return Found(config=data, path=name)


INDEX = "model.safetensors.index.json"
_MAX_INDEX = 16 << 20  # an index lists every tensor: a few MB for the largest models


def weight_bytes(config: Path) -> tuple[int | None, str]:
    """metadata.total_size of the safetensors index beside config (the checkpoint's weight bytes) and the index's
    path; None when there is none or it does not say (the weights then come from pdlint's table)."""
    index = config.with_name(INDEX)
    try:
        if not _is_file(index) or index.stat().st_size > _MAX_INDEX:
            return None, shown(index)
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None, shown(index)
    meta = data.get("metadata") if isinstance(data, dict) else None
    size = meta.get("total_size") if isinstance(meta, dict) else None
    if isinstance(size, float) and size.is_integer():
        size = int(size)
    return (size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None), shown(index)


def _is_file(path: Path) -> bool:
    """path is a file; a name the system cannot take (too long, a NUL byte) is no file, never a traceback."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _snapshot(repo: Path, revision: str | None) -> Path | None:
    revision = revision or "main"
    if _COMMIT.match(revision):
        return repo / "snapshots" / revision
    try:
        commit = (repo / "refs" / revision).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):  # ValueError: not UTF-8, or a NUL byte in the name
        return None
    return repo / "snapshots" / commit if _COMMIT.match(commit) else None


def in_cache(model: str, revision: str | None, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """(config.json in the hub cache, the place described) for a model id `ORG/NAME` or `NAME`."""
    cache = hub_cache(env)
    repo = cache / ("models--" + model.strip("/").replace("/", "--"))
    where = f"Hugging Face cache {shown(repo)} ({'revision ' + revision if revision else 'refs/main'})"
    snapshot = _snapshot(repo, revision)
    if snapshot is None:
        return None, where
    candidate = snapshot / "config.json"
    return (candidate if _is_file(candidate) else None), where


def _cache_files(model: str, revision: str | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """The ref file and the snapshot's config.json a cache lookup of model depends on."""
    repo = hub_cache(env) / ("models--" + model.strip("/").replace("/", "--"))
    snapshot = _snapshot(repo, revision)
    ref = () if _COMMIT.match(revision or "") else (str(repo / "refs" / (revision or "main")),)
    return (*ref, *((str(snapshot / "config.json"),) if snapshot is not None else ()))


def find(model: str, revision: str | None, base: Path | None, env: Mapping[str, str]) -> Found:
    """config.json of model: the directory it names (absolute, or relative to base), then the hub cache."""
    if "\0" in model:  # no file system takes the name (a templated or pasted value gone wrong)
        return Found(looked=(f"no directory or cache entry ({model[:40]!r} holds a NUL byte)",))
    looked: list[str] = []
    path = Path(model)
    try:
        path = path.expanduser()
    except RuntimeError:  # ~user of no such user: the name as written
        pass
    if not path.is_absolute() and base is not None:
        path = base / path
    looked.append(f"directory {shown(path)}")
    files = [shown(path / "config.json")]
    if _is_file(path / "config.json"):
        return dataclasses.replace(read_config(path / "config.json"), looked=tuple(looked), files=tuple(files))
    if not model.startswith(("/", ".", "~")) and model.count("/") <= 1:  # a path is never a hub id
        cached, where = in_cache(model, revision, env)
        looked.append(where)
        files.extend(shown(Path(f)) for f in _cache_files(model, revision, env))
        if cached is not None:
            return dataclasses.replace(read_config(cached), looked=tuple(looked), files=tuple(files))
    return Found(looked=tuple(looked), files=tuple(files))


@dataclasses.dataclass(frozen=True)
class Files:
    """Where config.json files are looked for: a relative vllm_model against base (the inventory's folder), the
    Hugging Face cache env names (HF_HUB_CACHE, HF_HOME, ...)."""

    base: Path | None
    env: Mapping[str, str]

    @staticmethod
    def of(sources: list[str], env: Mapping[str, str] | None = None) -> Files:
        """The lookup for an inventory given by its sources (a folder, or the folder of a file)."""
        from .preflight.layout import source_dir

        local = [s for s in sources if "," not in s]
        base = Path(source_dir(local[0]) or ".").absolute() if local else None
        return Files(base, environment() if env is None else env)


def environment() -> Mapping[str, str]:
    """The process environment, for callers that have no other (the CLI, the language server)."""
    return os.environ

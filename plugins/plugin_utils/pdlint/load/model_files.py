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

from ..paths import display

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_MAX_BYTES = 4 << 20  # a config.json is a few KB; a quantization config inlined may reach a few MB


@dataclasses.dataclass(frozen=True)
class Found:
    """config.json's content and the file it came from (None: not found), the places looked, a read error."""

    config: Mapping[str, Any] | None = None
    path: str | None = None
    looked: tuple[str, ...] = ()
    error: str | None = None


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
    shown = display(path)
    try:
        if path.stat().st_size > _MAX_BYTES:
            return Found(path=shown, error=f"{shown} is larger than {_MAX_BYTES >> 20} MB; not read")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Found(path=shown, error=f"{shown}: cannot read: {getattr(exc, 'strerror', None) or exc}")
    if not isinstance(data, dict):
        return Found(path=shown, error=f"{shown}: not a JSON object")
    return Found(config=data, path=shown)


def _snapshot(repo: Path, revision: str | None) -> Path | None:
    revision = revision or "main"
    if _COMMIT.match(revision):
        return repo / "snapshots" / revision
    try:
        commit = (repo / "refs" / revision).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return repo / "snapshots" / commit if _COMMIT.match(commit) else None


def in_cache(model: str, revision: str | None, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """(config.json in the hub cache, the place described) for a model id `ORG/NAME` or `NAME`."""
    cache = hub_cache(env)
    repo = cache / ("models--" + model.strip("/").replace("/", "--"))
    where = f"Hugging Face cache {display(repo)} ({'revision ' + revision if revision else 'refs/main'})"
    snapshot = _snapshot(repo, revision)
    if snapshot is None:
        return None, where
    candidate = snapshot / "config.json"
    return (candidate if candidate.is_file() else None), where


def find(model: str, revision: str | None, base: Path | None, env: Mapping[str, str]) -> Found:
    """config.json of model: the directory it names (absolute, or relative to base), then the hub cache."""
    looked: list[str] = []
    path = Path(model).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    looked.append(f"directory {display(path)}")
    if (path / "config.json").is_file():
        return dataclasses.replace(read_config(path / "config.json"), looked=tuple(looked))
    if not model.startswith(("/", ".", "~")) and model.count("/") <= 1:  # a path is never a hub id
        cached, where = in_cache(model, revision, env)
        looked.append(where)
        if cached is not None:
            return dataclasses.replace(read_config(cached), looked=tuple(looked))
    return Found(looked=tuple(looked))


def environment() -> Mapping[str, str]:
    """The process environment, for callers that have no other (the CLI, the language server)."""
    return os.environ

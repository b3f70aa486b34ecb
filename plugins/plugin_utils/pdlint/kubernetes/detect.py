"""Which paths are Kubernetes manifests: a YAML file whose documents carry `apiVersion` and `kind` (or a modelservice
values file), or a folder holding such files (walked whole, hidden entries skipped). A folder that holds an Ansible
inventory too (group_vars/, host_vars/, a hosts file) is refused: pdlint reads one of them per path, and which one
was meant is the user's to say. A Helm chart's `templates/` files are skipped (they are manifests only once
rendered: pass `helm template`'s output, or the chart's values file).

Only the first 64 KiB of each file is looked at, and nothing is parsed: an inventory run pays a directory walk that
skips its vars folders.
"""
from __future__ import annotations

import os
import re

from ..finding import Origin
from ..load.errors import LoadError, load_error
from ..paths import display_path

_EXTENSIONS = (".yaml", ".yml")
_MANIFEST = re.compile(r"^(?:- )?apiVersion\s*:", re.MULTILINE)
_KIND = re.compile(r"^\s*(?:- )?kind\s*:", re.MULTILINE)
_VALUES = re.compile(r"^(?:prefill|decode)\s*:\s*(?:#.*)?$", re.MULTILINE)
_INVENTORY = re.compile(r"^(?:all|ungrouped)\s*:\s*(?:#.*)?$|^\[[^\]\n]+\]\s*$", re.MULTILINE)
_INVENTORY_DIRS = ("group_vars", "host_vars")
MAX_FILES = 10_000


def _looks(text: str) -> bool:
    return bool(_MANIFEST.search(text) and _KIND.search(text)) or bool(
        _VALUES.search(text) and "containers:" in text)


def _head(path: str, size: int = 65536) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(size)
    except OSError:
        return ""


def _chart_template(path: str) -> bool:
    """A Helm chart's template (templates/*.yaml with `{{ }}`): no manifest until the chart renders it."""
    return os.path.basename(os.path.dirname(path)) == "templates" and "{{" in _head(path)


def _walk(folder: str) -> tuple[list[str], list[str]]:
    """(YAML files, inventory signs) under folder: a group_vars/ or host_vars/ folder, a hosts file."""
    found: list[str] = []
    signs: list[str] = []
    for where, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        signs += [os.path.join(where, d) for d in dirs if d in _INVENTORY_DIRS]
        dirs[:] = [d for d in dirs if d not in _INVENTORY_DIRS]
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(where, name)
            if name.endswith(_EXTENSIONS) or name in ("hosts", "inventory") or name.endswith(".ini"):
                found.append(path)
        if len(found) > MAX_FILES:
            break
    return found, signs


def manifest_files(path: str) -> list[str] | None:
    """The manifest files a path names (None: it is no manifest path). Raises LoadError for a folder that mixes
    manifests and an inventory."""
    if os.path.isfile(path):
        return [path] if path.endswith(_EXTENSIONS) and _looks(_head(path)) else None
    if not os.path.isdir(path):
        return None
    files, signs = _walk(path)
    manifests = [f for f in files if f.endswith(_EXTENSIONS) and _looks(_head(f)) and not _chart_template(f)]
    if not manifests:
        return None
    signs += [f for f in files if f not in manifests and _INVENTORY.search(_head(f))]
    if signs:
        raise LoadError(load_error(
            Origin(display_path(path)),
            f"{display_path(path)} holds Kubernetes manifests ({display_path(manifests[0])}) and an Ansible "
            f"inventory ({display_path(signs[0])}): pdlint reads one of them per path",
            "name the manifests' folder or the inventory on its own"))
    return manifests


def looks_inventory(path: str) -> bool:
    """A file named or written like an Ansible inventory (hosts*, inventory*, *.ini, a top-level `all:`)."""
    name = os.path.basename(path)
    return name.startswith(("hosts", "inventory")) or name.endswith(".ini") or bool(_INVENTORY.search(_head(path)))

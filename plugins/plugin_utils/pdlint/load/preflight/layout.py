"""Where Ansible looks: the vars directories, the file names an inventory directory skips, YAML extensions."""
from __future__ import annotations

import os
import re
from collections.abc import Sequence

YAML_EXT = (".yml", ".yaml", ".json")
VARS_DIRS = ("group_vars", "host_vars")
# ansible-core's InventoryManager: IGNORED_ALWAYS and the INVENTORY_IGNORE_EXTS default.
_IGNORED_NAMES = re.compile(r"^\.|^host_vars$|^group_vars$|^vars_plugins$")


_IGNORED_EXTS = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry")


def ignored(name: str) -> bool:
    """An entry of an inventory directory that ansible-core's InventoryManager skips."""
    return bool(_IGNORED_NAMES.search(name)) or name.endswith(_IGNORED_EXTS)


def is_host_list(source: str) -> bool:
    """A source Ansible reads as a host list ("a,b,"), not a path: its host_list plugin's verify_file."""
    return "," in source and not os.path.exists(source)


def absolute_sources(sources: Sequence[str]) -> list[str]:
    """Paths made absolute, host lists kept as written: how every cache and loader keys the sources."""
    return [s if is_host_list(s) else os.path.abspath(s) for s in sources]


def paths_only(sources: Sequence[str]) -> list[str]:
    """The sources that are paths (host lists have no files to read)."""
    return [s for s in sources if not is_host_list(s)]


def source_dir(source: str) -> str:
    """The directory whose group_vars/ and host_vars/ Ansible reads for a source: itself, or the file's folder."""
    return source if os.path.isdir(source) else os.path.dirname(source)

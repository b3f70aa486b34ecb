"""Where Ansible looks: the vars directories, the file names an inventory directory skips, YAML extensions."""
from __future__ import annotations

import re

YAML_EXT = (".yml", ".yaml", ".json")


VARS_DIRS = ("group_vars", "host_vars")


# ansible-core's InventoryManager: IGNORED_ALWAYS and the INVENTORY_IGNORE_EXTS default.
_IGNORED_NAMES = re.compile(r"^\.|^host_vars$|^group_vars$|^vars_plugins$")


_IGNORED_EXTS = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry")


def ignored(name: str) -> bool:
    """An entry of an inventory directory that ansible-core's InventoryManager skips."""
    return bool(_IGNORED_NAMES.search(name)) or name.endswith(_IGNORED_EXTS)

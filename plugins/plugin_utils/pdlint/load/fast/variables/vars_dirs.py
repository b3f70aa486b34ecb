"""group_vars/ and host_vars/: the files Ansible reads for a group or host name, and their variables."""
from __future__ import annotations

import os
from collections.abc import Container, Sequence
from typing import Any

import yaml

from ....hostvars import is_relevant
from ....paths import DisplayPaths
from ... import compose, errors
from ...preflight import layout
from ...preflight.layout import YAML_EXT, source_dir
from ..files import Files, parse_json
from .values import Unsupported, Var, check_tags, from_json, from_node, keyed_items, scalar


def _dir_files(path: str) -> list[str]:
    """DataLoader._get_dir_vars_files."""
    found: list[str] = []
    for name in sorted(os.listdir(path)):
        if name.startswith(".") or name.endswith("~"):
            continue
        ext = os.path.splitext(name)[1]
        full = os.path.join(path, name)
        if os.path.isdir(full) and not ext:
            found.extend(_dir_files(full))
        elif os.path.isfile(full) and (not ext or ext in YAML_EXT):
            found.append(full)
    return found


def find_vars_files(path: str, name: str, listing: frozenset[str] | None = None,
                    regular: Container[str] = ()) -> list[str]:
    """DataLoader.find_vars_files: <name>, then <name>.yml/.yaml/.json; a directory means all files in it.

    listing: the directory's names, listed once instead of a stat per candidate; regular: paths known to be
    regular files (the preflight stat'ed them), which need no second stat."""
    base = os.path.join(path, name)
    names = listing if os.sep not in name else None
    for ext in ("", *YAML_EXT):
        full = base + ext
        if (name + ext in names) if names is not None else os.path.exists(full):
            return [full] if full in regular or not os.path.isdir(full) else _dir_files(full)
    return []


class VarsFiles:
    """host_group_vars: group_vars/<group> and host_vars/<host> beside each inventory source, cached."""

    def __init__(self, sources: Sequence[str], files: Files) -> None:
        self.dirs = [os.path.realpath(source_dir(s)) for s in sources]
        self.files = files
        self.keep = files.checked.keep_names  # names kept beside pdlint's (hostvars.is_relevant)
        self.cache: dict[tuple[str, str], dict[str, Var]] = {}
        self.listings: dict[str, frozenset[str] | None] = {}
        self._shown = DisplayPaths()  # display_path of a normalized absolute path
        self._folders = {subdir: [os.path.join(base, subdir) for base in self.dirs] for subdir in layout.VARS_DIRS}

    def of(self, subdir: str, names: Sequence[str]) -> dict[str, Var]:
        """Merged in Ansible's order: each inventory source in turn, the entities in precedence order within it."""
        data: dict[str, Var] = {}
        for folder in self._folders[subdir]:
            for name in names:
                if name.startswith(os.path.sep):
                    continue
                key = (folder, name)
                if key not in self.cache:
                    merged: dict[str, Var] = {}
                    if key[0] not in self.listings:  # one isdir and one listing per directory
                        self.listings[key[0]] = frozenset(os.listdir(key[0])) if os.path.isdir(key[0]) else None
                    listing = self.listings[key[0]]
                    if listing is not None:
                        for path in find_vars_files(*key, listing, self.files.walked):
                            merged.update(self._load(path))
                    self.cache[key] = merged
                data.update(self.cache[key])
        return data

    def _load(self, path: str) -> dict[str, Var]:
        memo, key, shown = self.files.checked.memo, self.files.digest(path), self._shown(path)
        if memo is None or key is None:
            return self._read(path, shown)
        found = memo.variables(path, key, shown)
        if found is None:
            found = self._read(path, shown)
            memo.put_variables(path, key, shown, found)
        return found

    def _read(self, path: str, shown: str) -> dict[str, Var]:
        built = self.files.values(path, shown)
        if built is not None:
            is_json, data = parse_json(built[0])
            if not is_json:  # Ansible tries JSON first: a JSON file's variables come from json below
                return built[1]
        text, nodes = self.files.get(path)
        is_json, data = parse_json(text)
        if is_json and isinstance(data, dict):
            return {k: from_json(v, shown) for k, v in data.items()
                    if isinstance(k, str) and is_relevant(k, self.keep)}
        if not is_json and len(nodes) == 1 and isinstance(nodes[0], yaml.MappingNode):
            return self._mapping(nodes[0], shown, self.keep)
        error = compose.vars_file_error(path, text, nodes)
        if error is not None:
            raise errors.LoadError(error)
        if is_json or not nodes:
            return {}
        node = nodes[0]
        if isinstance(node, yaml.ScalarNode) and not scalar(node):
            return {}
        if isinstance(node, yaml.SequenceNode) and not node.value:
            return {}
        raise Unsupported(f"{path}: vars file is not a mapping")

    @staticmethod
    def _mapping(node: Any, shown: str, keep: frozenset[str] = frozenset()) -> dict[str, Var]:
        result: dict[str, Var] = {}
        for key, key_node, value_node in keyed_items(node):
            if isinstance(key, str) and is_relevant(key, keep):
                result[key] = from_node(value_node, shown, key_node)
            else:
                check_tags(value_node)
        return result

"""An inventory source into the fast loader's Inventory: a directory, a YAML or INI file, or a host list."""
from __future__ import annotations

import os

import yaml

from ...finding import Finding
from ...paths import display_path
from .. import compose, errors
from ..preflight import layout
from ..preflight.layout import YAML_EXT
from . import replay, yaml_file
from .files import Files, parse_json
from .inventory import Inventory
from .variables.values import Unsupported


def _inventory_file(inv: Inventory, path: str, files: Files) -> None:
    """As ansible-core's plugins in pdlint's order (host_list, yaml, ini, toml): the first that reads it wins."""
    if os.access(path, os.X_OK):
        raise Unsupported(f"{path} is executable (inventory script)")
    ext = os.path.splitext(path)[1]
    if ext == ".toml":
        raise Unsupported(f"{path} is a TOML inventory")
    shown = display_path(path)
    checked = files.checked
    if path in checked.ini_lines:  # not UTF-8: only the INI plugin decodes it (line by line)
        _ini(inv, checked.ini_lines[path], shown)
        return
    if ext in YAML_EXT:
        if path in checked.yaml_errors:  # not YAML: the INI plugin's turn; if it refuses too, the YAML error
            _ini(inv, checked.texts[path], shown, checked.yaml_errors[path])
            return
        memo, key = checked.memo, files.digest(path)
        ops = memo.inventory_ops(path, key, shown, inv.safe_group_names) if memo is not None else None
        if ops is not None:  # the language server's memo: this content's calls, made again
            replay.replay(inv, ops)
            return
        text, nodes = files.get(path)
        is_json, data = parse_json(text)
        if not is_json:
            data = nodes[0] if len(nodes) == 1 else None
        if len(nodes) > 1 or not yaml_file.is_inventory(data, is_json):
            _ini(inv, text, shown)  # the yaml plugin fails on it (empty, not a mapping, several documents)
            return
        if memo is None:
            yaml_file.parse(inv, data, shown, is_json)
            return
        recorder = replay.Recorder(inv)
        yaml_file.parse(recorder, data, shown, is_json)  # type: ignore[arg-type]
        memo.put_inventory_ops(path, key, shown, inv.safe_group_names, recorder.ops())
        return
    read = checked.texts.get(path)
    if read is None:
        raise Unsupported(f"{path}: not read by the preflight")
    text = read
    if not ext:  # Ansible tries the yaml plugin first on files without an extension
        is_json, data = parse_json(text)
        if is_json and isinstance(data, dict):
            raise Unsupported(f"{path}: YAML inventory without extension")
        try:  # through compose.compose like every YAML read; a YAML error here only means "not YAML"
            docs = compose.compose(path, files.checked)[1]
        except errors.LoadError:
            docs = []
        if len(docs) == 1 and isinstance(docs[0], yaml.MappingNode):
            raise Unsupported(f"{path}: YAML inventory without extension")
    _ini(inv, text, shown)


def _ini(inv: Inventory, text: str | list[str], shown: str, yaml_error: Finding | None = None) -> None:
    # ast/shlex only for INI inventories: cold start matters in a pre-commit hook
    from . import ini as fast_ini

    try:
        fast_ini.parse(inv, text, shown)
    except fast_ini.Rejected as exc:
        if yaml_error is None:
            raise
        raise errors.LoadError(yaml_error) from exc


def add_source(inv: Inventory, source: str, files: Files) -> None:
    if "," in source and not os.path.exists(source):
        raise Unsupported("host list source")
    if not os.path.isdir(source):
        _inventory_file(inv, source, files)
        return
    for name in sorted(os.listdir(source)):
        if layout.ignored(name):
            continue
        full = os.path.join(source, name)
        if os.path.isdir(full):
            raise Unsupported(f"{full}: nested inventory directory")
        _inventory_file(inv, full, files)

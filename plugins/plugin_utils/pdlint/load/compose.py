"""YAML composed with ansible-core's rules where the event pass cannot serve a file; vars-file errors with their line."""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..finding import Finding, Origin
from ..paths import display_path
from . import preflight
from .errors import LoadError, load_error
from .preflight import Preflight, guard
from .preflight.guard import Limits, Refused, refuse
from .preflight.layout import YAML_EXT
from .preflight.walk import regular


def yaml_files(checked: Preflight) -> Iterator[str]:
    """The YAML files a preflight read: inventory files with a YAML extension, and every vars file."""
    vars_files = set(checked.vars_files)
    for path in checked.texts:
        if path in vars_files or path.endswith(YAML_EXT):
            yield path


def compose(path: str | os.PathLike[str], checked: Preflight | None = None,
            limits: Limits | None = None) -> tuple[str, list[Any]]:
    """The text and libyaml node trees (one per document) of a YAML file, read through the same guard as
    check() (its text reused when check() read it). Raises LoadError."""
    import yaml

    path = os.fspath(path)
    try:
        text = checked.texts.get(path) if checked is not None else None
        if text is None:
            limits = limits or Limits()
            if not regular(path):
                raise refuse(path, "is a directory, not a file")
            text = guard.text_of(preflight.read_bounded(path, limits), path, limits)
    except Refused as exc:
        raise LoadError(exc.finding) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return text, list(yaml.compose_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        raise LoadError(guard.yaml_error(path, exc)) from None


def vars_file_error(path: str, text: str, docs: list[Any]) -> Finding | None:
    """Why ansible-core's host_group_vars cannot use a vars file it loads, as a load-error naming the file and
    line: several YAML documents, or a value other than a mapping that is not empty (null, false, 0, '', []).
    Shared by both loaders so they report it alike (ansible-core's own error has no file or line)."""
    import json

    import yaml

    shown = display_path(path)
    try:
        data = json.loads(text)  # Ansible tries JSON first
    except ValueError:
        pass
    else:
        if not data or isinstance(data, dict):
            return None
        return load_error(Origin(shown, 1, 1), f"vars file holds a {type(data).__name__}, not a mapping of variable names",
                          "make the file a mapping (name: value), or empty")
    if len(docs) > 1:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            yaml.compose(text, Loader=loader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            where = Origin(shown, mark.line + 1 if mark else None, mark.column + 1 if mark else None)
            return load_error(where, f"vars file holds {len(docs)} YAML documents; Ansible reads one",
                              "remove the '---' line that starts the second document, or split the file")
    if not docs:
        return None
    node = docs[0]
    if isinstance(node, yaml.MappingNode):
        return None
    if isinstance(node, yaml.SequenceNode) and node.tag == "tag:yaml.org,2002:seq":
        empty, kind = not node.value, "list"
    elif isinstance(node, yaml.ScalarNode) and node.tag.startswith("tag:yaml.org,2002:"):
        try:
            value = yaml.SafeLoader("").construct_object(node)
        except yaml.YAMLError:
            return None
        empty, kind = not value, type(value).__name__
    else:
        return None  # other tags: the loaders decide
    if empty:
        return None
    mark = node.start_mark
    return load_error(Origin(shown, mark.line + 1, mark.column + 1), f"vars file holds a {kind}, not a mapping of variable names",
                      "make the file a mapping (name: value), or empty")

"""Every file the fast loader reads, read and parsed once per load (YAML, or JSON where it surely is JSON)."""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from .. import compose, preflight
from ..preflight.layout import source_dir
from .variables.values import Unsupported, Var

_JSON_STARTS = frozenset('{["-0123456789tfnNI')  # object, array, string, number, true, false, null, NaN, Infinity


class Files:
    """Every YAML file read once, as preflight checked it (the first syntax error wins, as in preflight)."""

    def __init__(self, sources: Sequence[str], checked: preflight.Preflight) -> None:
        self.checked = checked
        self.docs: dict[str, tuple[str, list[Any]]] = {}
        self.walked: dict[str, str] = {}  # key -> the path the preflight read it by
        # Keyed by the real path of the source's directory (as host_group_vars looks files up), resolved once.
        bases = {os.path.abspath(source_dir(s)) for s in sources}
        real = {b: os.path.realpath(b) for b in bases}
        memo = checked.memo
        tops: dict[str, str | None] = {}  # a file's directory -> the source directory above it (one walk up each)
        for text in compose.yaml_files(checked):
            if text in checked.yaml_errors:  # read as INI, if at all
                continue
            folder = os.path.dirname(text)
            if folder not in tops:
                base = folder
                while base not in real and os.path.dirname(base) != base:
                    base = os.path.dirname(base)
                tops[folder] = base if base in real else None
            top = tops[folder]
            key = real[top] + text[len(top):] if top is not None else os.path.realpath(text)
            if key in self.walked:  # the same file by a second path: composed, as it always was, for its errors
                compose.compose(text, checked)
                continue
            self.walked[key] = text
            # A vars file whose variables the memo holds for this content composed cleanly then (so did an inventory
            # file whose calls it holds), and one whose variables the preflight's scan built has no alias or anchor
            # composing could fail on: composing either could raise no error, so skipping it keeps the first error.
            if text in checked.values:
                continue
            digest = checked.digests.get(text)
            if memo is None or not (memo.known(key, digest) or memo.knows_inventory(key, digest)):
                self.docs[key] = compose.compose(text, checked)

    def get(self, path: str) -> tuple[str, list[Any]]:
        if path not in self.docs:
            self.docs[path] = compose.compose(self.walked.get(path, path), self.checked)
        return self.docs[path]

    def values(self, path: str, shown: str) -> tuple[str, dict[str, Var]] | None:
        """The text of a vars file and the variables the preflight's scan built from it, if it built them with
        shown as their origins' file."""
        walked = self.walked.get(path, path)
        found = self.checked.values.get(walked)
        if found is None or found[0] != shown:
            return None
        return self.checked.texts[walked], found[1]

    def digest(self, path: str) -> bytes | None:
        """The digest of the content read for path, when a memo is in use."""
        return self.checked.digests.get(self.walked.get(path, path))


def parse_json(text: str) -> tuple[bool, Any]:
    """Ansible tries JSON before YAML for every file."""
    if "__ansible_" in text:
        raise Unsupported("Ansible JSON markers")
    start = text.lstrip(" \t\n\r")[:1]  # json's whitespace; a JSON text's first character starts its value
    if not start or start not in _JSON_STARTS:
        return False, None  # json.loads would fail: spares raising and catching its error for every YAML file
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None

"""Where each word of a command line kept in YAML is written: the flag's own line and column inside the scalar.

The loaders give a value's origin as the start of its scalar (the opening quote, the `>` or `|` of a block, the
first character of a plain one). A finding on `--tensor-parallel-size 6` inside `vllm_args` should point at the
flag, so the scalar is found again in the file's text (libyaml's scanner, the same marks the loaders record) and
each word looked for in order inside it. A word the scalar spells differently (an escape inside a double-quoted
string, a line folded in its middle) takes the position of the word before it; nothing here is ever guessed past
the scalar's end.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ..finding import Origin

_ESCAPED = "\"'\\\n"


class Texts:
    """File texts by the path an Origin names: an editor's unsaved buffers first, then the file on disk (cached)."""

    def __init__(self, overlay: Mapping[str, str] | None = None) -> None:
        self._overlay = overlay or {}
        self._texts: dict[str, str | None] = {}
        self._spans: dict[str, dict[tuple[int, int], tuple[int, int]]] = {}

    def text(self, file: str) -> str | None:
        """The text of file (absolute, or relative to the working directory), None when it cannot be read."""
        if file not in self._texts:
            path = os.path.abspath(file)
            text = self._overlay.get(path)
            if text is None:
                try:
                    with open(path, encoding="utf-8") as handle:
                        text = handle.read()
                except (OSError, UnicodeDecodeError):
                    text = None
            self._texts[file] = text
        return self._texts[file]

    def span(self, origin: Origin) -> tuple[str, int, int] | None:
        """(text, start, end) of the scalar that begins at origin, or None."""
        if not origin.file or origin.line is None or origin.column is None:
            return None
        text = self.text(origin.file)
        if text is None:
            return None
        spans = self._spans.get(origin.file)
        if spans is None:
            spans = self._spans[origin.file] = _scalars(text)
        found = spans.get((origin.line, origin.column))
        return (text, *found) if found else None


def _scalars(text: str) -> dict[tuple[int, int], tuple[int, int]]:
    """Every scalar of a YAML text: (1-based line, column) of its start -> its [start, end) in text.

    The scanner only: no tag is resolved, no value built. A text libyaml cannot scan to the end keeps what it
    found before the error (the loader has reported the error)."""
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    starts = _line_starts(text)
    found: dict[tuple[int, int], tuple[int, int]] = {}
    scanner = loader_class(text)
    try:
        while scanner.check_token():
            token = scanner.get_token()
            if isinstance(token, yaml.ScalarToken):
                start, end = token.start_mark, token.end_mark
                found[(start.line + 1, start.column + 1)] = (starts[start.line] + start.column,
                                                             starts[min(end.line, len(starts) - 1)] + end.column)
    except yaml.YAMLError:
        pass
    finally:
        scanner.dispose()
    return found


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _at(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of text[index]."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def locate(texts: Texts, origin: Origin, words: Sequence[str]) -> list[Origin]:
    """The origin of each word of one scalar, in order (each at or after the one before); origin itself where the
    scalar or a word cannot be found."""
    found = texts.span(origin)
    if found is None:
        return [origin] * len(words)
    text, cursor, end = found
    out: list[Origin] = []
    last = origin
    for word in words:
        index = _find(text, word, cursor, end)
        if index is None:
            out.append(last)
            continue
        line, column = _at(text, index)
        last = Origin(origin.file, line, column)
        out.append(last)
        cursor = index + max(1, len(word))
    return out


def _find(text: str, word: str, start: int, end: int) -> int | None:
    """Where word is written in text[start:end]: whole, else its longest head that needs no escaping (2+ chars)."""
    if not word:
        return None
    index = text.find(word, start, end)
    if index >= 0:
        return index
    head = word
    for position, char in enumerate(word):
        if char in _ESCAPED:
            head = word[:position]
            break
    if len(head) >= 2 and head != word:
        index = text.find(head, start, end)
        return index if index >= 0 else None
    return None

"""Positions in editor text: pdlint's 1-based line:column (code points) to LSP's 0-based UTF-16 ranges."""
from __future__ import annotations

import functools
import re

# A scalar as written at a value's position: quoted, or plain up to a comment, a flow indicator or the line's end.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|[^\s,\]}#][^,\]}#]*?(?=\s+#|\s*[,\]}]|\s*$)')


def line_of(text: str, line: int) -> str:
    """The 1-based line of text ('' past the end)."""
    lines = _lines(text)
    return lines[line - 1] if 0 < line <= len(lines) else ""


@functools.lru_cache(maxsize=64)
def _lines(text: str) -> tuple[str, ...]:
    # Asked once per diagnostic and related location of a file: split each text once (str hashes are cached).
    return tuple(text.splitlines())


def utf16(line: str, column: int) -> int:
    """0-based UTF-16 offset of the 0-based code point column in line (LSP counts UTF-16 units)."""
    if column > len(line):  # past the text the editor has (or pdlint read differently): as pdlint counts
        return column + utf16(line, len(line)) - len(line)
    head = line[:column]
    return len(head) + sum(1 for ch in head if ord(ch) > 0xFFFF)


def token(line: str, column: int) -> tuple[int, int] | None:
    """(start, end) code point columns (0-based) of the scalar starting at the 1-based column, if one does."""
    match = _TOKEN.match(line, column - 1) if column >= 1 else None
    return (match.start(), match.end()) if match else None


def unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text

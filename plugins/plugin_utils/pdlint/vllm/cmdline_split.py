"""`vllm_args` into argv elements, each with the offset of its first source character (cmdline.argv)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_BLANK = " \t\n"
# Inside double quotes a backslash escapes only these (POSIX Shell Command Language 2.2.3); elsewhere it stays.
_DQ_ESCAPES = '$`"\\\n'


class SplitError(ValueError):
    """A string a POSIX shell would not split: an unbalanced quote, a trailing backslash."""

    def __init__(self, message: str, offset: int, item: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.item = item  # the vllm_args list item it is in (None: vllm_args is one string)


def words(text: str) -> Iterator[tuple[str, int]]:
    """(word, offset of its first source character) as a POSIX shell splits text: quotes removed, no expansion.

    Single quotes keep everything; double quotes keep everything but \\ before $ ` " \\ newline; an unquoted
    backslash keeps the next character; backslash-newline joins lines (outside single quotes); `#` at the start of
    a word ends the line.
    """
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in _BLANK:
            i += 1
        elif text.startswith("\\\n", i):
            i += 2
        elif char == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            word, i2 = _word(text, i)
            yield word, i
            i = i2


def _word(text: str, i: int) -> tuple[str, int]:
    """The word starting at i and where it ends."""
    out: list[str] = []
    n = len(text)
    while i < n and text[i] not in _BLANK:
        char = text[i]
        if char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise SplitError("unbalanced single quote", i)
            out.append(text[i + 1:end])
            i = end + 1
        elif char == '"':
            i = _double(text, i, out)
        elif char == "\\":
            if i + 1 >= n:
                raise SplitError("trailing backslash", i)
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out), i


def _double(text: str, start: int, out: list[str]) -> int:
    """Appends the double-quoted part at start to out; returns the offset after its closing quote."""
    i, n = start + 1, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            return i + 1
        if char == "\\" and i + 1 < n and text[i + 1] in _DQ_ESCAPES:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(char)
            i += 1
    raise SplitError("unbalanced double quote", start)


def rendered(item: Any) -> str:
    """A list item as Ansible renders it into the command line (`{{ item }}`: True -> "True", 2 -> "2")."""
    return item if isinstance(item, str) else str(item)


def joined(text: str) -> bool:
    """True for an item a role joins into the command line with spaces: `--tensor-parallel-size 2`.

    Its first word is a flag and whitespace comes before any `=` (`--x={"a": 1}` is one element).
    """
    if not text.startswith("-"):
        return False
    blank = min((p for p in (text.find(c) for c in _BLANK) if p >= 0), default=-1)
    equals = text.find("=")
    return blank > 0 and (equals < 0 or blank < equals)

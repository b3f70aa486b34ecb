"""`vllm_args` into argv elements, each with the offset of its first source character (cmdline.argv)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_BLANK = " \t\n"
# Inside double quotes a backslash escapes only these (POSIX Shell Command Language 2.2.3); elsewhere it stays.
_DQ_ESCAPES = '$`"\\\n'
_OPERATOR = ";&|<>()"  # unquoted, these start an operator (POSIX 2.3), never part of a word
_OPERATORS = ("&>>", "<<-", "&&", "||", ";;", "|&", "&>", ">>", "<<", ">&", "<&", ">|", "<>",
              ";", "&", "|", "<", ">", "(", ")")  # longest first
ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class SplitError(ValueError):
    """A string a POSIX shell would not split: an unbalanced quote, a trailing backslash."""

    def __init__(self, message: str, offset: int, item: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.item = item  # the vllm_args list item it is in (None: vllm_args is one string)


def words(text: str) -> Iterator[tuple[str, int, str]]:
    """(word, offset of its first source character, kind) as a POSIX shell splits text: quotes removed, no expansion.

    kind: "word"; "op" for an operator (`;`, `&`, `|`, `&&`, `>`, `2>`, `>&`, `(`...), which a shell never passes
    as an argument; "expand" for a word a shell would expand (`$VAR`, `${VAR}`, `$(...)`, backticks, outside single
    quotes); "assign" for a word that starts `NAME=` unquoted (an environment assignment before a command).
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
        elif char in _OPERATOR:
            op = _operator(text, i)
            yield op, i, "op"
            i += len(op)
        else:
            word, i2, expands = _word(text, i)
            if i2 < n and text[i2] in "<>" and text[i:i2].isdigit():  # 2>file: an IO number, part of the operator
                op = text[i:i2] + _operator(text, i2)
                yield op, i, "op"
                i = i2 + len(op) - (i2 - i)
                continue
            kind = "expand" if expands else "assign" if ASSIGN.match(text, i) else "word"
            yield word, i, kind
            i = i2


def _operator(text: str, i: int) -> str:
    """The longest shell operator at i (POSIX 2.3 rule 6, with bash's &> and |&)."""
    return next(op for op in _OPERATORS if text.startswith(op, i))


def _word(text: str, i: int) -> tuple[str, int, bool]:
    """The word starting at i, where it ends, and whether a shell would expand part of it."""
    out: list[str] = []
    n = len(text)
    expands = False
    while i < n and text[i] not in _BLANK and text[i] not in _OPERATOR:
        char = text[i]
        if char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise SplitError("unbalanced single quote", i)
            out.append(text[i + 1:end])
            i = end + 1
        elif char == '"':
            i, quoted = _double(text, i, out)
            expands = expands or quoted
        elif char == "\\":
            if i + 1 >= n:
                raise SplitError("trailing backslash", i)
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        elif text.startswith("$(", i):  # a command substitution: its `)` and what is inside stay in the word
            end = _closing(text, i + 1)
            out.append(text[i:end])
            expands, i = True, end
        else:
            expands = expands or _expansion(text, i)
            out.append(char)
            i += 1
    return "".join(out), i, expands


def _closing(text: str, start: int) -> int:
    """The offset after the `)` that closes the `(` at start (nesting counted), or the end of text."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return len(text)


def _expansion(text: str, i: int) -> bool:
    """A `$` that starts a parameter, command or arithmetic expansion, or a backtick."""
    if text[i] == "`":
        return True
    return text[i] == "$" and i + 1 < len(text) and (
        text[i + 1] in "({@*#?$!-" or text[i + 1].isalnum() or text[i + 1] == "_")


def _double(text: str, start: int, out: list[str]) -> tuple[int, bool]:
    """Appends the double-quoted part at start to out; returns the offset after its closing quote, and whether a
    shell expands part of it."""
    i, n = start + 1, len(text)
    expands = False
    while i < n:
        char = text[i]
        if char == '"':
            return i + 1, expands
        if char == "\\" and i + 1 < n and text[i + 1] in _DQ_ESCAPES:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            expands = expands or _expansion(text, i)
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

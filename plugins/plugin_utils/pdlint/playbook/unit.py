"""The launch line of a rendered systemd unit: `ExecStart=` as argv words, `Environment=` as assignments before it.

systemd joins a line that ends in a backslash with the next (the backslash becomes a space), skips comment lines
(`#`, `;`) and splits ExecStart= and Environment= values with shell-like quoting (systemd.service(5), "Command
lines"; systemd.exec(5), "Environment="). The prefixes `@ - : + !` of ExecStart= change how it runs, not what.
Each word keeps where it came from (render.py): the variable that set it, else the template's own line.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import re
from collections.abc import Mapping

from ..finding import Origin
from ..vllm.arguments.split import SplitError, words
from .render import Rendered

_KEY = re.compile(r"^\s*(ExecStart|EnvironmentFile|Environment)\s*=\s*")
_PREFIXES = "@-:+!|"
_QUOTES = "\"'"


@dataclasses.dataclass(frozen=True)
class Word:
    text: str
    origin: Origin
    from_variable: bool  # set by a variable (not the template's own text)
    variable: str | None = None  # the one variable that gave the whole word
    via: Origin | None = None  # then: where the template reads it


@dataclasses.dataclass(frozen=True)
class Line:
    """The unit's engine: its environment assignments, then ExecStart's words."""

    words: tuple[Word, ...]
    start: Origin  # where ExecStart= is written
    unmodelled: tuple[tuple[Origin, str], ...] = ()  # what the file says that pdlint does not read (EnvironmentFile=)


class Unreadable(Exception):
    """ExecStart= that systemd would not split (an unclosed quote): the message says why."""

    def __init__(self, message: str, origin: Origin) -> None:
        super().__init__(message)
        self.origin = origin
        self.kind = ""  # the file's kind (written.py), once known: "unit" says ExecStart=


def logical(text: str) -> list[tuple[str, list[int]]]:
    """The unit's logical lines, each with the offset in text of every character (continuations joined)."""
    out: list[tuple[str, list[int]]] = []
    chars: list[str] = []
    offsets: list[int] = []
    position = 0
    for raw in text.split("\n"):
        start, position = position, position + len(raw) + 1
        stripped = raw.lstrip()
        if chars and stripped[:1] in ("#", ";"):
            continue  # a comment inside a continuation is skipped
        body = raw.rstrip()
        joined = body.endswith("\\")
        if joined:
            body = body[:-1]
        chars.append(body + (" " if joined else ""))
        offsets += list(range(start, start + len(body))) + ([start + len(body)] if joined else [])
        if not joined:
            out.append(("".join(chars), offsets))
            chars, offsets = [], []
    if chars:
        out.append(("".join(chars), offsets))
    return out


class Tracer:
    """Origins of rendered text: a variable's where the output came from one, else found in the template's text."""

    def __init__(self, rendered: Rendered, source: str, origins: Mapping[str, Origin], cursor: int = 0) -> None:
        self.rendered = rendered
        self.source = source  # the text the literal words are looked for in (the template, the task's file)
        self.origins = origins
        self.cursor = cursor

    def word(self, text: str, raw: str, offsets: list[int]) -> Word:
        """The word text, written raw (quotes and all) at offsets of the rendered text."""
        chars = [(c, self._index(o)) for c, o in zip(raw, offsets)]
        used = [i for _c, i in chars if i >= 0]
        if not used:
            return Word(text, self.literal(text), False)
        head = raw[:len(raw) - len(raw.lstrip("-"))] if raw.startswith("--") else ""
        if head:
            head = raw[:raw.find("=") + 1] if "=" in raw else ""
        own = [c for (c, i) in chars[len(head):] if i < 0 and c not in _QUOTES and not c.isspace()]
        if own:  # the template writes part of the word itself (a JSON value around a variable): its line
            first = next(k for k, (_c, i) in enumerate(chars) if i >= 0)
            return Word(text, self.literal(raw[:first].strip().strip(_QUOTES) or text), True)
        expression = self.rendered.expressions[used[0]]
        names = sorted(expression.names)
        if len(set(used)) == 1 and len(names) == 1 and names[0] in self.origins:
            return Word(text, self.origins[names[0]], True, names[0], expression.origin)
        return Word(text, expression.origin, True)

    def _index(self, offset: int) -> int:
        return self.rendered.source[offset] if offset < len(self.rendered.source) else -1

    def literal(self, text: str) -> Origin:
        """The template's line and column of a word it writes itself (the next place it is written)."""
        index = self.source.find(text, self.cursor) if text else -1
        if index < 0:
            index = self.source.find(text) if text else -1
        if index < 0:
            return Origin(self.rendered.template)
        self.cursor = index + len(text)
        line = self.source.count("\n", 0, index) + 1
        return Origin(self.rendered.template, line, index - (self.source.rfind("\n", 0, index) + 1) + 1)


def split(value: str, offsets: list[int], tracer: Tracer, origin: Origin) -> list[Word]:
    return [word for word, _kind in split_kinds(value, offsets, tracer, origin)]


def split_kinds(value: str, offsets: list[int], tracer: Tracer, origin: Origin) -> list[tuple[Word, str]]:
    """value's words as a shell splits it, each with its kind ("word", "op", "expand", "assign")."""
    try:
        found = list(words(value))
    except SplitError as exc:
        raise Unreadable(exc.message, origin) from None
    out: list[tuple[Word, str]] = []
    for index, (text, start, kind) in enumerate(found):
        end = found[index + 1][1] if index + 1 < len(found) else len(value)
        raw = value[start:end].rstrip()
        out.append((tracer.word(text, raw, offsets[start:start + len(raw)]), kind))
    return out


def runs_vllm(found: list[Word]) -> bool:
    """Whether the line starts vLLM (`vllm serve`, its api_server module, Dynamo's worker): another program's line
    is no launch and says nothing."""
    pairs = list(itertools.pairwise(w.text for w in found))
    return any(os.path.basename(t) == "vllm" and after == "serve" for t, after in pairs) or any(
        before == "-m" and (t.startswith("vllm.entrypoints") or t.split(".")[:2] == ["dynamo", "vllm"])
        for before, t in pairs)


def with_values(found: list[Word]) -> list[Word]:
    """A flag whose value a variable sets stands for that variable: the value decided (the rules report a value at
    its flag)."""
    out = list(found)
    for index, word in enumerate(found[:-1]):
        after = found[index + 1]
        if word.text.startswith("-") and "=" not in word.text and after.from_variable \
                and not after.text.startswith("-"):
            out[index] = dataclasses.replace(word, origin=after.origin)
    return out


def read(rendered: Rendered, source: str, origins: Mapping[str, Origin], cursor: int = 0) -> Line | None:
    """The unit's engine, or None when it has no ExecStart= (then it starts nothing pdlint reads). cursor: where the
    unit's text starts in source (a copy task's `content:` in its tasks file)."""
    tracer = Tracer(rendered, source, origins, cursor)
    env: list[Word] = []
    command: list[Word] | None = None
    start = Origin(rendered.template)
    unmodelled: list[tuple[Origin, str]] = []
    for text, offsets in logical(rendered.text):
        match = _KEY.match(text)
        if match is None:
            continue
        value, value_offsets = text[match.end():], offsets[match.end():]
        where = tracer.word(match.group(1), match.group(1), offsets[match.start(1):match.end(1)]).origin
        if match.group(1) == "Environment":
            env += split(value, value_offsets, tracer, where)
            continue
        if match.group(1) == "EnvironmentFile":
            unmodelled.append((where, f"EnvironmentFile={value.strip()} is not read: the variables it sets are not "
                               "in the engine's env pdlint checks"))
            continue
        bare = value.lstrip(_PREFIXES)
        skipped = len(value) - len(bare)
        if bare.strip():  # an empty ExecStart= resets the list: the last one given is what runs
            command, start = split(bare, value_offsets[skipped:], tracer, where), where
    if command is None or not runs_vllm(command):
        return None
    return Line(tuple(env + with_values(command)), start, tuple(unmodelled))

"""The engines a rendered shell script starts: each line that runs vLLM (`vllm serve`, its api_server module,
Dynamo's worker), with what the script exported before it as the engine's env.

Lines are joined at a trailing backslash and at a quote left open (a JSON value over several lines), comments and
blank lines skipped. `export NAME=value` (or `NAME=value` then `export NAME`) before the line is the engine's env;
a plain `NAME=value` line is a shell variable, not the engine's (the shell passes only exported ones), but `$NAME`
in the line reads it, as does `export NAME="$OTHER"`. An export of another expansion (`PATH=$PATH:/opt`) is not
the engine's env pdlint checks. The line's own words go to the rules as they are (`exec`, `&&`, `NAME=value vllm serve`,
redirections: the `vllm_args` reader, launch/shell.py, picks the command that starts vLLM). An expansion the
script does not set (`$MODEL` from the GPU host's environment) cannot be read statically: unresolved.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping

from ..finding import Origin
from ..hostvars import Unresolved
from .render import Rendered
from .unit import Line, Tracer, Word, logical, runs_vllm, split_kinds, with_values

_CONTROL = frozenset((";", "&", "|", "&&", "||", "|&"))
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_READ = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$")


def _statements(rendered: Rendered) -> list[tuple[str, list[int]]]:
    """The script's logical lines, a line whose quote is still open joined with the next (with its newline)."""
    out: list[tuple[str, list[int]]] = []
    pending: tuple[str, list[int]] | None = None
    for text, offsets in logical(rendered.text):
        if pending is not None:
            text, offsets = pending[0] + "\n" + text, [*pending[1], (pending[1] or [0])[-1] + 1, *offsets]
            pending = None
        if _open_quote(text):
            pending = (text, offsets)
            continue
        out.append((text, offsets))
    if pending is not None:
        out.append(pending)  # the split says which quote is left open
    return out


def _open_quote(text: str) -> bool:
    quote = ""
    escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            break
    return bool(quote)


def read(rendered: Rendered, source: str, origins: Mapping[str, Origin], cursor: int = 0) -> list[Line] | Unresolved:
    """Each line of the script that starts vLLM as an engine's line (none: the script starts no vLLM)."""
    tracer = Tracer(rendered, source, origins, cursor)
    shell: dict[str, Word] = {}  # NAME=value lines: the shell's variables
    exported: dict[str, Word] = {}
    unmodelled: list[tuple[Origin, str]] = []
    out: list[Line] = []
    for text, offsets in _statements(rendered):
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        saved = tracer.cursor
        where = tracer.literal(stripped.split()[0])
        tracer.cursor = saved
        found = split_kinds(text, offsets, tracer, where)
        if not found:
            continue
        first = found[0][0].text
        if all(kind == "assign" for _w, kind in found):
            shell.update({w.text.split("=", 1)[0]: w for w, _k in found})
        elif first == "export":
            for word, kind in found[1:]:
                name, _eq, value = word.text.partition("=")
                read = _READ.match(value)
                if kind == "assign":
                    exported[name] = shell[name] = word
                elif _eq and read and (read.group(1) or read.group(2)) in shell:  # NAME="$OTHER": its value
                    given = shell[read.group(1) or read.group(2)]
                    exported[name] = shell[name] = Word(f"{name}={given.text.split('=', 1)[1]}", given.origin,
                                                        given.from_variable, given.variable, given.via)
                elif _NAME.match(word.text) and word.text in shell:
                    exported[word.text] = shell[word.text]
        elif first == "unset":
            for word, _kind in found[1:]:
                exported.pop(word.text, None)
                shell.pop(word.text, None)
        elif first in ("source", ".") and len(found) > 1:
            unmodelled.append((found[0][0].origin, f"`{first} {found[1][0].text}` is not read: the variables it sets "
                               "are not in the engine's env pdlint checks"))
        elif runs_vllm([w for w, _k in found]):
            line = _line(found, shell, exported, unmodelled)
            if isinstance(line, Unresolved):
                return line
            out.append(line)
    return out


def _line(found: list[tuple[Word, str]], shell: Mapping[str, Word], exported: Mapping[str, Word],
          unmodelled: list[tuple[Origin, str]]) -> Line | Unresolved:
    """The words of a line that starts vLLM, the exported variables put before its command."""
    program = _program([w for w, _k in found])
    control = [i for i, (w, kind) in enumerate(found[:program]) if kind == "op" and w.text in _CONTROL]
    at = control[-1] + 1 if control else 0
    end = next((i for i in range(program, len(found)) if found[i][1] == "op" and found[i][0].text in _CONTROL),
               len(found))
    words: list[Word] = []
    for index, (word, kind) in enumerate(found):
        if kind != "expand" or not at <= index < end:  # another command's expansion is not the engine's
            words.append(word)
            continue
        read = _READ.match(word.text)
        name = (read.group(1) or read.group(2)) if read else None
        if name is None or name not in shell:
            return Unresolved(f"{word.text} is expanded by the shell on the GPU host ({word.origin})")
        value = shell[name]  # the script's own variable: the line that set it, as a template's variable
        words.append(Word(value.text.split("=", 1)[1], value.origin, True, name, word.origin))
    env = [dataclasses.replace(w, text=f"{name}={w.text.split('=', 1)[1]}") for name, w in exported.items()]
    return Line(tuple(with_values(words[:at] + env + words[at:])), words[program].origin, tuple(unmodelled))


def _program(words: list[Word]) -> int:
    """The index of the word that names the program starting vLLM."""
    for index, word in enumerate(words):
        after = words[index + 1].text if index + 1 < len(words) else ""
        if os.path.basename(word.text) == "vllm" and after == "serve":
            return index
        if after == "-m" and index + 2 < len(words):
            module = words[index + 2].text
            if module.startswith("vllm.entrypoints") or module.split(".")[:2] == ["dynamo", "vllm"]:
                return index
    return 0

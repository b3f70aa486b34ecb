"""The launch lines of a file a task writes (a template, or a copy's `content:` or files/ `src:`), by what the file
is: a systemd unit (it writes ExecStart=), a compose file (named compose.yaml / docker-compose.yml, or a top-level
`services:`), a shell script (a `#!` first line, or named *.sh / *.bash); any other file starts nothing.

A template is rendered as the template module renders it; a copy's `content:` as a task argument (its words are
looked for in the tasks file, after the `content:` key); a copy's `src:` is copied as it is (no templating).
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any

from ..finding import Origin
from ..hostvars import Unresolved
from ..load.tagged import origin_of
from ..paths import display_path
from . import compose, render, script, unit
from .project import Launch

_UNIT = re.compile(r"^\s*ExecStart\s*=", re.MULTILINE)
_SERVICES = re.compile(r"^services\s*:", re.MULTILINE)
_COMPOSE = re.compile(r"^(docker-)?compose(\.[\w-]+)*\.ya?ml(\.j2)?$")
_SCRIPT = re.compile(r"\.(sh|bash)(\.j2)?$")


@dataclasses.dataclass(frozen=True)
class Unrendered:
    """The file cannot be rendered (the reason is ansible-core's)."""

    reason: str


@dataclasses.dataclass(frozen=True)
class Lines:
    """The file's kind ("unit", "compose", "script"), and (name, line) per engine it starts (name: the compose
    service, a script's line number; "" for a unit's one)."""

    kind: str
    lines: list[tuple[str, unit.Line]]
    unread: Unresolved | None = None  # a compose file or script pdlint cannot read statically, and why


def _rendered(launch: Launch, source: str, variables: Mapping[str, Any]) -> tuple[render.Rendered | Unresolved, int]:
    """The file's text for this host, and where its text starts in source (the text its literal words are in)."""
    if launch.module == "template":
        return render.render(launch.source, source, variables), 0
    if isinstance(launch.args, str):  # copy content:
        origin = origin_of(launch.args) or launch.origin
        return render.render_value(launch.args, origin, variables), _offset(source, origin)
    return render.Rendered(source, (-1,) * len(source), (), display_path(launch.source)), 0


def _offset(text: str, origin: Origin) -> int:
    offset = 0
    for _unused in range((origin.line or 1) - 1):
        offset = text.find("\n", offset) + 1
    return offset + (origin.column or 1) - 1


def kind_of(text: str, names: tuple[str, ...]) -> str | None:
    """What the file is; None: none of them (a config file, a page), which starts nothing pdlint reads."""
    if _UNIT.search(text):
        return "unit"
    if any(_COMPOSE.match(os.path.basename(n)) for n in names) or _SERVICES.search(text):
        return "compose"
    if text.startswith("#!") or any(_SCRIPT.search(os.path.basename(n)) for n in names):
        return "script"
    return None


def read(launch: Launch, source: str, variables: Mapping[str, Any], origins: Mapping[str, Origin],
         dest: str) -> Lines | Unrendered:
    """The engines' lines of the file launch writes on one host. Raises unit.Unreadable (an unclosed quote)."""
    names = (dest, launch.source) if launch.module == "template" or not isinstance(launch.args, str) else (dest,)
    if launch.module == "copy" and kind_of(launch.args if isinstance(launch.args, str) else source, names) is None:
        return Lines("", [])  # a copy of another file (a config, a key): no launch, and nothing to say of it
    rendered, cursor = _rendered(launch, source, variables)
    if isinstance(rendered, Unresolved):
        return Unrendered(rendered.reason)
    kind = kind_of(rendered.text, names)
    if kind is None:
        return Lines("", [])
    try:
        return _read(kind, rendered, source, origins, cursor)
    except unit.Unreadable as exc:
        exc.kind = kind
        raise


def _read(kind: str, rendered: render.Rendered, source: str, origins: Mapping[str, Origin], cursor: int) -> Lines:
    if kind == "unit":
        line = unit.read(rendered, source, origins, cursor)
        return Lines(kind, [] if line is None else [("", line)])
    if kind == "compose":
        services = compose.read(rendered, source, origins, cursor)
        if isinstance(services, Unresolved):
            return Lines(kind, [], services)
        return Lines(kind, services)
    found = script.read(rendered, source, origins, cursor)
    if isinstance(found, Unresolved):
        return Lines(kind, [], found)
    return Lines(kind, [(str(line.start.line or index) if len(found) > 1 else "", line)
                        for index, line in enumerate(found)])

"""The launch line a task writes in its own arguments: a container's `entrypoint:` + `command:` and `env:`
(community.docker.docker_container, containers.podman.podman_container), or a `command`/`shell` task's line.

Each argument is rendered over the task's variables in ansible-core's sandbox; a word keeps the origin of the value
that set it (a variable, else the task's own line and column in its file). A container without `entrypoint:` runs its
image's: vLLM's images (vllm/vllm-openai, rocm/vllm, ...) start `vllm serve`, so a `command:` of the model and flags
is read after it. A line that does not start vLLM is no launch and says nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..finding import Origin
from ..hostvars import Unresolved
from ..load.tagged import origin_of
from . import render
from .project import COMMANDS, Launch
from .unit import Line, Tracer, Unreadable, Word, runs_vllm, split, with_values


class _Words:
    """Rendering task arguments into words, each traced to where it was set."""

    def __init__(self, launch: Launch, variables: Mapping[str, Any], origins: Mapping[str, Origin]) -> None:
        self.launch = launch
        self.variables = variables
        self.origins = origins
        self.texts: dict[str, str] = {}

    def _file(self, origin: Origin) -> tuple[str, int]:
        """The text of the file origin is in, and the offset of origin in it."""
        if origin.file not in self.texts:
            try:
                with open(origin.file, encoding="utf-8") as handle:
                    self.texts[origin.file] = handle.read()
            except (OSError, UnicodeDecodeError):
                self.texts[origin.file] = ""
        text = self.texts[origin.file]
        offset = 0
        for _unused in range((origin.line or 1) - 1):
            offset = text.find("\n", offset) + 1
        return text, offset + (origin.column or 1) - 1

    def line(self, value: Any) -> list[Word]:
        """A string split as a shell splits it; a list, one word per item."""
        origin = origin_of(value) or self.launch.origin
        if isinstance(value, (list, tuple)):
            return [self.one(item, origin) for item in value]
        return self.words(str(value), origin)

    def words(self, text: str, origin: Origin) -> list[Word]:
        rendered = render.render_value(text, origin, self.variables)
        if isinstance(rendered, Unresolved):
            raise _Unrendered(rendered.reason)
        source, cursor = self._file(origin)
        return split(rendered.text, list(range(len(rendered.text))),
                     Tracer(rendered, source, self.origins, cursor), origin)

    def one(self, item: Any, around: Origin) -> Word:
        """A list item: one argv word, whatever it holds."""
        origin = origin_of(item) or around
        if not isinstance(item, str):
            return Word(str(item), origin, False)
        rendered = render.render_value(item, origin, self.variables)
        if isinstance(rendered, Unresolved):
            raise _Unrendered(rendered.reason)
        source, cursor = self._file(origin)
        found = Tracer(rendered, source, self.origins, cursor).word(
            rendered.text, rendered.text, list(range(len(rendered.text))))
        return found if found.from_variable else Word(found.text, origin, False)


class _Unrendered(Exception):
    pass


def read(launch: Launch, variables: Mapping[str, Any], origins: Mapping[str, Origin]) -> Line | Unresolved | None:
    """The task's engine, why it cannot be rendered, or None when it starts no vLLM."""
    args = launch.args
    words = _Words(launch, variables, origins)
    try:
        if launch.module in COMMANDS:
            if isinstance(args, Mapping):
                given = args.get("argv", args.get("cmd"))
            else:
                given = args
            if given is None:
                return None
            found = words.line(given)
            env: list[Word] = []
        else:
            if not isinstance(args, Mapping):
                return None
            found = _container(words, args)
            env = _env(words, args.get("env"))
    except _Unrendered as exc:
        return Unresolved(str(exc))
    except Unreadable as exc:
        raise exc
    if not found or not runs_vllm(found):
        return None
    return Line(tuple(env + with_values(found)), launch.origin)


def _container(words: _Words, args: Mapping[str, Any]) -> list[Word]:
    command = [] if args.get("command") is None else words.line(args["command"])
    if args.get("entrypoint") is not None:
        return words.line(args["entrypoint"]) + command
    image = args.get("image")
    if isinstance(image, str) and serves(image) and not runs_vllm(command):
        at = origin_of(image) or words.launch.origin
        return [Word("vllm", at, False), Word("serve", at, False), *command]
    return command


def serves(image: str) -> bool:
    """An image of vLLM's (vllm/vllm-openai, rocm/vllm, a vllm-* build): its entrypoint is vLLM's server."""
    name = image.rsplit("/", 1)[-1].split("@")[0].split(":")[0]
    return name == "vllm" or name.startswith("vllm-")


def _env(words: _Words, env: Any) -> list[Word]:
    """The container's environment as NAME=value words before the command (the engine's env)."""
    if not isinstance(env, Mapping):
        return []
    out: list[Word] = []
    for name, value in env.items():
        origin = origin_of(value) or words.launch.origin
        word = words.one(value, origin) if isinstance(value, str) else Word(str(value), origin, False)
        out.append(Word(f"{name}={word.text}", word.origin, word.from_variable, word.variable, word.via))
    return out

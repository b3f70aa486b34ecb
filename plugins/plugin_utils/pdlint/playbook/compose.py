"""The engines a rendered compose file starts: each service whose `entrypoint:` + `command:` runs vLLM, its
`environment:` (a list of NAME=value, or a mapping) as the engine's env.

The file is parsed as YAML after rendering (PyYAML's nodes keep each scalar's place in the rendered text), and each
word is traced back to the template as a unit's are (unit.py): the variable that set it, else the template's own
line. A string `command:` is split as a shell splits it (as Compose does); a list is one argv word per item. A
service without `entrypoint:` runs its image's: vLLM's images start `vllm serve` (task_line.py).
"""
from __future__ import annotations

from collections.abc import Mapping

import yaml

from ..finding import Origin
from ..hostvars import Unresolved
from .render import Rendered
from .task_line import serves
from .unit import Line, Tracer, Word, runs_vllm, split, with_values


def read(rendered: Rendered, source: str, origins: Mapping[str, Origin],
         cursor: int = 0) -> list[tuple[str, Line]] | Unresolved:
    """(service, its line) for each service that starts vLLM."""
    try:
        root = yaml.compose(rendered.text)
    except yaml.YAMLError as exc:
        return Unresolved(f"the rendered compose file is no YAML: {str(exc).splitlines()[0]}")
    services = _get(root, "services")
    if not isinstance(services, yaml.MappingNode):
        return []
    tracer = Tracer(rendered, source, origins, cursor)
    out: list[tuple[str, Line]] = []
    for key, service in services.value:
        if not isinstance(service, yaml.MappingNode):
            continue
        reader = _Reader(rendered, tracer)
        named = reader.scalar(key).origin  # the service's name: each field's words are looked for after it
        base = tracer.cursor
        entrypoint = _get(service, "entrypoint")
        image = _get(service, "image")
        command = reader.line(_get(service, "command"))
        if entrypoint is not None:
            tracer.cursor = base
            command = reader.line(entrypoint) + command
        elif isinstance(image, yaml.ScalarNode) and serves(str(image.value)) and not runs_vllm(command):
            at = reader.scalar(image).origin
            command = [Word("vllm", at, False), Word("serve", at, False), *command]
        if not command or not runs_vllm(command):
            continue
        tracer.cursor = base
        env = reader.env(_get(service, "environment"))
        out.append((str(key.value), Line(tuple(env + with_values(command)), named)))
    return out


def _get(node: yaml.Node | None, name: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((value for key, value in node.value if isinstance(key, yaml.ScalarNode) and key.value == name), None)


class _Reader:
    """A service's scalars as words, each at its place in the rendered text."""

    def __init__(self, rendered: Rendered, tracer: Tracer) -> None:
        self.text = rendered.text
        self.tracer = tracer

    def _offsets(self, node: yaml.ScalarNode) -> list[int]:
        """The rendered text's offset of each character of node's value (past the text: not placed)."""
        start, end = node.start_mark.index, node.end_mark.index
        raw = self.text[start:end]
        value = str(node.value)
        inner = raw[1:-1] if node.style in ("'", '"') else raw
        at = inner.find(value) if value else -1
        if at >= 0:
            first = start + (1 if node.style in ("'", '"') else 0) + at
            return list(range(first, first + len(value)))
        # a folded or block scalar, or one with escapes: each character at the next one like it in the raw text
        # (a fold's space at the line break), else not placed (then found in the template's text)
        out: list[int] = []
        j = start
        for char in value:
            while j < end and self.text[j] != char and not (char in " \n" and self.text[j] in " \n"):
                j += 1
            out.append(j if j < end else len(self.text) + 1)
            j += 1
        return out

    def scalar(self, node: yaml.ScalarNode) -> Word:
        value = str(node.value)
        return self.tracer.word(value, value, self._offsets(node))

    def line(self, node: yaml.Node | None) -> list[Word]:
        if isinstance(node, yaml.SequenceNode):
            return [self.scalar(item) for item in node.value if isinstance(item, yaml.ScalarNode)]
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str") and node.value:
            return split(str(node.value), self._offsets(node), self.tracer, self._origin(node))
        return []

    def _origin(self, node: yaml.Node) -> Origin:
        saved = self.tracer.cursor
        found = self.tracer.literal(str(getattr(node, "value", "")).split(" ", maxsplit=1)[0])
        self.tracer.cursor = saved
        return found

    def env(self, node: yaml.Node | None) -> list[Word]:
        """environment: NAME=value words (a mapping's value None: the host's own, not set here)."""
        out: list[Word] = []
        if isinstance(node, yaml.SequenceNode):
            out += [self.scalar(item) for item in node.value if isinstance(item, yaml.ScalarNode)
                    and "=" in str(item.value)]
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode) or not isinstance(value, yaml.ScalarNode) \
                        or value.tag.endswith(":null"):
                    continue
                named = self.scalar(key).origin  # a literal value is at its name, as an inventory's vllm_env
                word = self.scalar(value)
                origin = word.origin if word.from_variable else named
                out.append(Word(f"{key.value}={word.text}", origin, word.from_variable, word.variable, word.via))
        return out

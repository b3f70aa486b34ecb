"""Bounds on every file pdlint reads, checked before any parser builds values from it.

One pass over libyaml's events (no values are constructed here; for a vars file,
load/fast/variables/vars_events.py builds its variables from the events this pass accepted) measures nesting
depth and the size an alias graph expands to, and finds duplicate keys; plain
byte checks refuse binary, non-UTF-8 and oversized files. What is refused is a
`load-error` naming the file (and line where there is one); duplicate keys are
`yaml[key-duplicates]` warnings.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...finding import Finding, Origin
from ...paths import display_path
from ..errors import load_error

VAULT_HEADER = b"$ANSIBLE_VAULT;"


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one inventory file may cost; refused beyond."""

    max_file_bytes: int = 8 * 1024 * 1024
    max_depth: int = 100
    max_nodes: int = 1_000_000  # YAML nodes after expanding aliases
    max_files: int = 100_000  # entries walked under the inventory and its vars directories


class Refused(Exception):
    """A file pdlint will not read further (exit 2)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def refuse(path: str, message: str, hint: str | None = None, line: int | None = None,
           column: int | None = None) -> Refused:
    return Refused(load_error(Origin(display_path(path), line, column), message, hint))


def oversize(path: str, size: int, limits: Limits) -> Refused:
    """The refusal of a file over the size limit, wherever its size was seen (stat, bytes read, an editor buffer)."""
    return refuse(path, f"file is {size:,} bytes, over the {limits.max_file_bytes:,}-byte limit",
                  "raise the limit with --max-file-size if this file is genuine")


def yaml_error(path: str, exc: Exception) -> Finding:
    """The load-error of YAML libyaml cannot parse (a yaml.YAMLError): at the problem's mark when it has one."""
    import yaml  # only a file being read gets here (a cached run never imports yaml)

    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        where = Origin(display_path(path), mark.line + 1 if mark else None, mark.column + 1 if mark else None)
        return load_error(where, f"YAML syntax error: {problem}", "fix the YAML syntax at this position")
    return load_error(Origin(display_path(path)), f"YAML error: {exc}")


def text_of(data: bytes, path: str, limits: Limits) -> str:
    """The file's text, or Refused: too large, binary, or not UTF-8 (with the line of the first bad byte)."""
    if len(data) > limits.max_file_bytes:
        raise oversize(path, len(data), limits)
    nul = data.find(b"\0")
    if nul >= 0:
        raise refuse(path, "binary file (contains NUL bytes), not an inventory or vars file",
                     "remove it from the inventory directory", data.count(b"\n", 0, nul) + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise refuse(path, f"not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded",
                     "save the file as UTF-8", line, column) from None


def ini_lines(data: bytes, path: str, limits: Limits) -> list[str] | None:
    """The lines ansible-core's INI plugin reads from a file that is not UTF-8, else None (text_of decides).

    Each line is decoded alone and a line whose first byte is # or ; is read as empty, whatever its bytes
    (ansible/ansible#17593); any other undecodable line fails the INI plugin too."""
    if len(data) > limits.max_file_bytes or b"\0" in data:
        return None
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError:
        pass
    result = []
    for line in data.splitlines():
        if line[:1] in (b"#", b";"):
            result.append("")
            continue
        try:
            result.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            return None
    return result


@dataclasses.dataclass
class _Collection:
    is_map: bool
    anchor: str | None
    start: Any
    size: int = 1
    keys: dict[str, int] = dataclasses.field(default_factory=dict)
    at_key: bool = True  # in a mapping: the next node is a key


@dataclasses.dataclass
class Scan:
    """What one pass over a YAML file found."""

    duplicates: list[Finding] = dataclasses.field(default_factory=list)
    top_keys: list[str] = dataclasses.field(default_factory=list)
    syntax_error: Finding | None = None


class _Pass:
    """One scan's state: the open collections, the anchors' sizes, the nodes counted so far."""

    __slots__ = ("path", "limits", "result", "stack", "anchors", "total")

    def __init__(self, path: str, limits: Limits) -> None:
        self.path, self.limits, self.result = path, limits, Scan()
        self.stack: list[_Collection] = []
        self.anchors: dict[str, int] = {}
        self.total = 0

    def count(self, size: int, event: Any) -> None:
        self.total += size
        if self.total > self.limits.max_nodes:
            mark = event.start_mark
            raise refuse(self.path, f"YAML expands to more than {self.limits.max_nodes:,} nodes (an alias bomb?)",
                         "remove the aliases that multiply the document", mark.line + 1, mark.column + 1)

    def deeper(self, event: Any) -> None:
        if len(self.stack) >= self.limits.max_depth:
            mark = event.start_mark
            raise refuse(self.path, f"YAML nested deeper than {self.limits.max_depth} levels",
                         "flatten the structure", mark.line + 1, mark.column + 1)
        self.count(1, event)

    def keyed(self, parent: _Collection, key: str, event: Any) -> None:
        """A key of a mapping: a duplicate warned, the first one kept (and, at the top level, listed)."""
        first = parent.keys.get(key)
        mark = event.start_mark
        if first is not None:
            self.result.duplicates.append(Finding(
                Origin(display_path(self.path), mark.line + 1, mark.column + 1), "yaml[key-duplicates]", "warning",
                f"duplicate key {key!r} (first at line {first}): Ansible silently keeps the later value",
                "remove one of the two keys"))
        else:
            parent.keys[key] = mark.line + 1
            if len(self.stack) == 1:
                self.result.top_keys.append(key)

    def place(self, size: int) -> None:
        """A finished collection or an alias goes into the enclosing collection (never as a key checked here)."""
        if self.stack:
            parent = self.stack[-1]
            parent.size += size
            if parent.is_map:
                parent.at_key = not parent.at_key


def scan_yaml(text: str, path: str, limits: Limits, feed: Callable[[type, Any], None] | None = None) -> Scan:
    """Depth, alias expansion and duplicate keys of a YAML text; Refused when over a limit.

    feed, when given, is called with (type of event, event) for every event once the checks above have
    passed it (load/fast/variables/vars_events.py builds a vars file's values in this same pass); an event over a limit never reaches it."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    state = _Pass(path, limits)
    try:
        parser = loader(text)  # the pure-Python Reader refuses some texts already
        try:
            _events(yaml, parser, state, feed)
        finally:
            parser.dispose()
    except yaml.YAMLError as exc:
        state.result.syntax_error = yaml_error(path, exc)
    return state.result


def _events(yaml: Any, parser: Any, state: _Pass, feed: Callable[[type, Any], None] | None) -> None:
    """parser.get_event until None, as yaml.parse's generator does with check_event (one call per event fewer)."""
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts = {yaml.MappingStartEvent: True, yaml.SequenceStartEvent: False}
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    stack, anchors, max_nodes = state.stack, state.anchors, state.limits.max_nodes
    next_event = parser.get_event
    event = next_event()
    while event is not None:
        kind = type(event)  # the most frequent events first: this loop runs once per YAML node
        if kind is scalar:  # count(1, event) and placing the node written out: most nodes are scalars
            state.total += 1
            if state.total > max_nodes:
                state.count(0, event)
            if event.anchor:
                anchors[event.anchor] = 1
            if stack:
                parent = stack[-1]
                parent.size += 1
                if parent.is_map:
                    if parent.at_key and (event.implicit[0] or event.tag is None) and event.value != "<<":
                        state.keyed(parent, event.value, event)
                    parent.at_key = not parent.at_key
        elif kind in starts:
            state.deeper(event)
            stack.append(_Collection(starts[kind], event.anchor, event))
        elif kind in ends:
            done = stack.pop()
            if done.anchor:
                anchors[done.anchor] = done.size
            state.place(done.size)
        elif kind is alias:
            size = anchors.get(event.anchor, 1)
            state.count(size, event)
            state.place(size)
        if feed is not None:
            feed(kind, event)
        event = next_event()

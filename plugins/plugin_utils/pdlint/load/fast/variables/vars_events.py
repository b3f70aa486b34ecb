"""A vars file's variables built in the guard's own pass over its YAML events: one parse instead of three.

guard.scan_yaml checks each libyaml event (nesting depth, alias expansion, duplicate keys) and then feeds it
to a _Values, which builds what the fast loader would get by composing the file and walking its nodes
(fast_values.keyed_items, from_node and check_tags): the same values, and the same origins in the same order.

What this pass does not model leaves the file without values, and the fast loader composes it as before and
meets the same case there: several documents, a document that is not a mapping, an undefined or repeated
anchor, a merge key, a tag other than the plain ones, a complex key, an alias that repeats a mapping or list
within one value.
"""
from __future__ import annotations

# pylint: disable=unidiomatic-typecheck  # `type(v) is dict` on purpose: one check per event, and a dict subclass
# is never built here
from typing import Any

import yaml

from ....finding import Origin
from ....hostvars import KEY, Path, is_relevant
from ...preflight import guard
from .scalars import FIRST, SIMPLE, UNBUILT, GiveUp, event_scalar, plain
from .values import MAP_TAG, SEQ_TAG, Origins, Var

_SCALAR_EVENT, _ALIAS = yaml.ScalarEvent, yaml.AliasEvent
_MAP_START, _MAP_END = yaml.MappingStartEvent, yaml.MappingEndEvent
_SEQ_START, _SEQ_END = yaml.SequenceStartEvent, yaml.SequenceEndEvent
_WORK = 500_000  # origins copied or compared for aliases, anchors and repeated keys; beyond, compose
_HOLE: Any = object()  # the key a complex key stands for (the mapping holding it is never read), in a Path
_NOWHERE = yaml.Mark("", 0, 0, 0, None, 0)  # the mark of _HOLE


_new = object.__new__


def _origin(file: str, mark: Any) -> Origin:
    """Origin(file, line, column) of a mark, without the frozen dataclass's __init__ (4x slower; one per node)."""
    origin = _new(Origin)
    fields = origin.__dict__
    fields["file"] = file
    fields["line"] = mark.line + 1
    fields["column"] = mark.column + 1
    return origin


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


class _Scope:
    """Origins relative to one node whose walk starts afresh: a top-level value, or an anchored mapping or list
    (an alias copies it). `anchors`: the anchored mappings and lists the node's walk visits (fast_values._walk
    refuses to visit one twice); `bad`: that walk raises Unsupported."""

    __slots__ = ("origins", "anchors", "bad")

    def __init__(self, anchors: set[str] | None = None) -> None:
        self.origins: Origins = {}
        self.anchors = anchors
        self.bad = False


class _Frame:
    """An open mapping or list: its value so far, its path in its scope, the pending key of a mapping."""

    __slots__ = ("value", "path", "scope", "at_key", "key", "key_mark", "firsts", "anchor", "outer")

    def __init__(self, value: Any, path: Path, scope: _Scope, is_map: bool) -> None:
        self.value = value
        self.path = path
        self.scope = scope
        self.at_key = is_map  # a list's frame never expects a key
        self.key: Any = None
        self.key_mark: Any = None
        self.firsts: dict[Any, tuple[Any, Any]] = {} if is_map else None  # type: ignore[assignment]
        # (a mapping's: key value -> its text and the mark of its first spelling)
        self.anchor: str | None = None  # set when this frame opened a scope of its own
        self.outer: Path = ()  # then: its path in the enclosing scope


class _Anchored:
    __slots__ = ("value", "origins", "anchors", "bad")

    def __init__(self, value: Any, scope: _Scope) -> None:
        self.value, self.origins, self.anchors, self.bad = value, scope.origins, scope.anchors or set(), scope.bad


class _Values:
    """Fed the guard's events; `variables()` then holds what fast.VarsFiles._read would return, or None."""

    __slots__ = ("file", "result", "stack", "scopes", "root", "done", "documents", "top", "firsts", "anchors", "open",
                 "work", "keep")

    def __init__(self, file: str, keep: frozenset[str] = frozenset()) -> None:
        self.file = file
        self.keep = keep  # names kept beside pdlint's (hostvars.is_relevant)
        self.result: dict[str, Var] | None = {}
        self.stack: list[_Frame] = []
        self.scopes: list[_Scope] = []  # the current top-level value's, then each enclosing anchored node's
        self.root: _Frame | None = None
        self.done = False
        self.documents = 0
        self.top: tuple[Any, Any, bool] = (None, None, False)  # the pending top-level key, its first mark, relevant
        self.firsts: dict[Any, Any] = {}  # top-level key value -> the mark of its first spelling
        self.anchors: dict[str, Any] = {}  # closed anchors: scalar (value, mark), or _Anchored
        self.open: set[str] = set()  # anchored mappings and lists not closed yet
        self.work = 0

    def variables(self) -> dict[str, Var] | None:
        return self.result if self.done else None

    def __call__(self, kind: type, event: Any) -> None:
        if self.result is None:
            return
        try:
            if kind is _SCALAR_EVENT:
                if event.tag is None and SIMPLE:  # event_scalar(event), its most frequent case written out
                    value = event.value
                    if event.implicit[0] and value[:1] in FIRST:
                        value = plain(value)
                else:
                    value = event_scalar(event)
                if event.anchor:
                    self._name(event.anchor)
                    self.anchors[event.anchor] = (value, event.start_mark)
                self._scalar(value, event.start_mark)
            elif kind is _MAP_END or kind is _SEQ_END:
                self._end()
            elif kind is _MAP_START:
                self._start(event, True)
            elif kind is _SEQ_START:
                self._start(event, False)
            elif kind is _ALIAS:
                self._alias(event)
            elif kind is yaml.DocumentStartEvent:
                self.documents += 1
                if self.documents > 1:
                    raise GiveUp
        except GiveUp:
            self.result = None

    # ---- where a node goes ----------------------------------------------------------------------------------

    def _scalar(self, value: Any, mark: Any) -> None:
        if not self.stack:
            raise GiveUp  # a document that is not a mapping
        frame = self.stack[-1]
        if frame.at_key:
            self._key(frame, value, mark)
            return
        if value is UNBUILT:
            self._spoil()
            value = None
        plain = value is None or value is True or value is False  # no origin of their own: their key's
        if frame is self.root:
            if not plain:
                self.scopes[-1].origins[()] = _origin(self.file, mark)
            self._top(value)
        elif type(frame.value) is dict:
            frame.scope.origins[(*frame.path, frame.key)] = _origin(self.file, frame.key_mark if plain else mark)
            frame.value[frame.key] = value
            frame.at_key = True
        else:  # a list item, null and booleans too: their own place (load/item_origins.py)
            frame.scope.origins[(*frame.path, len(frame.value))] = _origin(self.file, mark)
            frame.value.append(value)

    def _key(self, frame: _Frame, value: Any, mark: Any) -> None:
        frame.at_key = False
        if frame is self.root:  # fast_values.keyed_items, then from_node or check_tags
            if value is UNBUILT:
                raise GiveUp
            first = self.firsts.setdefault(value, mark)
            self.top = (value, first, type(value) is str and is_relevant(value, self.keep))
            self.scopes.append(_Scope())
            return
        if value is UNBUILT:
            self._spoil()
            key, key_mark = _HOLE, mark
        else:
            entry = frame.firsts.get(value)
            if entry is None:
                entry = frame.firsts[value] = (value if type(value) is str else str(value), mark)
            key, key_mark = entry
        if key in frame.value:  # a repeated key: the later value wins, with its own origins, under the first key
            prefix = (*frame.path, key)
            size = len(prefix)
            origins = frame.scope.origins
            self._charge(len(origins))
            for stale in [p for p in origins if p[:size] == prefix]:
                del origins[stale]
        frame.key, frame.key_mark = key, key_mark

    def _slot(self, parent: _Frame) -> tuple[_Scope, Path]:
        """The scope and path of the node starting in parent (a complex key refused before)."""
        if parent is self.root:
            return self.scopes[-1], ()
        if type(parent.value) is dict:
            return parent.scope, (*parent.path, parent.key)
        return parent.scope, (*parent.path, len(parent.value))

    def _complex_key(self, parent: _Frame) -> None:
        if parent is self.root:
            raise GiveUp
        self._spoil()

    def _start(self, event: Any, is_map: bool) -> None:
        if event.tag is not None and event.tag != "!" and event.tag != (MAP_TAG if is_map else SEQ_TAG):
            raise GiveUp
        anchor = event.anchor
        if anchor:
            self._name(anchor)
        if not self.stack:
            if not is_map or self.root is not None:
                raise GiveUp  # a document that is not a mapping
            self.root = _Frame({}, (), _Scope(), True)  # a scope never read: top-level values open their own
            self.stack.append(self.root)
            if anchor:
                self.open.add(anchor)
            return
        parent = self.stack[-1]
        if parent.at_key:
            self._complex_key(parent)
            scope, path = parent.scope, (*parent.path, _HOLE)
        else:
            scope, path = self._slot(parent)
        frame = _Frame({} if is_map else [], path, scope, is_map)
        if anchor:
            self.open.add(anchor)
            frame.anchor, frame.outer, frame.path = anchor, path, ()
            frame.scope = _Scope({anchor})
            self.scopes.append(frame.scope)
        frame.scope.origins[frame.path] = _origin(self.file, event.start_mark)
        self.stack.append(frame)

    def _end(self) -> None:
        frame = self.stack.pop()
        if frame is self.root:
            self.done = True
            return
        if frame.anchor is not None:
            scope = self.scopes.pop()
            self.open.discard(frame.anchor)
            self.anchors[frame.anchor] = _Anchored(frame.value, scope)
            self._merge(scope, frame.outer)
        self._collection(frame.value)

    def _collection(self, value: Any) -> None:
        parent = self.stack[-1]
        if parent.at_key:  # the end of a complex key (refused at the top level when it started)
            parent.at_key, parent.key, parent.key_mark = False, _HOLE, _NOWHERE
        elif parent is self.root:
            self._top(value)
        elif type(parent.value) is dict:
            parent.value[parent.key] = value
            parent.at_key = True
        else:
            parent.value.append(value)

    def _alias(self, event: Any) -> None:
        anchor = event.anchor
        found = self.anchors.get(anchor)
        if found is None and anchor not in self.open:
            raise GiveUp  # undefined: composing fails
        if not self.stack:
            raise GiveUp
        if isinstance(found, tuple):  # a scalar: its value and mark
            self._scalar(*found)
            return
        parent = self.stack[-1]
        if parent.at_key:
            self._complex_key(parent)
            self._collection(None)
            return
        if found is None or found.bad:  # recursive (still open), or its walk raises
            self._spoil()
            self._collection(None)
            return
        if self.scopes[-1].bad or (len(self.scopes) == 1 and not self.top[2]):
            self._collection(None)  # a value never read (nor copied by an alias): no copy of what the alias names
            return
        scope, path = self._slot(parent)
        self._visit(found.anchors)
        self._charge(len(found.origins))
        origins = scope.origins
        for sub, origin in found.origins.items():
            origins[path + sub] = origin
        self._collection(_copy(found.value))

    # ---- bookkeeping ----------------------------------------------------------------------------------------

    def _name(self, anchor: str) -> None:
        if anchor in self.anchors or anchor in self.open:
            raise GiveUp  # a repeated anchor: composing fails

    def _visit(self, anchors: set[str]) -> None:
        """An alias visits these anchored nodes: a scope that visited one already walks it twice."""
        scopes = self.scopes
        self._charge(len(anchors) * len(scopes))
        for index in range(len(scopes) - 1, -1, -1):
            seen = scopes[index].anchors
            if seen and not seen.isdisjoint(anchors):
                self._spoil(index + 1)
                break
        inner = scopes[-1]
        inner.anchors = anchors | inner.anchors if inner.anchors else set(anchors)

    def _merge(self, scope: _Scope, outer: Path) -> None:
        """A closed anchored node's origins and visits into the enclosing scope."""
        parent = self.scopes[-1]
        self._charge(len(scope.origins))
        origins = parent.origins
        for sub, origin in scope.origins.items():
            origins[outer + sub] = origin
        if scope.anchors:
            parent.anchors = parent.anchors | scope.anchors if parent.anchors else set(scope.anchors)

    def _spoil(self, upto: int | None = None) -> None:
        """The walk of the open scopes (the outermost `upto`) raises Unsupported."""
        for scope in self.scopes[:upto]:
            scope.bad = True
        if self.top[2]:  # a variable pdlint reads: the fast loader raises Unsupported for the whole inventory
            raise GiveUp

    def _top(self, value: Any) -> None:
        name, first, relevant = self.top
        scope = self.scopes.pop()
        self.root.at_key = True  # type: ignore[union-attr]
        if relevant:
            origins = scope.origins
            origins[(KEY,)] = key = _origin(self.file, first)
            if () not in origins:
                origins[()] = key
            self.result[name] = (value, origins)  # type: ignore[index]
        self.top = (None, None, False)

    def _charge(self, work: int) -> None:
        self.work += work
        if self.work > _WORK:
            raise GiveUp


def scan_vars(text: str, path: str, limits: guard.Limits, shown: str,
              keep: frozenset[str] = frozenset()) -> tuple[guard.Scan, dict[str, Var] | None]:
    """guard.scan_yaml of a vars file (Refused alike), and the variables fast.VarsFiles would read from it
    with `shown` as their origins' file, or None where this pass does not model the file."""
    values = _Values(shown, keep)
    scan = guard.scan_yaml(text, path, limits, values)
    return scan, values.variables() if scan.syntax_error is None else None

"""Kubernetes YAML read with the place of every value: each document a tree of Nodes, each Node its file:line:col.

PyYAML's composer gives every scalar, mapping and sequence its start mark (comments are skipped, anchors resolve to
the node they name, so an alias points where its anchor's value is written). A `kind: List` is read as its items.
Merge keys (`<<: *base`) are applied as YAML 1.1 defines them. Nodes are made once per composed node: an alias
repeated many times costs nothing more (the loaders' preflight bounds the text).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from ..finding import Origin
from ..load.errors import LoadError, load_error
from ..paths import display_path

_BOOL = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
MAX_NODES = 1_000_000  # nodes one file may hold: past it, the file is refused (exit 2)


@dataclasses.dataclass(eq=False)
class Node:
    """One YAML value: kind is map, seq or scalar; value is a dict of Nodes, a list of Nodes, or a plain scalar."""

    kind: str
    value: Any
    origin: Origin
    key_origins: dict[str, Origin] = dataclasses.field(default_factory=dict)

    def get(self, *path: str | int) -> Node | None:
        """The Node at path below this one, or None."""
        node: Node | None = self
        for part in path:
            if node is None:
                return None
            if node.kind == "map" and isinstance(part, str):
                node = node.value.get(part)
            elif node.kind == "seq" and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
            else:
                return None
        return node

    def scalar(self, *path: str | int) -> Any:
        """The plain scalar at path, or None (a mapping or a list is None too)."""
        node = self.get(*path)
        return node.value if node is not None and node.kind == "scalar" else None

    def text(self, *path: str | int) -> str | None:
        found = self.scalar(*path)
        return None if found is None or isinstance(found, bool) else str(found)

    def items(self, *path: str | int) -> list[Node]:
        """The items of the sequence at path ([] when it is none)."""
        node = self.get(*path)
        return list(node.value) if node is not None and node.kind == "seq" else []

    def mapping(self, *path: str | int) -> dict[str, Node]:
        node = self.get(*path)
        return dict(node.value) if node is not None and node.kind == "map" else {}


@dataclasses.dataclass(frozen=True)
class Document:
    """One manifest (or Helm values document): its file as printed, and its root."""

    file: str
    root: Node

    @property
    def kind(self) -> str:
        return self.root.text("kind") or ""

    @property
    def api(self) -> str:
        return self.root.text("apiVersion") or ""


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.made: dict[int, Node] = {}

    def origin(self, mark: Any) -> Origin:
        return Origin(self.file, mark.line + 1, mark.column + 1)

    def node(self, raw: Any) -> Node:
        import yaml

        found = self.made.get(id(raw))
        if found is not None:
            return found
        if len(self.made) > MAX_NODES:
            raise LoadError(load_error(self.origin(raw.start_mark), f"more than {MAX_NODES} YAML values in one file",
                                       "split the file"))
        origin = self.origin(raw.start_mark)
        if isinstance(raw, yaml.MappingNode):
            out = self.made[id(raw)] = Node("map", {}, origin)
            for key, value in raw.value:
                if key.tag == "tag:yaml.org,2002:merge":
                    self._merge(out, value)
                    continue
                name = str(key.value) if isinstance(key, yaml.ScalarNode) else ""
                out.value[name] = self.node(value)
                out.key_origins[name] = self.origin(key.start_mark)
            return out
        if isinstance(raw, yaml.SequenceNode):
            out = self.made[id(raw)] = Node("seq", [], origin)
            out.value.extend(self.node(item) for item in raw.value)
            return out
        out = self.made[id(raw)] = Node("scalar", _scalar(raw.tag, raw.value, raw.style), origin)
        return out

    def _merge(self, into: Node, value: Any) -> None:
        sources = [self.node(value)]
        if sources[0].kind == "seq":
            sources = list(sources[0].value)
        for source in sources:
            if source.kind == "map":
                for name, item in source.value.items():
                    into.value.setdefault(name, item)
                    into.key_origins.setdefault(name, source.key_origins.get(name, item.origin))


def _scalar(tag: str, text: str, style: str | None) -> Any:
    """A scalar as YAML 1.1's core schema resolves it (PyYAML's resolver set the tag)."""
    if style:  # quoted or block: a string
        return text
    try:
        if tag.endswith(":int"):
            return int(text.replace("_", ""), 0) if text.lower().startswith(("0x", "0o")) else int(text.replace("_", ""))
        if tag.endswith(":float"):
            return float(text.replace("_", ""))
    except ValueError:
        return text
    if tag.endswith(":bool"):
        return _BOOL.get(text.lower(), text)
    if tag.endswith(":null"):
        return None
    return text


def read(path: str, text: str) -> list[Document]:
    """Every document of one file (a `kind: List`'s items as documents). Raises LoadError on YAML the file cannot
    be read as."""
    import yaml

    file = display_path(path)
    builder = _Builder(file)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: list[Document] = []
    try:
        for raw in yaml.compose_all(text, Loader=loader):
            if raw is None:
                continue
            out.extend(_documents(Document(file, builder.node(raw))))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        origin = Origin(file, mark.line + 1, mark.column + 1) if mark is not None else Origin(file)
        problem = getattr(exc, "problem", None) or str(exc)
        raise LoadError(load_error(origin, f"YAML the manifest cannot be read as: {problem}",
                                   "fix the YAML syntax")) from None
    return out


def _documents(doc: Document) -> Iterator[Document]:
    if doc.root.kind == "map" and doc.kind == "List":
        for item in doc.root.items("items"):
            if item.kind == "map":
                yield Document(doc.file, item)
        return
    yield doc


def is_manifest(root: Node) -> bool:
    """A Kubernetes object: a mapping with apiVersion and kind."""
    return root.kind == "map" and bool(root.text("apiVersion")) and bool(root.text("kind"))

"""Values with their origins, built from libyaml nodes or JSON data the way ansible-core 2.19 tags them.

Ansible tags strings, numbers, lists and mappings with the position of the
value (JSON files: the file only); booleans and null cannot carry a tag.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from ....finding import Origin
from ....hostvars import KEY, Path
from ..unsupported import Unsupported

Origins = dict[Path, Origin]
Var = tuple[Any, Origins]  # a value, and the origins below it keyed by relative path

_STD = "tag:yaml.org,2002:"
MAP_TAG, SEQ_TAG, STR_TAG = _STD + "map", _STD + "seq", _STD + "str"
CONSTRUCT = {_STD + k: SafeConstructor.yaml_constructors[_STD + k] for k in ("int", "float", "bool", "null")}
_CTOR = SafeConstructor()
# Tags Ansible reads without error where pdlint does not look (vault and unsafe values of other variables).
TOLERATED = {MAP_TAG, SEQ_TAG, STR_TAG, *CONSTRUCT, "!vault", "!unsafe"}


def items(node: Any) -> Iterator[tuple[Any, Any]]:
    """(key, value node) of a plain YAML mapping node; merge keys, complex keys and custom tags are Unsupported."""
    for key, _key_node, value_node in keyed_items(node):
        yield key, value_node


def keyed_items(node: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(key, key node, value node); a repeated key keeps the first key node, as a Python dict keeps its key."""
    if node.tag != "tag:yaml.org,2002:map":
        raise Unsupported(f"YAML tag {node.tag}")
    first: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            raise Unsupported("YAML merge key or complex key")
        key = scalar(key_node)
        yield key, first.setdefault(key, key_node), value_node


def scalar(node: Any) -> Any:
    """A plain scalar's value (str, int, float, bool, None); anything else is unsupported."""
    if node.tag == STR_TAG:
        return node.value
    construct = CONSTRUCT.get(node.tag)
    if construct is None or not isinstance(node, yaml.ScalarNode):
        raise Unsupported(f"YAML tag {node.tag}")
    try:
        return construct(_CTOR, node)
    except Exception as exc:  # noqa: BLE001 - `!!int abc`, `!!bool maybe`: ansible-core's loader reports the error
        raise Unsupported(f"YAML {node.tag} value {node.value!r} cannot be constructed ({exc})") from None


def _origin(file: str, node: Any) -> Origin:
    mark = node.start_mark
    return Origin(file, mark.line + 1, mark.column + 1)


def from_node(node: Any, file: str, key: Any = None) -> Var:
    """A YAML node as a plain value and its origins; key, the node of its name, gives origins[(KEY,)]."""
    origins: Origins = {}
    value = _walk(node, file, (), origins, set())
    if key is not None:
        origins[(KEY,)] = _origin(file, key)
        if () not in origins:
            origins[()] = origins[(KEY,)]
    return value, origins


def _walk(node: Any, file: str, path: Path, origins: Origins, active: set[int]) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value = scalar(node)
        if not (value is None or isinstance(value, bool)):
            origins[path] = _origin(file, node)
        return value
    if id(node) in active:  # recursive, or repeated by aliases (an alias bomb grows exponentially when expanded)
        raise Unsupported("YAML alias of a mapping or list within one value")
    active.add(id(node))
    origins[path] = _origin(file, node)
    if node.tag == SEQ_TAG:
        result: Any = []
        for i, item in enumerate(node.value):
            result.append(_walk(item, file, (*path, i), origins, active))
            origins.setdefault((*path, i), _origin(file, item))  # a null or boolean item: its own node's place
    elif node.tag == MAP_TAG:
        result = {}
        names: dict[Any, str] = {}
        keys: dict[Any, Any] = {}  # raw key -> its text; Python's dict equality (1 == True == 1.0) decides duplicates
        for key_node, value_node in node.value:
            if key_node.tag == _STD + "merge" or not isinstance(key_node, yaml.ScalarNode):
                raise Unsupported("YAML merge key or complex key")
            raw = scalar(key_node)
            key = names.setdefault(raw, str(raw))
            key_node = keys.setdefault(raw, key_node)
            if key in result:  # a duplicate key: the last value wins, with its own origins, under the first key
                for stale in [p for p in origins if p[:len(path) + 1] == (*path, key)]:
                    del origins[stale]
            result[key] = _walk(value_node, file, (*path, key), origins, active)
            if (*path, key) not in origins:  # null and booleans carry no origin in Ansible: their key's, as there
                origins[(*path, key)] = _origin(file, key_node)
    else:
        raise Unsupported(f"YAML tag {node.tag}")
    return result


def from_json(value: Any, file: str) -> Var:
    """A JSON value as Ansible tags it: every taggable value carries the file, no line."""
    origins: Origins = {}
    origin = Origin(file)

    def walk(v: Any, path: Path) -> Any:
        if v is None or isinstance(v, bool):
            return v
        origins[path] = origin
        if isinstance(v, dict):
            return {str(k): walk(x, (*path, str(k))) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, (*path, i)) for i, x in enumerate(v)]
        return v

    return walk(value, ()), origins


def check_tags(node: Any) -> None:
    """Raise Unsupported if a value pdlint skips holds a tag Ansible would reject or treat specially."""
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.tag not in TOLERATED:
            raise Unsupported(f"YAML tag {n.tag}")
        if isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
        elif isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                if k.tag == _STD + "merge":
                    raise Unsupported("YAML merge key")
                stack.extend((k, v))

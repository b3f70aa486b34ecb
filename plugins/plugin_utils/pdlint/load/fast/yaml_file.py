"""A static YAML (or JSON) inventory file into the model, as ansible-core's `yaml` inventory plugin reads it."""
from __future__ import annotations

from typing import Any

import yaml

from ...finding import Origin
from ...hostvars import is_relevant
from .inventory import Inventory, expand_hosts
from .variables.values import Unsupported, Var, check_tags, from_json, from_node, items, keyed_items, scalar

_SECTIONS = ("vars", "children", "hosts")


class _Keyed:
    """A variable's value node and the node of its name."""

    __slots__ = ("key", "value")

    def __init__(self, value: Any, key: Any) -> None:
        self.value, self.key = value, key


class _Nodes:
    """libyaml nodes; None stands for a missing or null value."""

    def __init__(self, file: str) -> None:
        self.file = file

    def mapping(self, node: Any) -> dict[Any, Any] | None:
        if not isinstance(node, yaml.MappingNode):
            return None
        return {key: None if self.null(v) else v for key, v in items(node)}

    def key_origins(self, node: Any) -> dict[Any, Origin]:
        """Where each key of a mapping is written (its first occurrence, as the dict keeps the first key)."""
        found: dict[Any, Origin] = {}
        if isinstance(node, yaml.MappingNode):
            for key_node, _unused in node.value:
                mark = key_node.start_mark
                found.setdefault(scalar(key_node), Origin(self.file, mark.line + 1, mark.column + 1))
        return found

    def entries(self, node: Any) -> dict[Any, Any] | None:
        """A mapping of variables: each value with its key's node (where the name is written; null and booleans
        take that origin, as in ansible-core)."""
        if not isinstance(node, yaml.MappingNode):
            return None
        return {key: _Keyed(value, key_node) for key, key_node, value in keyed_items(node)}

    def null(self, node: Any) -> bool:
        return node is None or (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null")

    def string(self, node: Any) -> str | None:
        return node.value if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str" else None

    def falsy(self, node: Any) -> bool:
        if isinstance(node, yaml.ScalarNode):
            return not scalar(node)
        return isinstance(node, yaml.SequenceNode) and not node.value

    def var(self, node: Any) -> Var:
        if isinstance(node, _Keyed):
            return from_node(node.value, self.file, node.key)
        return from_node(node, self.file) if node is not None else (None, {})

    def raw(self, node: Any) -> Any:
        return self.var(node)[0]

    def skip(self, node: Any) -> None:
        if isinstance(node, _Keyed):
            node = node.value
        if node is not None:
            check_tags(node)


class _Json:
    """Data from json.loads (Ansible tries JSON first for every file)."""

    def __init__(self, file: str) -> None:
        self.file = file

    def mapping(self, node: Any) -> dict[Any, Any] | None:
        return dict(node) if isinstance(node, dict) else None

    def key_origins(self, node: Any) -> dict[Any, Origin]:
        return {}  # JSON keys carry no position: groups.invalid_names finds the line, for both loaders alike

    def entries(self, node: Any) -> dict[Any, Any] | None:
        return self.mapping(node)

    def null(self, node: Any) -> bool:
        return node is None

    def string(self, node: Any) -> str | None:
        return node if isinstance(node, str) else None

    def falsy(self, node: Any) -> bool:
        return not node

    def var(self, node: Any) -> Var:
        return from_json(node, self.file)

    def raw(self, node: Any) -> Any:
        return node

    def skip(self, node: Any) -> None:
        pass


def is_inventory(doc: Any, is_json: bool) -> bool:
    """What the yaml plugin accepts at the top: a non-empty mapping without a `plugin` key (else Ansible tries INI)."""
    if is_json:
        return isinstance(doc, dict) and bool(doc) and not doc.get("plugin")
    if not isinstance(doc, yaml.MappingNode) or not doc.value:
        return False
    plugin = next((v for k, v in doc.value if isinstance(k, yaml.ScalarNode) and k.value == "plugin"), None)
    return plugin is None or _Nodes("").falsy(plugin)


def parse(inv: Inventory, doc: Any, file: str, is_json: bool) -> None:
    """Add one inventory file's groups, hosts and variables to inv. Raises Unsupported."""
    a: Any = _Json(file) if is_json else _Nodes(file)
    data = a.mapping(doc)
    if not data:
        raise Unsupported("empty or non-mapping YAML inventory")
    if "plugin" in data and not a.falsy(data["plugin"]):
        raise Unsupported("inventory plugin configuration file")
    origins = a.key_origins(doc)
    for name, node in data.items():
        _group(inv, a, name, node, origins.get(name))


def _set(inv: Inventory, a: Any, entity: str, name: Any, node: Any) -> None:
    if name == "ansible_group_priority":
        inv.set_variable(entity, name, (None, {}), a.raw(node))
    elif isinstance(name, str) and is_relevant(name, inv.keep):
        inv.set_variable(entity, name, a.var(node))
    else:
        a.skip(node)


def _group(inv: Inventory, a: Any, name: Any, node: Any, origin: Origin | None) -> Any:
    gdata = a.mapping(node)
    if gdata is None and not a.null(node):
        a.skip(node)
        return name  # Ansible warns and skips it
    name = inv.add_group(name, origin)
    if gdata is None:
        return name
    for section in _SECTIONS:
        if section in gdata:
            text = a.string(gdata[section])
            if text is not None:
                gdata[section] = {text: None} if isinstance(a, _Json) else _Wrapped({text: None})
            elif gdata[section] is not None and a.mapping(gdata[section]) is None:
                raise Unsupported(f"invalid {section} entry of group {name}")
    for key, value in gdata.items():
        entries = value.data if isinstance(value, _Wrapped) else a.mapping(value)
        if entries is None:
            a.skip(value)
            continue
        if key == "vars":
            for var, vnode in (a.entries(value) or entries).items():
                _set(inv, a, name, var, vnode)
        elif key == "children":
            origins = {} if isinstance(value, _Wrapped) else a.key_origins(value)
            for sub, snode in entries.items():
                inv.add_child(name, _group(inv, a, sub, snode, origins.get(sub)))
        elif key == "hosts":
            for pattern, hnode in entries.items():
                hvars = a.entries(hnode)
                if hvars is None:
                    if hnode is not None and not a.falsy(hnode):
                        raise Unsupported(f"host {pattern} has non-mapping variables")
                    hvars = {}
                for host in expand_hosts(pattern):
                    inv.add_host(host, name)
                    for var, vnode in hvars.items():
                        _set(inv, a, host, var, vnode)
        else:
            a.skip(value)
    return name


class _Wrapped:
    """A section given as a bare string (`hosts: web1`), which Ansible turns into {web1: None}."""

    def __init__(self, data: dict[Any, Any]) -> None:
        self.data = data

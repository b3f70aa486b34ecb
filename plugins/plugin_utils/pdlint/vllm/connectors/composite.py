"""Composite connectors (MultiConnector, Dynamo's PdConnector): their children, the transfer child, HMA, by release.

vLLM's MultiConnector (kv_connector/v1/multi_connector.py, in-tree from 0.9.0) builds one child connector per item
of kv_connector_extra_config.connectors, each item a whole KVTransferConfig (its own kv_connector, kv_role,
kv_connector_extra_config, kv_connector_module_path). What pairs prefill with decode is the child that produces
and consumes kv_transfer_params (the P/D transfer connector, e.g. NIXL); what decides HMA is every child; every
child binds its own ports. tests/vllm/connectors/test_vllm_multiconnector.py runs each release's own MultiConnector code.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ... import lax
from ...topology.types import Instance, per_body, per_instance
from ..history import history
from ..releases import Release, Timeline
from . import composite_items, external, registry

MULTI = "MultiConnector"
_M = "kv_connector/v1/multi_connector.py"
# Families whose connectors carry the P/D transfer (their pair checks live in vllm/connectors/nixl/__init__.py, vllm/connectors/moriio/__init__.py, ...).
TRANSFER_KINDS = ("nixl", "moriio", "mooncake", "p2p-nccl")

CHILDREN: Timeline[str] = Timeline(
    "MultiConnector children",
    ("0.8.5", "none", "factory.py (MultiConnector is not registered)", "no MultiConnector"),
    ("0.9.0", "own-engine-id", (f"{_M} MultiConnector.__init__ (`ktcs = ...kv_connector_extra_config.get("
     "\"connectors\")`, `assert ktcs is not None`, `KVTransferConfig(**ktc)` per item)"),
     ("one child per item of kv_connector_extra_config.connectors, each a whole KVTransferConfig (its own "
      "kv_connector and kv_role, which it requires); no connectors list: AssertionError; a child without "
      "engine_id draws its own uuid4")),
    ("0.10.0", "inherit-engine-id", (f"{_M} MultiConnector.__init__ / _get_connector_classes_and_configs "
     "(`engine_id = ktc.get(\"engine_id\", vllm_config.kv_transfer_config.engine_id)`)"),
     ("as before; a child without engine_id inherits the wrapper's, and a child that sets engine_id is a "
      "TypeError (engine_id passed twice)")),
)
TRANSFER: Timeline[str] = Timeline(
    "which MultiConnector child pairs prefill with decode",
    ("0.8.5", "none", "factory.py (MultiConnector is not registered)", "no MultiConnector"),
    ("0.9.0", "one-params", (f"{_M} MultiConnector.get_num_new_matched_tokens (the first child reporting matched "
     "tokens loads the request) and request_finished (RuntimeError \"Only one connector can produce KV transfer "
                             "params\")"), ("the P/D transfer child (NIXL, MoRIIO, Mooncake, P2pNccl: the one whose kv_transfer_params "
                                            "the decode reads) pairs; only one child may produce kv_transfer_params")),
    ("0.25.0", "merged-params", (f"{_M} MultiConnector._aggregate_request_finished (kv_transfer_params of all "
     "children merged; RuntimeError \"Key clash in kv_transfer_params from multiple connectors\")"),
     "the P/D transfer child pairs; the children's kv_transfer_params are merged unless their keys clash"),
)
HMA: Timeline[str] = Timeline(
    "hybrid KV cache manager with MultiConnector",
    ("0.8.5", "none", "factory.py (MultiConnector is not registered)", "no MultiConnector"),
    ("0.9.0", "unsupported", f"{_M} class MultiConnector(KVConnectorBase_V1) (no SupportsHMA)",
     "MultiConnector is not SupportsHMA: HMA is off with it (explicitly on: the factory's ValueError)"),
    ("0.21.0", "assert-children", (f"{_M} class MultiConnector(KVConnectorBase_V1, SupportsHMA), __init__ "
     "(`all(supports_hma(c) for c in self._connectors)`)"),
     ("MultiConnector is SupportsHMA; unset still means off (config/vllm.py); HMA explicitly on with a child "
      "lacking SupportsHMA: AssertionError \"HMA should not be enabled unless all sub-connectors support it\"")),
    ("0.22.0", "auto-children", ("config/vllm.py VllmConfig.__post_init__ (`if all_support_hma and "
     "connector_cls.__name__ == \"MultiConnector\"`: every child class must be SupportsHMA)"),
     ("unset: on only when every child class is SupportsHMA (a subclass such as PdConnector is judged by its own, "
      "inherited, SupportsHMA); explicitly on with a child lacking it: the __init__ assert")),
    ("0.23.0", "factory-children", ("factory.py KVConnectorFactory.supports_hma_config -> "
     f"{_M} MultiConnector.all_children_support_hma (only for kv_connector == \"MultiConnector\"; recursive; no "
                                    "children: False)"), ("unset: on only when every child supports HMA; explicitly on otherwise: ValueError "
                                                          "\"Connector MultiConnector does not support HMA but HMA is enabled\"; a subclass "
                                                          "(PdConnector) keeps HMA on and fails the __init__ assert")),
)


@dataclasses.dataclass(frozen=True)
class Child:
    """One item of kv_connector_extra_config.connectors, as KVTransferConfig(**item) reads it."""

    index: int
    connector: str | None
    kv_role: str | None
    module_path: str | None
    extra: Mapping[str, Any]
    engine_id: str | None
    kv_port: int | None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _port(value: Any) -> int | None:
    """A child's kv_port as KVTransferConfig(**item) gets it (pydantic lax mode, lax.py); None: unusable."""
    number = lax.to_int(value)
    return number if number is not None and 1 <= number <= 65535 else None


def release(inst: Instance) -> Release:
    return registry.release(inst)


def wrapper(name: str | None, module_path: str | None, at: Release) -> str | None:
    """"MultiConnector" or the out-of-tree composite's class when name builds children in release at, else None."""
    if not name:
        return None
    if external.loaded_from_module(name, module_path, at):
        known = external.lookup(name, module_path)
        return name if known is not None and known.composite else None
    return name if name == MULTI and registry.registered(MULTI, at) else None


def is_composite(inst: Instance) -> bool:
    if not inst.module_path and inst.connector != MULTI:
        return False  # what wrapper() answers without the release lookup: asked ~35 times per instance
    return wrapper(inst.connector, inst.module_path, release(inst)) is not None


@per_body
def children(inst: Instance) -> tuple[Child, ...]:
    """The children the composite builds, in config order (empty for any other connector)."""
    items = inst.extra.get("connectors") if is_composite(inst) else None
    if not isinstance(items, list):
        return ()
    return tuple(_child(i, item) for i, item in enumerate(items) if isinstance(item, Mapping))


def _child(index: int, item: Mapping[str, Any]) -> Child:
    extra = item.get("kv_connector_extra_config")
    return Child(index, _str(item.get("kv_connector")), _str(item.get("kv_role")),
                 _str(item.get("kv_connector_module_path")), extra if isinstance(extra, Mapping) else {},
                 _str(item.get("engine_id")), _port(item.get("kv_port")))


def child_kind(child: Child, at: Release) -> str | None:
    """The family of a child: its own registry family, or what the out-of-tree table knows of it."""
    if external.loaded_from_module(child.connector, child.module_path, at):
        known = external.lookup(child.connector, child.module_path)
        return known.kind if known is not None else child.connector
    return registry.kind_of(child.connector)


def transfer(inst: Instance) -> Child | None:
    """The child that pairs prefill with decode: the first child of a P/D transfer family (TRANSFER)."""
    kids = children(inst)
    if not kids:
        return None  # not a composite: the common case, asked by every pair rule
    at = release(inst)
    return next((c for c in kids if child_kind(c, at) in TRANSFER_KINDS), None)


def as_child(inst: Instance, child: Child) -> Instance:
    """inst running child alone: its class, kv_role, extra config and module path (origins: where the child writes
    each, else the child, else the connectors list; the wrapper's extra.connectors.* stay for findings about it).
    A child's unwritten kv_connector_extra_config stands for the composite's settings as a whole: the list."""
    own = f"extra.connectors.{child.index}"
    listed = inst.origins.get("extra.connectors") or inst.at("kv_connector_extra_config", "kv_connector")
    where = inst.origins.get(own) or listed
    origins = {k: v for k, v in inst.origins.items() if not k.startswith("extra.") or k.startswith("extra.connectors")}
    origins.update({k: inst.origins.get(f"{own}.{k}") or where for k in (
        "kv_connector", "kv_role", "kv_connector_module_path")})
    origins["kv_connector_extra_config"] = inst.origins.get(f"{own}.kv_connector_extra_config") or listed
    extra_at = origins["kv_connector_extra_config"]
    origins.update({f"extra.{key}": extra_at for key in child.extra})
    engine_id = inst.engine_id if CHILDREN.at(release(inst)) == "inherit-engine-id" else child.engine_id
    return dataclasses.replace(inst, connector=child.connector, kv_role=child.kv_role, module_path=child.module_path,
                               extra=dict(child.extra), engine_id=engine_id, kv_port=child.kv_port, origins=origins)


def effective(inst: Instance) -> Instance:
    """inst as the pair rules see it: a composite's transfer child in place of the wrapper; others unchanged."""
    return _as_transfer_child(inst) or inst


@per_instance
def _as_transfer_child(inst: Instance) -> Instance | None:
    """None for an instance that is no composite (kept as None: an instance must not hold itself, a cycle)."""
    child = transfer(inst)
    return None if child is None else as_child(inst, child)


def views(inst: Instance) -> tuple[Instance, ...]:
    """One instance per connector the engine runs: each child of a composite, else the instance itself."""
    kids = children(inst)
    return tuple(as_child(inst, c) for c in kids) if kids else (inst,)


def class_hma(name: str | None, module_path: str | None, at: Release) -> bool | None:
    """supports_hma(connector class) (kv_connector/v1/base.py): None when pdlint cannot know (out-of-tree)."""
    if external.loaded_from_module(name, module_path, at):
        known = external.lookup(name, module_path)
        return known.hma(at) if known is not None else None
    return registry.supports_hma(name, at)


def _all(values: Iterable[bool | None]) -> bool | None:
    found: bool | None = True
    for value in values:
        if value is False:
            return False
        if value is None:
            found = None
    return found


def config_hma(name: str | None, module_path: str | None, extra: Mapping[str, Any], at: Release) -> bool | None:
    """vLLM's answer to "does this kv_transfer_config support HMA" in release at (HMA timeline)."""
    own = class_hma(name, module_path, at)
    mode = HMA.at(at)
    if name != MULTI or own is False or mode not in ("auto-children", "factory-children") \
            or external.loaded_from_module(name, module_path, at):
        return own
    kids = [_child(i, c) for i, c in enumerate(extra.get("connectors") or []) if isinstance(c, Mapping)]
    if mode == "auto-children":  # 0.22: the child classes, not recursive; all() of nothing is True
        return _all(class_hma(c.connector, c.module_path, at) for c in kids)
    if not kids:  # 0.23.0+ all_children_support_hma: `if not connectors_config: return False`
        return False
    return _all(config_hma(c.connector, c.module_path, c.extra, at) for c in kids)


def supports_hma(inst: Instance) -> bool | None:
    """What an unset disable_hybrid_kv_cache_manager resolves by (registry.HMA_DEFAULT "by-connector")."""
    return config_hma(inst.connector, inst.module_path, inst.extra, release(inst))


def children_hma(inst: Instance) -> bool | None:
    """Whether every child of a composite supports HMA as its MultiConnector.__init__ asserts (None: unknown)."""
    at = release(inst)
    kids = children(inst)
    if HMA.at(at) == "factory-children":
        return _all(config_hma(c.connector, c.module_path, c.extra, at) for c in kids) if kids else False
    return _all(class_hma(c.connector, c.module_path, at) for c in kids)


def config_problems(inst: Instance) -> Iterable[tuple[str, str, str]]:
    """(field, message, hint) for a composite's connectors list that its release cannot build."""
    at = release(inst)
    name = inst.connector
    if not is_composite(inst):
        return
    items = inst.extra.get("connectors")
    if not isinstance(items, list):
        yield ("extra.connectors", (f"{name} reads its children from kv_connector_extra_config.connectors, which is "
               f"{'missing' if items is None else 'not a list'} (vLLM {at}: `assert ktcs is not None` or a TypeError)"),
               "list the child connectors, each a kv_transfer_config with kv_connector and kv_role")
        return
    yield from composite_items.problems(str(name), items, at)
    for child in children(inst):
        label = f"{name} child {child.index} ({child.connector or 'no kv_connector'})"
        own = f"extra.connectors.{child.index}"  # the hit falls back to the list where the child has no origin
        if child.connector is None:
            yield (own, f"{label} has no kv_connector (vLLM {at}: \"Connector name is not set\")",
                   "set kv_connector on every child")
        elif child.kv_role is None:
            yield (own, (f"{label} has no kv_role: each child is its own KVTransferConfig, which "
                   "raises ValueError \"Please specify kv_role when kv_connector is set\""),
                   "set kv_role on every child (NIXL: kv_both)")
        elif child.engine_id is not None and CHILDREN.at(at) == "inherit-engine-id":
            yield (f"{own}.engine_id", (f"{label} sets engine_id: vLLM {at} builds it as KVTransferConfig(**ktc, "
                   "engine_id=...), a TypeError (\"got multiple values for keyword argument 'engine_id'\")"),
                   "remove engine_id from the child: it inherits the wrapper's engine_id")
        elif not child.module_path and not registry.usable(child.connector, at):
            yield (f"{own}.kv_connector", f"{label}: {registry.story(child.connector, at)}",
                   "use a connector the release registers, or set the child's kv_connector_module_path")
    known = external.lookup(name, inst.module_path)
    if known is not None and known.check is not None:
        for message in known.check([child_kind(c, at) or "" for c in children(inst)]):
            yield ("extra.connectors", message, known.hint)


# How vLLM finds an out-of-tree class (factory.py), for connector[out-of-tree]'s per-release docs.
MODULE_PATH: Timeline[str] = Timeline(
    "kv_connector_module_path",
    ("0.8.5", "absent", "config.py KVTransferConfig (no kv_connector_module_path field)",
     "no such key: vLLM ignores it and looks kv_connector up in its registry"),
    ("0.9.0", "unregistered", "factory.py KVConnectorFactory.create_connector_v1 / get_connector_class",
     "imported from kv_connector_module_path when the registry lacks the name (a registered name wins)"),
    ("0.20.0", "first", "factory.py KVConnectorFactory.get_connector_class (\"External module path takes priority\")",
     "imported from kv_connector_module_path whenever it is set; 0.21.0+: a 2-argument __init__ is a ValueError"),
)


def _declare() -> None:
    for rule_id, timeline in (("deployment[connector]", TRANSFER), ("deployment[connector]", CHILDREN),
                              ("pd-mismatch[hma]", HMA), ("connector[config]", CHILDREN),
                              ("connector[config]", HMA), ("port[collision]", CHILDREN),
                              ("connector[out-of-tree]", MODULE_PATH)):
        history(rule_id, timeline)


_declare()

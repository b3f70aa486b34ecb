"""Scalars of a vars file's YAML events, valued as compose + SafeConstructor value them (tag resolution included),
for the event pass (vars_events.py) that builds variables without composing."""
from __future__ import annotations

from typing import Any

import yaml

from .values import CONSTRUCT, STR_TAG, TOLERATED, scalar

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # what load/compose.py reads with
_RESOLVER = _LOADER("")  # its resolve(): the tag compose gives a scalar without one
_TABLE = _RESOLVER.yaml_implicit_resolvers
# Without path resolvers or wildcard implicit ones (neither is registered by yaml itself), a quoted scalar is
# a str, and so is a plain one whose first character no implicit resolver is registered for.
SIMPLE = None not in _TABLE and not _RESOLVER.yaml_path_resolvers
FIRST = frozenset(_TABLE)  # first characters ("" for the empty scalar)
_PLAIN_MAX = 50_000


class GiveUp(Exception):
    """This pass does not model the file: the fast loader composes it."""


UNBUILT = object()  # a scalar with a tag pdlint tolerates but never reads (!vault, !unsafe)
_REFUSED = object()
_PLAIN: dict[str, Any] = {}  # plain scalar text -> its value (or _REFUSED): resolution depends on the text only


def typed(tag: str, value: str) -> Any:
    if tag == STR_TAG:
        return value
    if tag in CONSTRUCT:
        try:
            return scalar(yaml.ScalarNode(tag, value))
        except Exception:  # noqa: BLE001 - e.g. `!!int x`: composing meets it again
            raise GiveUp from None
    if tag in TOLERATED:
        return UNBUILT
    raise GiveUp  # a tag the fast loader does not model, wherever it is (merge keys included)


def plain(value: str) -> Any:
    found = _PLAIN.get(value, _PLAIN)
    if found is _PLAIN:
        if len(_PLAIN) >= _PLAIN_MAX:
            _PLAIN.clear()
        try:
            found = typed(_RESOLVER.resolve(yaml.ScalarNode, value, (True, False)), value)
        except GiveUp:
            found = _REFUSED
        _PLAIN[value] = found
    if found is _REFUSED:
        raise GiveUp
    return found


def event_scalar(event: Any) -> Any:
    """A scalar event's value as compose + SafeConstructor give it (tag resolution included)."""
    tag, value = event.tag, event.value
    if tag is None or tag == "!":
        if SIMPLE:
            if not event.implicit[0] or value[:1] not in FIRST:
                return value
            return plain(value)
        tag = _RESOLVER.resolve(yaml.ScalarNode, value, event.implicit)
    return typed(tag, value)

"""Items of a MultiConnector's kv_connector_extra_config.connectors that vLLM cannot build a child from.

multi_connector.py MultiConnector builds each child from its item (0.9.0: `KVTransferConfig(**ktc)` in __init__;
0.10.0+: `ktc.get("engine_id", ...)` then `KVTransferConfig(**ktc, engine_id=...)` in __init__ /
_get_connector_classes_and_configs; 0.23.0+ also `KVTransferConfig(**{"engine_id": ..., **conn_config})` in
all_children_support_hma). So an item that is not a mapping fails (TypeError or AttributeError) in every release;
and from 0.9.1, where KVTransferConfig is a pydantic dataclass, the item's fields are validated as
--kv-transfer-config's are: a kv_connector_extra_config that is not a mapping is a ValidationError, and an unknown
key is ignored (0.9.1 - 0.15.x) or rejected (0.16.0+, extra="forbid"; 0.9.0 dataclass: TypeError).
tests/vllm/connectors/test_vllm_multiconnector.py runs each release's own code on such items.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..releases import Release
from . import kvconfig

_EXTRA = "kv_connector_extra_config"


def _what(item: Any) -> str:
    if item is None:
        return "null"
    return {str: "a string", list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(item), type(item).__name__)


def problems(name: str, items: list[Any], at: Release) -> Iterator[tuple[str, str, str]]:
    """(field, message, hint) for each item of connectors that release at cannot build a child from; field is the
    item (extra.connectors.0) or its key at fault (extra.connectors.0.kv_connector_extra_config)."""
    for index, item in enumerate(items):
        label = f"{name} child {index}"
        field = f"extra.connectors.{index}"
        if not isinstance(item, Mapping):
            message = (f"{label} is {_what(item)}, not a mapping: vLLM {at} builds every item of connectors as a "
                       "KVTransferConfig (`ktc.get(...)`, `KVTransferConfig(**ktc)`) and fails to start "
                       "(AttributeError or TypeError)")
            yield (field, message,
                   "make every item a kv_transfer_config mapping with kv_connector and kv_role, or remove it")
            continue
        validated = kvconfig.PARSE.at(at) == "lax"  # a pydantic dataclass from 0.9.1 (0.8.5 has no MultiConnector)
        if _EXTRA in item and not isinstance(item[_EXTRA], Mapping) and validated:
            message = (f"{label}'s {_EXTRA} is {_what(item[_EXTRA])}, not a mapping: vLLM {at}'s "
                       f"KVTransferConfig(**ktc) rejects it (pydantic ValidationError \"Input should be a valid "
                       "dictionary\")")
            yield f"{field}.{_EXTRA}", message, f"write the child's {_EXTRA} as a mapping, or leave it out"
        for key in sorted(item, key=str):
            verdict = kvconfig.unknown_key(str(key), at)
            if verdict is not None and verdict[0] == "error":
                yield f"{field}.{key}", f"{label}: {verdict[1]}", "remove it from the child"

"""Whether a host gives a command line at all: the stage imports vLLM's argument parser only for hosts that do."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ARGS = "vllm_args"


def has_items_args(values: Mapping[str, Any]) -> bool:
    """An item of vllm_instances has its own `args`."""
    items = values.get("vllm_instances")
    return isinstance(items, list) and any(isinstance(i, Mapping) and "args" in i for i in items)


def command_line(values: Mapping[str, Any]) -> bool:
    """The host's vllm_args, or an item's args, is there to read."""
    return ARGS in values or has_items_args(values)

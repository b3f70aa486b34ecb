"""Values as vLLM reads them: ints as its int() would, --kv-transfer-config as its JSON, digits int() refuses.

The builder (build.py) keeps only values that pass these; the schema rule reports the others.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..contract import BY_NAME, INT_FIELDS, MAX_SIZE, NUMBER_STRING, int_bounds

_INT_TEXT = re.compile(r"\s*([0-9]+)\s*", re.ASCII)  # digits, as the schema's string pattern takes them


def as_int(value: Any, bounds: tuple[int, int | None] | None = None) -> int | None:
    """value as vLLM's int() would read it, within the schema's bounds; None when the schema rejects it.

    Rules only ever see values the schema accepts: a TP of 0 never reaches `heads % tp`.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = _INT_TEXT.fullmatch(value)
        digits = match.group(1).lstrip("0") or "0" if match else ""
        if not digits or len(digits) > 20:  # no bound is that long; int() refuses 4,300 digits
            return None
        value = int(digits)
    if not isinstance(value, int):
        return None
    low, high = bounds or (0, None)
    return value if low <= value and (high is None or value <= high) else None


_BOUNDS = {name: int_bounds(BY_NAME[name].schema) for name in INT_FIELDS}


def coerce(name: str, value: Any) -> tuple[Any, bool]:
    """(value, usable); unusable values are the schema rule's to report."""
    if name in INT_FIELDS:
        number = as_int(value, _BOUNDS[name])
        return number, number is not None
    if name == "host_gpu_memory_gib":
        gib = _number(value)
        return gib, gib is not None
    if name == "disable_hybrid_kv_cache_manager" or name in ("model_is_mla", "model_has_ssm"):
        return value, isinstance(value, bool)
    return value, isinstance(value, str) and value != ""


def _number(value: Any) -> float | None:
    """A GiB figure as the schema takes it: a number above 0, or its digits as a string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value) if re.fullmatch(NUMBER_STRING, value) else None
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not 0 < value <= MAX_SIZE:
        return None
    return float(value)


def kv_config(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """--kv-transfer-config as a dict: (config, error)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            return None, f"is not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"must be a mapping or a JSON object string, not {type(value).__name__}"
    return value, None


def unreadable_number(text: str) -> bool:
    """Digits that int() cannot read (superscripts, over 4,300 digits): vLLM's int() of the variable fails too."""
    if not text.strip().isdigit():
        return False
    try:
        int(text)
    except ValueError:
        return True
    return False

"""pydantic v2 lax-mode JSON coercion, for the field types of vLLM's KVTransferConfig; and the same as JSON Schema.

--kv-transfer-config is parsed with `TypeAdapter(KVTransferConfig).validate_json` (0.9.1+) or
`KVTransferConfig.model_validate_json` (0.8.5): pydantic's lax mode, which converts 14580.0 and "14580" to an int
field, "1e9" to a float field, "yes" to a bool field, and no number to a str field. tests/vllm/connectors/test_vllm_kv_lax.py runs
pydantic itself on the field types lifted from each release and compares. Pure: pydantic is not imported.
"""
from __future__ import annotations

import math
import re
from typing import Any

# pydantic-core reads leading zeros and any underscores among them as nothing ("0__1" is 1), then digits with
# single underscores between them ("1__0" is an error), then an all-zero fraction ("80.00" is 80).
_INT_TEXT = re.compile(r"\s*[+-]?(?:(?:0[0_]*)?[1-9][0-9]*(?:_[0-9]+)*|0+)(?:\.0+)?\s*", re.ASCII)
_DIGITS = r"[0-9]+(?:_[0-9]+)*"
_FLOAT_TEXT = re.compile(rf"\s*[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?\s*", re.ASCII)
_FLOAT_WORDS = re.compile(r"\s*[+-]?(?:inf|infinity|nan)\s*", re.IGNORECASE)
TRUE = ("true", "yes", "on", "1", "t", "y")
FALSE = ("false", "no", "off", "0", "f", "n")
_I64 = 2 ** 63


def to_int(value: Any) -> int | None:
    """An int field's value from JSON value (None: pydantic's int_parsing / int_from_float / int_type error)."""
    if isinstance(value, bool):
        return int(value)  # JSON true/false: lax mode reads them as 1/0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() and abs(value) < _I64 else None
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value.strip().split(".")[0].replace("_", ""))
    return None


def to_float(value: Any) -> float | None:
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str) and (_FLOAT_TEXT.fullmatch(value) or _FLOAT_WORDS.fullmatch(value)):
        return float(value.strip().replace("_", ""))
    return None


def to_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.lower()  # not stripped: pydantic rejects " true "
        return True if text in TRUE else False if text in FALSE else None
    return None


_DIGIT_ATOM = re.compile(r"\[\d-\d\]\{\d+\}|\[0-9\]\{\d+\}|\[\d-\d\]|\d")


def int_text_pattern(span_regex: str) -> str:
    """contract.range_pattern's digits made pydantic's: a "+", "_" between digits, a ".0" tail."""
    def atom(m: re.Match[str]) -> str:
        text = m.group()
        if "{" in text:
            cls, count = text.split("{")
            return f"(?:_?{cls}){{{count}"
        return "_?" + text
    body = _DIGIT_ATOM.sub(atom, span_regex.strip("^$").removeprefix(r"\s*0*(?:").removesuffix(r")\s*"))
    # The first digit of a number takes no underscore before it (the zero prefix absorbs any after zeros).
    alternatives = [part.removeprefix("_?") for part in _top_level(body)]
    return rf"^\s*\+?(?:0[0_]*)?(?:{'|'.join(alternatives)})(?:\.0+)?\s*$"


def _top_level(regex: str) -> list[str]:
    """regex split at the | outside every group."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(regex):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(regex[start:i])
            start = i + 1
    return [*parts, regex[start:]]


INT_TEXT_PATTERN = "^" + _INT_TEXT.pattern + "$"  # any int field without bounds
FLOAT_TEXT_PATTERN = (r"^\s*[+-]?(?:(?:[0-9]+(?:_[0-9]+)*(?:\.(?:[0-9]+(?:_[0-9]+)*)?)?|\.[0-9]+(?:_[0-9]+)*)"
                      r"(?:[eE][+-]?[0-9]+(?:_[0-9]+)*)?|[Ii][Nn][Ff](?:[Ii][Nn][Ii][Tt][Yy])?|[Nn][Aa][Nn])\s*$")
BOOL_TEXT_PATTERN = "^(?:" + "|".join("".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)
                                      for word in (*TRUE, *FALSE)) + ")$"


def bool_schema() -> dict[str, Any]:
    return {"anyOf": [{"type": "boolean"}, {"title": "0 or 1", "enum": [0, 1]},
                      {"title": "a boolean word (true, yes, on, 1, t, y / false, no, off, 0, f, n)",
                       "type": "string", "pattern": BOOL_TEXT_PATTERN}]}


def float_schema() -> dict[str, Any]:
    return {"anyOf": [{"type": ["number", "boolean"]},
                      {"title": "a number written as a string", "type": "string", "pattern": FLOAT_TEXT_PATTERN}]}

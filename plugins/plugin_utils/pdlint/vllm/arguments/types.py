"""The type= function each argument's value goes through, per release, and argparse's words for its refusal."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..releases import R, Release
from .args import Argument

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


class TypeFail(ValueError):
    """argparse.ArgumentTypeError: argparse shows its text as it is (`argument --x: <text>`)."""


def human_readable_int(value: str, release: Release) -> int:
    """human_readable_int: engine/arg_utils.py (0.8.5-0.19.x), utils/argparse_utils.py (0.20.0+); `t`/`T` from
    0.13.0 (before, `1t` falls through to int() and fails)."""
    value = value.strip()
    found = _HUMAN.fullmatch(value)
    if found:
        decimal = {"k": 10**3, "m": 10**6, "g": 10**9}
        binary = {"K": 2**10, "M": 2**20, "G": 2**30}
        if release >= R("0.13.0"):
            decimal["t"], binary["T"] = 10**12, 2**40
        number, suffix = found.groups()
        if suffix in decimal:
            return int(float(number) * decimal[suffix])
        if suffix in binary:
            try:
                return int(number) * binary[suffix]
            except ValueError:
                raise TypeFail(f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean to use "
                               f"{number}{suffix.lower()} instead?") from None
    return int(value)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as err:
        raise TypeFail(f"invalid JSON: {err}") from None
    except RecursionError:
        raise TypeFail("invalid JSON: nested too deeply") from None


Converter = tuple[Callable[[str], Any] | None, str]  # (function, its name in "invalid <name> value"); None: text


def converter(arg: Argument, release: Release) -> Converter:
    """What the argument's type= does with one value (one item, for lists); optional_type (engine/arg_utils.py,
    every release) first takes "" and "None" as None and words a refusal "Value x cannot be converted to <type>."."""
    convert, name = _plain(arg, release)
    if not arg.optional:
        return convert, name
    shown = f"<class '{name}'>" if name in ("int", "float", "str") else f"<function {name}>"

    def optional(text: str) -> Any:
        if text in ("", "None"):
            return None
        if convert is None:
            return text
        try:
            return convert(text)
        except TypeFail:
            raise
        except ValueError:
            raise TypeFail(f"Value {text} cannot be converted to {shown}.") from None

    return optional, name


def _plain(arg: Argument, release: Release) -> Converter:
    kind = arg.item if arg.kind == "list" else arg.kind
    if arg.kind == "choice":
        kind = "int" if arg.choices and all(isinstance(c, int) for c in arg.choices) else "str"
    if kind == "int":
        return int, "int"
    if kind == "float":
        return float, "float"
    if kind == "json" and arg.or_text:
        # union_dict_and_str (engine/arg_utils.py, 0.9.0+): JSON only when it looks like an object; the test
        # tolerates whitespace and newlines from 0.10.0
        looks = re.compile(r"(?s)^\s*{.*}\s*$" if release >= R("0.10.0") else r"^{.*}$")
        return (lambda v: _json(v) if looks.match(v) else v), "union_dict_and_str"
    if kind == "json":
        return _json, "json"
    if kind == "int_hr":
        # max_model_len: human_readable_int_or_auto (-1 / auto) from 0.14.0, engine/arg_utils.py _compute_kwargs
        if arg.name == "max_model_len" and release >= R("0.14.0"):
            return (lambda v: -1 if v.strip() == "-1" or v.strip().lower() == "auto"
                    else human_readable_int(v, release)), "human_readable_int_or_auto"
        return (lambda v: human_readable_int(v, release)), "human_readable_int"
    return None, "str"  # str, and "any": a type vLLM computes at run time, taken as text

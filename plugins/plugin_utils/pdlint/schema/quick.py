"""A conservative check that a value surely satisfies a JSON Schema, so jsonschema runs only when it may not.

It understands the keywords pdlint's generated schema uses and answers False
("not sure") for anything else, so the `schema` rule's findings stay exactly
jsonschema's (tests/schema/test_schema_quick.py checks that True implies no errors).
Most values are valid: a clean run never imports jsonschema.
"""
from __future__ import annotations

import re
from typing import Any

# Annotations only: they never change whether a value validates (markdownDescription, defaultSnippets: editors).
_IGNORED = frozenset(("description", "title", "$schema", "$id", "definitions", "default", "markdownDescription",
                      "defaultSnippets", "examples"))
_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def surely_valid(schema: Any, value: Any, root: dict[str, Any]) -> bool:
    """True only when value certainly validates against schema (draft-07, pdlint's subset)."""
    if not isinstance(schema, dict):
        return False
    for key, arg in schema.items():
        if key in _IGNORED:
            continue
        if key == "type":
            kinds = arg if isinstance(arg, list) else [arg]
            if not any(k in _TYPES and _TYPES[k](value) for k in kinds):
                return False
        elif key == "anyOf":
            if not any(surely_valid(s, value, root) for s in arg):
                return False
        elif key == "$ref":
            if not (isinstance(arg, str) and arg.startswith("#/definitions/")):
                return False
            target = root.get("definitions", {}).get(arg[len("#/definitions/"):])
            if target is None or not surely_valid(target, value, root):
                return False
        elif key == "enum":
            if isinstance(value, (dict, list)) or not any(type(value) is type(e) and value == e for e in arg):
                return False
        elif key == "pattern":
            if isinstance(value, str) and not re.search(arg, value):
                return False
        elif key == "minLength":
            if isinstance(value, str) and len(value) < arg:
                return False
        elif key in ("minimum", "maximum"):
            if _number(value) and (value < arg if key == "minimum" else value > arg):
                return False
        elif key == "properties":
            if isinstance(value, dict) and not all(surely_valid(s, value[k], root)
                                                   for k, s in arg.items() if k in value):
                return False
        elif key == "additionalProperties":
            if isinstance(value, dict) and not _additional(schema, arg, value, root):
                return False
        elif key == "allOf":
            if not all(surely_valid(s, value, root) for s in arg):
                return False
        elif key == "if":
            decided = _decide(arg, value)
            branches = {True: ("then",), False: ("else",), None: ("then", "else")}[decided]
            if not all(surely_valid(schema[b], value, root) for b in branches if b in schema):
                return False
        elif key in ("then", "else"):
            continue  # judged with their `if`
        elif key == "required":
            if isinstance(value, dict) and not all(k in value for k in arg):
                return False
        elif key == "items":
            if isinstance(value, list) and not (isinstance(arg, dict) and all(surely_valid(arg, v, root)
                                                                              for v in value)):
                return False
        else:
            return False
    return True


def _additional(schema: dict[str, Any], arg: Any, value: dict[str, Any], root: dict[str, Any]) -> bool:
    if "patternProperties" in schema:
        return False
    extras = [k for k in value if k not in schema.get("properties", {})]
    if arg is True or not extras:
        return True
    if arg is False:
        return False
    return all(surely_valid(arg, value[k], root) for k in extras)


def _decide(schema: Any, value: Any) -> bool | None:
    """Whether value matches an `if` schema of the simple kind pdlint writes (properties, required, enum):
    True or False when certain, None when not."""
    if not isinstance(schema, dict):
        return None
    result: bool | None = True
    for key, arg in schema.items():
        if key in _IGNORED:
            continue
        if key == "required":
            if isinstance(value, dict) and not all(k in value for k in arg):
                return False
        elif key == "enum":
            if any(type(value) is type(e) and value == e for e in arg):
                continue
            if isinstance(value, (dict, list)) or any(value == e for e in arg):
                result = None  # equal in Python but maybe not in JSON (True == 1), or a container: not sure
            else:
                return False
        elif key == "properties":
            if not isinstance(value, dict):
                continue
            for name, sub in arg.items():
                if name in value:
                    decided = _decide(sub, value[name])
                    if decided is False:
                        return False
                    if decided is None:
                        result = None
        else:
            return None
    return result

"""The JSON Schema of pdlint's variables, generated from spec.VARIABLES, and the `schema` rule."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .build import kv_config
from .finding import Finding
from .hostvars import HostVars, Unresolved
from .schema_quick import surely_valid
from .spec import HOST_ONLY, SKIP, TEMPLATE, VARIABLES, Var, host_var

SCHEMA_ID = "https://pdlint.dev/schemas/pdlint-vars.schema.json"
_TEMPLATE_REF = {"$ref": "#/definitions/template"}
# Keys whose invalid values a dedicated rule reports (kv-role[invalid]), so the CLI says it once.
OWNED_BY_RULES = frozenset(("kv_role",))


def _property(var: Var) -> dict[str, Any]:
    text = var.description + ("" if var.default is None else f" Default: {var.default}.")
    return {"description": text, "anyOf": [var.schema, _TEMPLATE_REF]}


def generate() -> dict[str, Any]:
    """The draft-07 schema for one host's (or group's) variables."""
    item = {
        "type": "object",
        "properties": {v.name: _property(v) for v in VARIABLES if v.in_instances},
    }
    props = {host_var(v.name): _property(v) for v in VARIABLES}
    props["vllm_instances"] = {"description": HOST_ONLY[0].description, "type": "array", "items": item}
    props[SKIP.name] = {"description": SKIP.description, **SKIP.schema}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "pdlint: vLLM prefill/decode variables in Ansible group_vars and host_vars",
        "type": "object",
        "properties": props,
        "definitions": {"template": {"type": "string", "pattern": TEMPLATE, "description": "A Jinja template."}},
    }


def dumps() -> str:
    """The schema file's exact text."""
    return json.dumps(generate(), indent=2, sort_keys=False) + "\n"


def _expected(schema: dict[str, Any]) -> str:
    """A valid value, in words."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "anyOf" in schema:
        options = [_expected(s) for s in schema["anyOf"] if s is not _TEMPLATE_REF and "pattern" not in s]
        return " or ".join(o for o in options if o)
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        return f"an integer >= {low}" + (f" and <= {high}" if high is not None else "")
    names = {"string": "a string", "boolean": "true or false", "object": "a mapping", "array": "a list", "null": "null"}
    if isinstance(kind, list):
        return " or ".join(names.get(k, k) for k in kind)
    return names.get(kind, "a valid value") if isinstance(kind, str) else "a valid value"


def _prepare(value: Any) -> Any:
    """Unresolved values validate as templates; a JSON kv_transfer_config as its object."""
    if isinstance(value, Unresolved):
        return "{{ unresolved }}"
    if isinstance(value, dict):
        return {k: _prepare(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_prepare(v) for v in value]
    return value


def _validator() -> Any:
    import jsonschema

    doc = generate()
    return jsonschema.validators.validator_for(doc)(doc)


_VALIDATOR: Any = None


def check(hv: HostVars) -> Iterator[Finding]:
    """Every schema error of one host, each at the line of the offending value."""
    doc = _prepare(dict(hv.values))
    for path in _kv_paths(doc):
        raw = _get(doc, path)
        if isinstance(raw, str) and "{{" not in raw and "{%" not in raw:
            config, error = kv_config(raw)
            if error:
                yield _finding(hv, path, f"{_name(path)} {error}")
            else:
                _set(doc, path, config)
    found = [e for name, value in doc.items() for e in _errors(name, value)]
    for error in sorted(found, key=lambda e: list(map(str, e.absolute_path))):
        path = tuple(error.absolute_path)
        if path and path[-1] in OWNED_BY_RULES:
            continue
        if error.validator == "additionalProperties":
            allowed = set(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - allowed):
                yield _finding(hv, (*path, key), f"{_name((*path, key))}: unknown key {key!r}; vLLM rejects it",
                               "allowed keys: " + ", ".join(sorted(allowed)))
            continue
        expected = _expected(error.schema)
        yield _finding(hv, path, f"{_name(path)}: {error.instance!r} is not {expected}" if path else error.message)


_ERRORS: dict[tuple[str, str], list[Any]] = {}
_ROOT: Any = None
_TOP_LEVEL_ONLY_PROPERTIES = frozenset(("$schema", "$id", "title", "type", "properties", "definitions"))


def _errors(name: str, value: Any) -> list[Any]:
    """The schema errors of one variable, memoized by value: the top level has only independent `properties`,
    so a variable's errors do not depend on the others (a fleet repeats the same values on every host)."""
    global _VALIDATOR, _ROOT  # one compiled validator per process; the schema is constant
    if _ROOT is None:
        _ROOT = generate()
    only_properties = set(_ROOT) <= _TOP_LEVEL_ONLY_PROPERTIES  # then variables pdlint does not define cannot fail
    if only_properties and (name not in _ROOT["properties"] or surely_valid(_ROOT["properties"][name], value, _ROOT)):
        return []
    if _VALIDATOR is None:
        _VALIDATOR = _validator()
    doc = {name: value}
    try:
        key = (name, json.dumps(value))
    except (TypeError, ValueError):
        return list(_VALIDATOR.iter_errors(doc))
    if key not in _ERRORS:
        _ERRORS[key] = list(_VALIDATOR.iter_errors(doc))
    return _ERRORS[key]


def _kv_paths(doc: dict[str, Any]) -> Iterator[tuple[str | int, ...]]:
    if "vllm_kv_transfer_config" in doc:
        yield ("vllm_kv_transfer_config",)
    items = doc.get("vllm_instances")
    if isinstance(items, list):
        for i, item in enumerate(items):
            if isinstance(item, dict) and "kv_transfer_config" in item:
                yield ("vllm_instances", i, "kv_transfer_config")


def _get(doc: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _set(doc: Any, path: tuple[str | int, ...], value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def _name(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (("." if text else "") + str(part))
    return text


def _finding(hv: HostVars, path: tuple[str | int, ...], message: str, hint: str | None = None) -> Finding:
    return Finding(origin=hv.origin(*path), rule="schema", severity="error", message=message,
                   hint=hint, hosts=(hv.host,))

"""The JSON Schema document (draft-07, what yaml-language-server handles best), generated from spec and extra_keys."""
from __future__ import annotations

import functools
import json
from typing import Any

from ..contract import HOST_ONLY, KV_TRANSFER_CONFIG, SKIP, TEMPLATE, VARIABLES, Var, host_var
from ..vllm.arguments import args as vllm_args
from ..vllm.connectors.extra_keys import CONNECTORS, ConnectorKeys, Key
from .names import CONTRACT, typo_pattern

SCHEMA_ID = "https://pdlint.dev/schemas/pdlint-vars.schema.json"
# Ansible renders templates and decrypts !vault values before vLLM sees them: the schema cannot judge either.
TEMPLATE_DEF = {"title": "a Jinja template or !vault value", "type": "string",
                "pattern": TEMPLATE + r"|^\s*\$ANSIBLE_VAULT;",
                "description": "A Jinja template or an Ansible Vault value (checked once rendered)."}
# Names pdlint owns: anything else in group_vars/host_vars is the inventory's own business.
OTHER_VARS = "^(?!vllm_|pdlint_)"
_DOC_KEYS = ("description", "default")


def expected(schema: dict[str, Any]) -> str:
    """A valid value, in words (for messages and hover text)."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "anyOf" in schema:
        # A string form of a number ("an integer written as a string") goes unsaid beside the number; a branch
        # that is only a pattern (vllm_version's release) is the whole answer.
        # A const (pydantic reading true as 1) is an oddity vLLM tolerates, not what to write.
        branches = [s for s in schema["anyOf"] if s != TEMPLATE_DEF and s.get("title") != TEMPLATE_DEF["title"]
                    and "const" not in s]
        options = [expected(s) for s in branches if "pattern" not in s] or [expected(s) for s in branches]
        return " or ".join(dict.fromkeys(o for o in options if o))
    kind = schema.get("type")
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        text = "an integer" if kind == "integer" else "a number"
        if schema.get("exclusiveMinimum") is not None:
            text += f" > {schema['exclusiveMinimum']}"
        if low is not None:
            text += f" >= {low}"
        return text + (f" and <= {high}" if high is not None else "")
    names = {"string": "a string", "boolean": "true or false", "number": "a number", "integer": "an integer",
             "object": "a mapping", "array": "a list", "null": "null"}
    if isinstance(kind, list):
        return " or ".join(names.get(str(k), str(k)) for k in kind)
    if kind == "string" and "pattern" in schema:
        return schema.get("title") or f"a string matching {schema['pattern']}"
    return names.get(kind, "a valid value") if isinstance(kind, str) else "a valid value"


def _docs(name: str, description: str, default: Any, schema: dict[str, Any]) -> dict[str, str]:
    """description for plain clients, markdownDescription for hover: both from the one description."""
    text = description + ("" if default is None else f" Default: {default}.")
    markdown = f"**{name}**: {description}\n\nExpects {expected(schema)}"
    markdown += "" if default is None else f"; default `{json.dumps(default)}`"
    return {"description": text, "markdownDescription": markdown + ". Jinja templates and `!vault` values are accepted."}


def templated(schema: dict[str, Any], docs: dict[str, str] | None = None) -> dict[str, Any]:
    """A value, or a template that renders to one.

    The value branch carries the docs and the template branch is inlined, not a $ref: yaml-language-server's
    hover tells anyOf branches apart by their description, and would otherwise show every branch's text.
    """
    bare = {k: v for k, v in schema.items() if k not in _DOC_KEYS}
    return {"anyOf": [{**bare, **(docs or {})}, dict(TEMPLATE_DEF)]}


def _titled(node: Any) -> Any:
    """Every anyOf branch gets a title saying what it accepts.

    yaml-language-server's hover takes a matched value for a match of every branch that looks the same
    (same title, description and properties) and then prints all their texts joined by ||.
    """
    if isinstance(node, list):
        return [_titled(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _titled(v) for k, v in node.items()}
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [b if "title" in b or "$ref" in b else {"title": expected(b), **b} for b in out["anyOf"]]
    return out


def _extra_config(conn: ConnectorKeys) -> dict[str, Any]:
    def key(k: Key) -> dict[str, Any]:
        docs = _docs(k.name, f"{conn.label}: {k.description}", k.default, k.schema)
        return {**docs, **templated(k.schema, docs)}

    closed = "vLLM reads no other key." if conn.closed else "Other keys are passed on to the connector."
    doc: dict[str, Any] = {
        "type": "object",
        "description": f"{conn.label} settings ({conn.source}). {closed}",
        "properties": {k.name: key(k) for k in conn.keys},
    }
    if conn.required:
        doc["required"] = list(conn.required)
    if conn.patterns:
        doc["patternProperties"] = {p: {} for p in conn.patterns}
    if conn.closed:
        doc["additionalProperties"] = False
    return doc


def _field(name: str, sub: dict[str, Any]) -> dict[str, Any]:
    docs = _docs(name, sub.get("description", ""), sub.get("default"), sub)
    return {**docs, **templated(sub, docs)}


def kv_transfer_config() -> dict[str, Any]:
    """KVTransferConfig's fields, plus the extra_config keys of the connector kv_connector names (if/then)."""
    props = {name: _field(name, sub) for name, sub in KV_TRANSFER_CONFIG["properties"].items()}
    branches = [{"if": {"properties": {"kv_connector": {"enum": list(c.classes)}}, "required": ["kv_connector"]},
                 "then": {"properties": {"kv_connector_extra_config": _extra_config(c)}}} for c in CONNECTORS]
    return {"type": "object", "description": "--kv-transfer-config. Accepts the keys of every vLLM release pdlint "
            "knows (0.8.5 - newest), so a valid config for an older release is not flagged here; the pdlint CLI "
            "checks the keys against the host's vllm_version (an unknown key is an error from 0.16.0, a warning "
            "before, when vLLM silently ignores it; kv_ip, kv_rank, kv_parallel_size and kv_buffer_size are "
            "rejected from 0.32.0).",
            "properties": props, "additionalProperties": False, "allOf": branches,
            "defaultSnippets": [_kv_snippet("NixlConnector", {}),
                                _kv_snippet("MoRIIOConnector", {"http_port": "${2:8000}", "read_mode": "true"})]}


def _kv_snippet(connector: str, extra: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"kv_connector": connector, "kv_role": "${1|kv_producer,kv_consumer,kv_both|}"}
    if extra:
        body["kv_connector_extra_config"] = extra
    return {"label": connector, "description": f"kv_transfer_config for {connector}", "body": body}


def _var_schema(var: Var) -> dict[str, Any]:
    if var.name == "kv_transfer_config":
        return {"anyOf": [{"$ref": "#/definitions/kv_transfer_config"},
                          {"type": "string", "description": "The JSON text given to --kv-transfer-config."}]}
    return var.schema


def _property(var: Var, name: str) -> dict[str, Any]:
    docs = _docs(name, var.description, var.default, var.schema)
    return {**docs, **templated(_var_schema(var), docs)}


def _snippet(role: str, kv_role: str, port: int) -> dict[str, Any]:
    return {"label": f"pdlint {role} instance", "description": f"vLLM {role} engine of a P/D deployment",
            "body": {"vllm_pd_deployment": "${1:chat}", "vllm_pd_role": role, "vllm_model": "${2:org/model}",
                     "vllm_tensor_parallel_size": "^${3:1}", "vllm_port": f"^${{4:{port}}}",
                     "vllm_kv_transfer_config": {"kv_connector": "${5:NixlConnector}", "kv_role": kv_role}}}


_ARG_SCHEMAS: dict[str, dict[str, Any]] = {
    "int": {"anyOf": [{"type": "integer"}, {"title": "an integer written as a string", "type": "string",
                                            "pattern": r"^\s*[-+]?[0-9]+\s*$"}]},
    # human_readable_int (vllm/arguments/types.py, the newest release's): 1k, 1.5g, 2M (binary suffixes take whole
    # numbers), or int(); the CLI checks the host's own release
    "int_hr": {"anyOf": [{"type": "integer"}, {"title": "an integer written as a string (1k, 1.5g, 2M, 1G)",
                                               "type": "string",
                                               "pattern": r"^\s*(?:\d+(?:\.\d+)?[kmgt]|\d+[KMGT]|[-+]?\d+(?:_\d+)*)\s*$"}]},
    "float": {"anyOf": [{"type": "number"}, {"title": "a number written as a string", "type": "string",
                                             "pattern": r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$"}]},
    "bool": {"type": "boolean"},
    "json": {"type": ["object", "array", "string"]},
}


def _argument(name: str) -> dict[str, Any]:
    """One vLLM argument as `vllm_<name>` (its newest release's definition; null = unset)."""
    arg = vllm_args.newest(name)
    if arg is None:
        raise AssertionError(name)
    if arg.kind == "choice":
        numeric = all(isinstance(c, int) for c in arg.choices)
        value: dict[str, Any] = {"enum": [*arg.choices, *(str(c) for c in arg.choices if numeric)]}
    else:
        value = dict(_ARG_SCHEMAS.get(arg.kind, {}))
    if arg.kind == "int_hr" and arg.name == "max_model_len":  # human_readable_int_or_auto (0.14.0+): auto too
        value = {"anyOf": [*value["anyOf"], {"title": "auto", "type": "string", "pattern": r"^\s*[Aa][Uu][Tt][Oo]\s*$"}]}
    spelled = " / ".join(arg.spellings if arg.kind == "bool" else (*arg.flags, *arg.aliases))
    docs = {"description": f"vLLM's {spelled} (from {vllm_args.first_release(name)}); null leaves it unset. "
            "The pdlint CLI checks it against the host's vllm_version."}
    return {**docs, **templated({"anyOf": [value, {"type": "null"}]} if value else {}, docs)}


def _instances() -> dict[str, Any]:
    item = {"type": "object",
            "properties": {v.name: _property(v, v.name) for v in VARIABLES if v.in_instances}}
    instances = HOST_ONLY[0]
    return {**_docs("vllm_instances", instances.description, None, instances.schema), "type": "array", "items": item}


def _skip() -> dict[str, Any]:
    return {**_docs(SKIP.name, SKIP.description, None, SKIP.schema), **SKIP.schema}


@functools.cache
def _contract() -> dict[str, Var]:
    return {host_var(v.name): v for v in VARIABLES}


@functools.cache
def property_schema(name: str) -> dict[str, Any] | None:
    """generate()["properties"][name], or None where it has none, built alone: a check reads a few of its hundreds
    of properties, and generating them all costs more than the rest of a small inventory's check."""
    var = _contract().get(name)
    if name == "vllm_instances":
        found = _instances()
    elif name == SKIP.name:
        found = _skip()
    elif var is not None:
        found = _property(var, name)
    elif name.startswith("vllm_") and name[len("vllm_"):] in vllm_args.every_name():
        found = _argument(name[len("vllm_"):])
    else:
        return None
    titled: dict[str, Any] = _titled(found)
    return titled


@functools.cache
def definitions_root() -> dict[str, Any]:
    """The part of generate() a property's $ref reads: {"definitions": ...}."""
    return {"definitions": _titled({"kv_transfer_config": kv_transfer_config()})}


def generate() -> dict[str, Any]:
    """The schema for one host's (or group's) variables."""
    props = {host_var(v.name): _property(v, host_var(v.name)) for v in VARIABLES}
    props["vllm_instances"] = _instances()
    props[SKIP.name] = _skip()
    for name in sorted(vllm_args.every_name()):
        if "vllm_" + name not in props:
            props["vllm_" + name] = _argument(name)
    return _titled({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "pdlint: vLLM prefill/decode variables in Ansible group_vars and host_vars",
        "description": "pdlint's names, and vLLM's arguments as vllm_<name>, are checked; a role's own vllm_* "
                       "names are allowed unless one letter from a name pdlint reads (a typo); pdlint_* names "
                       "must be known.",
        "type": "object",
        "properties": props,
        "patternProperties": {OTHER_VARS: {}, typo_pattern(c for c in CONTRACT if c.startswith("vllm_")): {}},
        "additionalProperties": False,
        "defaultSnippets": [_snippet("prefill", "kv_producer", 8100), _snippet("decode", "kv_consumer", 8200)],
        "definitions": {"kv_transfer_config": kv_transfer_config()},
    })


def dumps() -> str:
    """The schema file's exact text."""
    return json.dumps(generate(), indent=2, sort_keys=False) + "\n"

"""The `schema` rule: one host's variables against the generated JSON Schema (schema_doc), each error at its line."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ..finding import Finding
from ..hostvars import HostVars, IdentityMemo, Unresolved, is_template
from ..topology.coerce import kv_config
from ..vllm.connectors.extra_keys import CHECKED_EXTRA
from ..yaml_text import yaml_text
from .document import SCHEMA_ID, definitions_root, dumps, expected, generate, property_schema
from .kv import Path, converted, finding, kv_keys, kv_paths, path_get, path_name, path_set
from .names import CONTRACT
from .names import check as own_names
from .quick import surely_valid

__all__ = ["SCHEMA_ID", "check", "dumps", "generate"]

# Keys whose invalid values a dedicated rule reports (kv-role[invalid]), so the CLI says it once.
OWNED_BY_RULES = frozenset(("kv_role",))
_EXTRA = "kv_connector_extra_config"

_KV = "kv_transfer_config"


def _prepare(value: Any) -> Any:
    """Unresolved values validate as templates; a JSON kv_transfer_config as its object."""
    if isinstance(value, Unresolved):
        return "{{ unresolved }}"
    if isinstance(value, dict):
        return {k: _prepare(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_prepare(v) for v in value]
    return value


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    """The same schema with local $refs replaced by their definition (jsonschema resolves a $ref slowly)."""
    if isinstance(node, list):
        return [_inline(n, definitions) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    if ref.startswith("#/definitions/") and len(node) == 1:
        return _inline(definitions[ref.rsplit("/", 1)[1]], definitions)
    return {k: _inline(v, definitions) for k, v in node.items()}


def _validator() -> Any:
    import jsonschema

    doc = generate()
    base = jsonschema.validators.validator_for(doc)
    # JSON Schema counts 4.0 as an integer; Ansible renders it as "4.0" on the command line and vLLM's int("4.0")
    # fails, so pdlint does not (editors, which see JSON numbers, accept it).
    strict = jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)))
    return strict(_inline(doc, doc.get("definitions", {})))


_VALIDATOR: Any = None


def _leaves(error: Any) -> list[Any]:
    """The errors to report for one error: inside a container, the anyOf branch of the value's own kind.

    A scalar that matches no branch is one error at its line ("is not an integer >= 1");
    a mapping or list is judged by the branch of its type, down to the offending key (as editors do).
    """
    if error.validator != "anyOf" or not error.context or not isinstance(error.instance, (dict, list)):
        return [error]
    depth = len(error.absolute_path)
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    own_kind = [errs for errs in branches.values()
                if not any(e.validator == "type" and len(e.absolute_path) == depth for e in errs)]
    if len(own_kind) != 1:
        return [error]
    return [leaf for sub in own_kind[0] for leaf in _leaves(sub)]


def _owned(error: Any) -> bool:
    """Errors a dedicated rule reports with vLLM's own reason."""
    path = tuple(error.absolute_path)
    if path and path[-1] in OWNED_BY_RULES:
        return True
    in_extra = _EXTRA in path
    if error.validator == "required" and path and path[-1] == _EXTRA:
        return True  # connector[config]: MoRIIO reads http_port unconditionally
    return in_extra and path[-1] in CHECKED_EXTRA


Problem = tuple[Path, str, "str | None"]  # (path to the value, message, hint)


def _unknown(error: Any) -> Iterator[Problem]:
    path = tuple(error.absolute_path)
    schema = error.schema
    known = sorted(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    # Keys are not always strings (a play's hostvars can hold {1: ...}); compare and sort their text.
    extras = [k for k in error.instance if k not in known and not any(p.search(str(k)) for p in patterns)]
    if path and path[-1] in (_KV, "vllm_" + _KV):
        return  # release-aware: _kv_keys says what the host's vLLM release does with them
    if path and path[-1] == _EXTRA:
        return  # connector[extra-key] says it per release, as a warning: vLLM ignores a key no connector reads
    for key in sorted(extras, key=str):
        import difflib  # only to suggest a name: a run without a typo never imports it

        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "known: " + ", ".join(known)
        if not path:
            message = f"unknown variable {key!r}: vllm_* and pdlint_* names are pdlint's, and it reads no such one"
        else:
            message = f"{path_name((*path, key))}: unknown key {key!r}; vLLM rejects it"
        yield ((*path, key), message, hint)


def _problems(doc: dict[str, Any]) -> list[Problem]:
    """Every schema error in doc, as (path, message, hint)."""
    global _VALIDATOR  # one compiled validator per process; the schema is constant
    if _VALIDATOR is None:
        _VALIDATOR = _validator()
    found: list[Problem] = []
    for error in (leaf for e in _VALIDATOR.iter_errors(doc) for leaf in _leaves(e)):
        path = tuple(error.absolute_path)
        if _owned(error):
            continue
        if error.validator == "additionalProperties":
            found.extend(_unknown(error))
        elif error.validator == "required":
            found.append((path, f"{path_name(path)}: {error.message}", None))
        else:
            wanted = expected(error.schema)
            spelled = _spelled(error.instance, wanted)
            found.append((path, f"{path_name(path)}: {yaml_text(error.instance)} is "
                          f"{f'a string, not {spelled} ({wanted} is expected)' if spelled else f'not {wanted}'}"
                          if path else error.message, _string_hint(path, spelled) or _hint(path, error.instance)))
    return found


# YAML 1.1's words for booleans and null: a string spelled so was a YAML-quoted value or an INI [group:vars] value.
_WORDS = {**dict.fromkeys(("true", "yes", "on"), "true"), **dict.fromkeys(("false", "no", "off"), "false"),
          **dict.fromkeys(("null", "~", "none"), "null")}


def _spelled(value: Any, wanted: str) -> str | None:
    """The boolean or null a string spells, where one is expected (vllm_x: "false"; INI vars: vllm_x=false)."""
    word = _WORDS.get(value.strip().lower()) if isinstance(value, str) else None
    if word is None or ("true or false" not in wanted if word != "null" else "null" not in wanted):
        return None
    return "null" if word == "null" else f"the boolean {word}"


def _string_hint(path: Path, spelled: str | None) -> str | None:
    if spelled is None:
        return None
    word = spelled.split()[-1]
    literal = {"true": "True", "false": "False", "null": "None"}[word]
    name = next((str(p) for p in reversed(path) if isinstance(p, str)), "")
    return (f"Ansible reads every value of an INI [group:vars] section as a string (and a quoted YAML value is one "
            f"too): write `{name}: {word}` unquoted in YAML group_vars/host_vars, or `{name}={literal}` on the INI "
            "host line, where Ansible reads Python literals")


def _hint(path: Path, value: Any) -> str | None:
    if path and path[-1] in ("vllm_version", "version"):
        return _version_hint(value)
    if isinstance(value, float) and value.is_integer():
        return (f"write {int(value)}: Ansible passes {value} to vllm serve as the text {value}, "
                "which vLLM's int() rejects")
    return None


def _version_hint(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return "write the release, quoted, as `vllm --version` prints it: \"0.32.0\""
    if isinstance(value, float):
        return (f"quote it: \"{value}\"; unquoted, YAML reads it as a number, which loses the release's "
                "trailing zeros (0.10 becomes 0.1)")
    return ("write the release you deploy, as `vllm --version` prints it (0.32.0, 0.32.0.post1, 0.32.0rc1); "
            "`pdlint versions` lists the releases pdlint knows")


_SEEN: dict[tuple[Any, ...], list[Problem]] = {}
_SCALARS = (str, int, float, bool, type(None))


def _variable_problems(name: str, value: Any) -> list[Problem]:
    """_problems of one variable, remembered by value: hosts share most values through group_vars.

    Each top-level variable validates on its own (the schema has no constraint across them). A scalar is
    its own key (its type too: 1, 1.0 and True differ); a container is keyed by its JSON text.
    """
    if type(value) in _SCALARS:
        key: tuple[Any, ...] = (name, type(value), value)
    else:
        try:
            key = (name, json.dumps(value, sort_keys=True, default=lambda o: f"<{type(o).__name__}>{o!r}"))
        except (TypeError, ValueError):  # keys of mixed types, cycles: validate without remembering
            return _problems({name: value})
    found = _SEEN.get(key)
    if found is None:
        if len(_SEEN) > 50_000:
            _SEEN.clear()
        found = _SEEN[key] = [] if _surely_valid(name, value) else _problems({name: value})
    return found


def _surely_valid(name: str, value: Any) -> bool:
    """schema_quick vouches for the value (most values are valid: jsonschema is then never imported).

    Only the variable's own property is built (and the definitions, for a $ref), not the whole document."""
    schema = property_schema(name)
    return schema is not None and surely_valid(schema, value, definitions_root())


# Variables whose value check() rewrites before validating (a JSON kv_transfer_config string, read as its object),
# and the version that says which release's KVTransferConfig applies to them.
_REWRITTEN = ("vllm_kv_transfer_config", "vllm_instances")
Seen = IdentityMemo[list[Problem]]  # each variable's problems by the identity of its value, and its name


def check(hv: HostVars, seen: Seen | None = None, before: Seen | None = None,
          own: tuple[str, ...] = ()) -> Iterator[Finding]:
    """Every schema error of one host, each at the line of the offending value.

    seen (one dict for one check of many hosts) remembers each variable's problems by the identity of its value:
    the loaders give every host of a group the group's value objects, so most values are validated once. before,
    the previous check's seen: the language server's file memo gives unchanged files' values again, the same
    objects, so an edit re-validates only what it changed. own: the config's own_variables patterns.
    """
    values = hv.values
    doc = {name: _prepare(values[name]) for name in (*_REWRITTEN, "vllm_version") if name in values}
    rewritten = set()
    for path in kv_paths(doc):
        raw = path_get(doc, path)
        if isinstance(raw, str) and not is_template(raw):
            config, error = kv_config(raw)
            if error:
                yield finding(hv, path, f"{path_name(path)} {error}")
            else:
                path_set(doc, path, config)
                rewritten.add(path[0])
        yield from kv_keys(hv, doc, path)
        yield from converted(hv, doc, path, rewritten)
    problems: list[Problem] = []
    for name, value in values.items():
        if isinstance(name, str) and name.startswith("vllm_") and name not in CONTRACT:
            continue  # names.py: vLLM's arguments, the role's own names, typos
        if name in rewritten:
            problems.extend(_variable_problems(name, doc[name]))
            continue
        known = seen.get((value,), name) if seen is not None else None
        if known is None:
            known = (before.get((value,), name) if before is not None else None) or (
                _variable_problems(name, _prepare(value)),)
            if seen is not None:
                seen.put((value,), known[0], name)
        problems.extend(known[0])
    yield from own_names(hv, CONTRACT, own)
    for path, message, hint in sorted(problems, key=lambda p: list(map(str, p[0]))):
        unknown_name = len(path) == 1 and message.startswith("unknown variable")
        yield finding(hv, path, message, hint, origin=hv.key_origin(str(path[0])) if unknown_name else None)

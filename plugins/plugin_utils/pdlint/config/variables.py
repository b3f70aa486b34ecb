"""The config file's `variables:` mapping: a contract variable -> a Jinja expression over a role's own variables.

    variables:
      vllm_pd_role: "{{ 'prefill' if 'prefill' in group_names else 'decode' }}"
      vllm_tensor_parallel_size: "{{ tp }}"
      vllm_pd_deployment: chat          # not a template: the value itself

The keys are the contract's inventory names (and `vllm_args`, the command line); launch/mapping.py renders the
expressions. Each entry keeps where it is written, so a finding on a value it made can point at its line.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from ..contract import HOST_ONLY, VARIABLES, host_var
from ..finding import Origin
from .errors import ConfigError

# vllm_args: the command line the launch stage parses; accepted as a key already
NAMES = tuple(sorted({*(host_var(v.name) for v in (*VARIABLES, *HOST_ONLY)), "vllm_args"}))

Lines = Mapping[str, tuple[int, int]]  # key -> (line, column) of its value, 1-based


@dataclasses.dataclass(frozen=True)
class Mapped:
    """One entry: the expression (a template string, or a literal value) and where it is written."""

    name: str
    expression: Any
    origin: Origin


def unknown_name(name: str) -> str:
    """"'vllm_tensor_paralel_size' is not a contract variable; did you mean vllm_tensor_parallel_size?"."""
    import difflib  # only to suggest a name: a run without a typo never imports it

    close = difflib.get_close_matches(name, NAMES, n=2, cutoff=0.6)
    maybe = f"; did you mean {' or '.join(close)}?" if close else f" (known: {', '.join(NAMES)})"
    return f"{name!r} is not a contract variable{maybe}"


def parse(value: Any, source: str, key: str, lines: Lines | None = None) -> tuple[Mapped, ...]:
    """The entries of `variables:`, or ConfigError at the entry's file:line."""
    lines = lines or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: {key}: expected a mapping of contract variable to a Jinja expression "
                          "(vllm_tensor_parallel_size: \"{{ tp }}\")")
    found = []
    for name, expression in value.items():
        line, column = lines.get(str(name), (None, None))
        where = f"{source}:{line}" if line else source
        if not isinstance(name, str) or name not in NAMES:
            raise ConfigError(f"{where}: {key}.{name}: {unknown_name(str(name))}")
        if expression is None or (isinstance(expression, str) and not expression.strip()):
            raise ConfigError(f"{where}: {key}.{name}: expected a Jinja expression such as \"{{{{ tp }}}}\" or a value")
        found.append(Mapped(name, expression, Origin(source, line, column)))
    return tuple(found)


def yaml_lines(text: str, top: str = "variables") -> dict[str, tuple[int, int]]:
    """Where each key of the top-level `variables:` mapping has its value in a .pdlint.yaml text."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    for key, node in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == top and isinstance(node, yaml.MappingNode):
            return {str(k.value): (v.start_mark.line + 1, v.start_mark.column + 1) for k, v in node.value}
    return {}


_TABLE = re.compile(r"^\s*\[\s*tool\.pdlint\.variables\s*\]\s*$")
_HEADER = re.compile(r"^\s*\[")
_ENTRY = re.compile(r"^\s*[\"']?(vllm_\w+|[\w.-]+)[\"']?\s*=\s*")


def toml_lines(text: str) -> dict[str, tuple[int, int]]:
    """Where each key of `[tool.pdlint.variables]` has its value in a pyproject.toml text (tomllib gives none)."""
    found: dict[str, tuple[int, int]] = {}
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if _HEADER.match(line):
            inside = bool(_TABLE.match(line))
            continue
        match = _ENTRY.match(line) if inside else None
        if match and match.group(1) not in found:
            found[match.group(1)] = (number, match.end() + 1)
    return found

"""Hover on a contract variable: its effective value on each host that sees this file, and which file wins."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any

from ..finding import Origin
from ..hostvars import HostVars, Unresolved
from ..topology.types import Instance

# `name:` in YAML (block or flow), `name=` in INI
_NAME = re.compile(r"(?:^|[\s{,])((?:vllm|pdlint)_\w+)\s*[:=]")
_SHOWN = 6  # hosts listed per value; the rest are counted
_KEY = re.compile(r"(?:^|[\s{,])([A-Za-z_]\w*)\s*[:=]")  # any variable's key: a role's own name the mapping reads


def name_at(line: str, character: int) -> str | None:
    """The contract variable whose key is under the 0-based character of line."""
    for match in _NAME.finditer(line):
        if match.start(1) <= character <= match.end(1):
            return match.group(1)
    return None


def key_at(line: str, character: int) -> str | None:
    """The variable whose key is under the 0-based character of line (any name: a role's own too)."""
    for match in _KEY.finditer(line):
        if match.start(1) <= character <= match.end(1):
            return match.group(1)
    return None


def mapped(key: str, path: str, hosts: Sequence[HostVars]) -> str | None:
    """Markdown: the values the config file's `variables:` mapping took from key as this file sets it (hosts as
    checked, their notes saying "vllm_... mapped by .pdlint.yaml:3 from tp (group_vars/prefill.yml:2)")."""
    path = os.path.abspath(path)
    rows: dict[str, list[str]] = {}
    for hv in hosts:
        for where, note in hv.notes.items():
            origin = hv.origins.get(where)
            if f" from {key} (" in note and origin is not None and _same(origin, path):
                rows.setdefault(note, []).append(hv.host)
    if not rows:
        return None
    lines = [f"**{key}** is read by the config file's `variables:`:", ""]
    lines += [f"- {note}: {_names(sorted(on))}" for note, on in sorted(rows.items())]
    return "\n".join(lines) + "\n"


def _same(origin: Origin, path: str) -> bool:
    return bool(origin.file) and os.path.abspath(origin.file) == path


def seeing(hosts: Sequence[HostVars], path: str) -> list[HostVars]:
    """Hosts that take at least one value from the file at path (its group's or host's hosts, as far as it counts)."""
    return [hv for hv in hosts if any(_same(o, path) for o in hv.origins.values())]


def _value(value: Any) -> str:
    if isinstance(value, Unresolved):
        return f"(unresolved: {value.reason})"
    return "(unset)" if value is None else json.dumps(value, default=str) if not isinstance(value, str) else value


def _names(hosts: list[str]) -> str:
    shown = ", ".join(hosts[:_SHOWN])
    return shown if len(hosts) <= _SHOWN else f"{shown} and {len(hosts) - _SHOWN} more"


def describe(name: str, path: str, hosts: Sequence[HostVars]) -> str | None:
    """Markdown: per effective value, the hosts with it and where it comes from (this file, or the file that wins)."""
    path = os.path.abspath(path)
    readers = seeing(hosts, path)
    if not readers:
        return None
    rows: dict[tuple[str, str], list[str]] = {}
    for hv in readers:
        origin = hv.origins.get((name,))
        if hv.secrets and any(p[:1] == (name,) for p in hv.secrets):
            shown = "<vaulted>"
        else:
            shown = _value(hv.values.get(name))
        if origin is None:
            where = "not set (the default applies)"
        elif _same(origin, path):
            where = "set here"
        else:
            where = f"overridden by {origin}"
        rows.setdefault((shown, where), []).append(hv.host)
    lines = [f"**{name}** on the {len(readers)} host{'s' if len(readers) != 1 else ''} that read this file:", ""]
    for (shown, where), on in sorted(rows.items(), key=lambda kv: (kv[0][1] != "set here", kv[0])):
        lines.append(f"- `{shown}` ({where}): {_names(sorted(on))}")
    return "\n".join(lines) + "\n"


_FACTS = (("heads", "attention heads"), ("kv_heads", "KV heads"), ("mla", "MLA"), ("ssm", "hybrid (SSM)"),
          ("sliding_window", "sliding window"))


def model_facts(instances: Sequence[Instance], readers: Sequence[HostVars]) -> str | None:
    """Markdown: the model facts of the instances on the hosts that read this file, each with where it came from."""
    hosts = {hv.host for hv in readers}
    by_model: dict[tuple[str | None, str], list[Instance]] = {}
    for inst in instances:
        if inst.host in hosts:
            by_model.setdefault((inst.model, inst.facts.source), []).append(inst)
    lines = []
    for (model, _unused), group in sorted(by_model.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        facts = group[0].facts
        where = dict(facts.where)
        lines += [f"**model facts** of `{model or '(vllm_model unset)'}` ({_names(sorted({i.host for i in group}))}):", ""]
        for attr, label in _FACTS:
            value = getattr(facts, attr)
            lines.append(f"- {label}: `{_value(value)}`" + (f" ({where[attr]})" if attr in where else ""))
        if not where:
            lines.append(f"- looked in: {'; '.join(facts.looked)}")
        lines.append("")
    from ..engine import redact  # a vaulted model (or a path naming it) never reaches the editor either

    return redact.mask_text("\n".join(lines), redact.secret_texts(readers)) if lines else None

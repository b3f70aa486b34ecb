"""Quick fixes from findings: set the value a hint names, or add the rule to pdlint_skip; edits keep the layout.

Every edit replaces only the characters of one scalar (or inserts one list item or line), so comments, quoting
and the rest of the file stay as written.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence

from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..load.preflight.layout import VARS_DIRS
from ..topology.types import Instance, Topology
from . import text as tx

# "use decode TP 4 or 8", "use TP 2, 4 or 8", "use kv_role: kv_consumer"
_TP_HINT = re.compile(r"^use (?:(prefill|decode) )?TP ((?:\d+, )*\d+(?: or \d+)?)\b")
_ROLE_HINT = re.compile(r"^use kv_role: (kv_producer|kv_consumer|kv_both)$")


@dataclasses.dataclass(frozen=True)
class Edit:
    """Replace [start, end) of a 0-based line (code point columns) with text."""

    line: int
    start: int
    end: int
    text: str


@dataclasses.dataclass(frozen=True)
class Action:
    title: str
    path: str  # absolute
    edits: tuple[Edit, ...]
    preferred: bool = False


def _targets(finding: Finding, topology: Topology, field: str, role: str | None) -> list[tuple[Origin, Instance]]:
    """Where field is written for the finding's instances of role (the finding's own location when role is None)."""
    named = set(finding.hosts)
    out: dict[Origin, Instance] = {}
    for inst in topology.instances:
        where = inst.origins.get(field)
        if inst.host not in named or where is None or not where.file or where.line is None:
            continue
        if (role is None and where == finding.origin) or (role is not None and inst.role == role):
            out.setdefault(where, inst)
    return list(out.items())


Read = Callable[[str], 'str | None']  # absolute path -> the editor's buffer, else the file's text, else None


def _set(origin: Origin, current: object, new: str, title: str, read: Read, preferred: bool) -> Action | None:
    """Replace the scalar at origin when it still reads `current` (else the buffer moved on: no action)."""
    path = os.path.abspath(origin.file)
    line = tx.line_of(read(path) or "", origin.line or 0)
    span = tx.token(line, origin.column or 1)
    if span is None:
        return None
    written = line[span[0]:span[1]]
    inner = tx.unquote(written)
    if inner != str(current):
        return None
    offset = 1 if inner != written else 0
    return Action(title, path, (Edit(origin.line - 1 if origin.line else 0, span[0] + offset, span[1] - offset, new),),
                  preferred)


def value_actions(finding: Finding, topology: Topology, read: Read) -> list[Action]:
    """"set vllm_tensor_parallel_size to 4" (one per hinted value) or "set kv_role to kv_consumer"."""
    hint = finding.hint or ""
    tp = _TP_HINT.match(hint)
    if tp:
        field, role, values = "tensor_parallel_size", tp.group(1), re.findall(r"\d+", tp.group(2))
        label = "vllm_tensor_parallel_size"
    else:
        role_hint = _ROLE_HINT.match(hint)
        if not role_hint:
            return []
        field, role, values, label = "kv_role", None, [role_hint.group(1)], "kv_role"
    targets = _targets(finding, topology, field, role)
    if len(targets) != 1:  # several places set it: which one to change is the user's call
        return []
    origin, inst = targets[0]
    current = inst.tp if field == "tensor_parallel_size" else inst.kv_role
    out = []
    for i, value in enumerate(values):
        where = "" if role is None else f" ({role})"
        action = _set(origin, current, value, f"set {label}{where} to {value}", read, i == 0)
        if action is not None:
            out.append(action)
    return out


def _vars_file(path: str) -> bool:
    return os.path.basename(os.path.dirname(os.path.abspath(path))) in VARS_DIRS and path.endswith((".yml", ".yaml"))


def skip_file(finding: Finding, hosts: Sequence[HostVars]) -> str | None:
    """The group_vars/host_vars file read by every host of the finding and by the fewest others, where a
    pdlint_skip entry reaches them all (none of them takes pdlint_skip from another file)."""
    concerned = [hv for hv in hosts if hv.host in set(finding.hosts)]
    if not concerned:
        return None
    files = [{os.path.abspath(o.file) for o in hv.origins.values() if o.file} for hv in concerned]
    common = sorted(p for p in set.intersection(*files) if _vars_file(p))
    reach = {p: sum(1 for hv in hosts if any(o.file and os.path.abspath(o.file) == p for o in hv.origins.values()))
             for p in common}
    for path in sorted(common, key=lambda p: (reach[p], os.path.basename(os.path.dirname(p)) != "host_vars", p)):
        owners = {os.path.abspath(o.file) for hv in concerned for k, o in hv.origins.items()
                  if k[:1] == ("pdlint_skip",) and o.file}
        if owners <= {path}:
            return path
    return None


_SKIP_KEY = re.compile(r"^pdlint_skip\s*:\s*(.*?)\s*(#.*)?$")


def skip_action(finding: Finding, hosts: Sequence[HostVars], read: Read) -> Action | None:
    """"suppress with pdlint_skip in group_vars/x.yml": one item added to the file's list, or the key appended."""
    path = skip_file(finding, hosts)
    text = None if path is None else read(path)
    if path is None or text is None:
        return None
    lines = text.splitlines()
    item = f'"{finding.rule}"'
    title = f"suppress {finding.rule} with pdlint_skip in {os.path.relpath(path)}"
    for n, line in enumerate(lines):
        found = _SKIP_KEY.match(line)
        if not found:
            continue
        flow = found.group(1)
        if flow.startswith("[") and flow.endswith("]"):
            close = line.index(flow) + len(flow) - 1
            sep = ", " if flow[1:-1].strip() else ""
            return Action(title, path, (Edit(n, close, close, f"{sep}{item}"),))
        if flow:
            return None  # a scalar or something else: not a list pdlint can extend in place
        last = n
        indent = None
        for m in range(n + 1, len(lines)):
            entry = re.match(r"^(\s*)- ", lines[m])
            if entry:
                indent, last = entry.group(1), m
            elif lines[m].strip() and not lines[m].lstrip().startswith("#"):
                break
        if indent is None:
            return None
        end = len(lines[last])
        return Action(title, path, (Edit(last, end, end, f"\n{indent}- {item}"),))
    if not lines or text.endswith("\n"):
        return Action(title, path, (Edit(len(lines), 0, 0, f"pdlint_skip: [{item}]\n"),))
    end = len(lines[-1])
    return Action(title, path, (Edit(len(lines) - 1, end, end, f"\npdlint_skip: [{item}]\n"),))

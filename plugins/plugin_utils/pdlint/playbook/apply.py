"""The playbook's launch lines in each host's variables: what will run, as the command line the rules already read.

For a host a play's role starts vLLM on, the engine is the rendered line and nothing else: the host's vLLM argument
variables (`vllm_tensor_parallel_size`, `vllm_env`, `vllm_args`, ...) are what the template may or may not pass, so
they give way to `vllm_args` (the line's words, each with the origin of the value that set it) and the unit's
environment. The contract's other variables (the deployment, the side, the release, the node) come from the same
scope with Ansible's precedence (variables.py), a play var over the inventory. Hosts no launch line reaches keep
their inventory reading.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..contract import VARIABLES
from ..finding import Finding, Origin
from ..load.errors import LoadError, load_error
from ..hostvars import KEY, HostVars, Path, Unresolved, is_relevant
from ..paths import display_path
from ..vllm import releases
from ..vllm.arguments.args import arguments
from . import patterns, render, unit
from .project import Launch, Play, PlaybookError, Project, Role, read
from .variables import Scope, magic, scope

ARGS = "vllm_args"
CONTRACT = tuple(f"vllm_{v.name}" for v in VARIABLES)
# what the launch line decides besides vLLM's arguments: pdlint's own spellings of the engine
_LINE_DECIDES = frozenset(("vllm_args", "vllm_env", "vllm_instances", "vllm_launcher"))


@dataclasses.dataclass(frozen=True)
class Applied:
    hosts: list[HostVars]
    findings: list[Finding]
    files: tuple[str, ...]  # the playbook's templates (absolute)


def names_read(project: Project) -> frozenset[str]:
    """The variables the launch templates and the plays' values read: the loaders keep them beside pdlint's."""
    found: set[str] = set()
    for launch in _all_launches(project):
        text = _text(launch.source)
        if text is not None:
            found |= render.names_read(text)
    for play in project.plays:
        for role in play.roles:
            for layer in (play.vars, *play.vars_files, role.defaults, role.vars, role.entry_vars, role.params):
                for value in layer.values():
                    if isinstance(value, str):
                        found |= render.names_read(value)
    return frozenset(found)


def _all_launches(project: Project) -> list[Launch]:
    return [launch for play in project.plays for role in play.roles for launch in role.launches]


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _decided_by_line(name: str, release: releases.Release) -> bool:
    return name in _LINE_DECIDES or (name.startswith("vllm_") and name[5:] in arguments(release))


def _launched(hv: HostVars, play: Play, role: Role, launch: Launch,
              groups: Mapping[str, list[str]]) -> tuple[HostVars, list[Finding]] | None:
    """hv as the launch task of role in play starts it, or None when the template starts no engine."""
    found = scope(hv, play, role)
    variables = {**found.values, **magic(hv, play, role, groups)}
    source = _text(launch.source)
    if source is None:
        return hv, [_unresolved(hv, launch.origin, f"template {launch.source} cannot be read")]
    rendered = render.render(launch.source, source, variables)
    if isinstance(rendered, Unresolved):
        why = _lacking(found, rendered.reason, source)
        return _with_line(hv, found, variables, None, launch.origin), [
            _unresolved(hv, launch.origin, f"the launch template {display_path(launch.source)} "
                        f"cannot be rendered statically ({why}); rules that need the engine's arguments are skipped")]
    try:
        line = unit.read(rendered, source, found.origins)
    except unit.Unreadable as exc:
        return hv, [Finding(exc.origin, "vllm-args[invalid]", "error",
                            f"ExecStart=: {exc}: systemd would not run this command line",
                            "close the quote, or drop the trailing backslash", (hv.host,))]
    if line is None:
        return None
    return _with_line(hv, found, variables, line, launch.origin), []


def _lacking(found: Scope, reason: str, source: str) -> str:
    """The reason, naming an inventory value the template reads that the loader could not render."""
    broken = sorted(n for n in render.names_read(source) if n in found.unresolved)
    if broken:
        return "; ".join(f"{n} cannot be rendered: {found.unresolved[n].reason}" for n in broken)
    return reason


def _with_line(hv: HostVars, found: Scope, variables: Mapping[str, Any], line: unit.Line | None,
               task: Origin) -> HostVars:
    release = releases.of_version(_plain(variables, "vllm_version"))
    values: dict[str, Any] = {}
    origins: dict[Path, Origin] = {}
    for name in found.values.keys() | found.unresolved.keys():
        if not is_relevant(name) or _decided_by_line(name, release):
            continue
        inventory = name in hv.values and found.origins.get(name) == hv.origin(name)
        if inventory:  # the loader's value and every origin inside it
            values[name] = hv.values[name]
            origins.update({p: o for p, o in hv.origins.items() if p[:1] == (name,)})
            continue
        values[name] = _plain(variables, name)
        origins[(name,)] = origins[(name, KEY)] = found.origins[name]
    if line is None:  # the engine's arguments are unknown, never vLLM's defaults: the rules that need them skip it
        for name in CONTRACT:
            if name[5:] in arguments(release) and name not in values:
                values[name] = Unresolved("the launch template cannot be rendered", reported=True)
                origins[(name,)] = task
    else:
        values[ARGS] = [w.text for w in line.words]
        origins[(ARGS,)] = origins[(ARGS, KEY)] = line.start
        origins.update({(ARGS, i): w.origin for i, w in enumerate(line.words)})
    notes = {} if line is None else _chain(line)
    return dataclasses.replace(hv, values=values, origins=origins, secrets=frozenset(), notes=notes)


def _chain(line: unit.Line) -> dict[Path, str]:
    """Where each value a variable gave the launch line came from: the template's line <- the variable <- where it
    was set (explain lists them)."""
    notes: dict[Path, str] = {}
    for index, word in enumerate(line.words):
        if word.variable is None:
            continue
        before = line.words[index - 1].text if index else ""
        shown = f"{before} {word.text}" if before.startswith("-") and "=" not in before else word.text
        notes[(ARGS, index)] = f"launch line `{shown}` ({word.via}) <- {word.variable} ({word.origin})"
    return notes


def _plain(variables: Mapping[str, Any], name: str) -> Any:
    """A variable's value as the task sees it (its templates rendered), or Unresolved."""
    if name not in variables:
        return None
    rendered = render.templar(variables).template(variables[name]) if isinstance(variables[name], str) \
        else variables[name]
    return _untagged(rendered)


def _untagged(value: Any) -> Any:
    """ansible-core's tagged values as plain Python (the rules compare types)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _untagged(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_untagged(v) for v in value]
    return value


def _unresolved(hv: HostVars, origin: Origin, message: str) -> Finding:
    return Finding(origin, "unresolved", "warning", message,
                   "define the variables the template reads, or set a literal value", (hv.host,))


def project_of(playbook: str) -> Project:
    """The playbook read statically; one that cannot be read is a LoadError naming the file and line (exit 2)."""
    try:
        return read(playbook)
    except PlaybookError as exc:
        raise LoadError(load_error(exc.origin, exc.message, "fix the playbook, or name another with --playbook")) \
            from None


def apply(hosts: Sequence[HostVars], project: Project) -> Applied:
    """The hosts with each launch line the playbook gives them."""
    select = patterns.matcher(hosts)
    groups: dict[str, list[str]] = {"all": sorted(hv.host for hv in hosts)}
    for hv in hosts:
        for group in hv.groups:
            groups.setdefault(group, []).append(hv.host)
    reached: dict[str, list[tuple[Play, Role, Launch]]] = {}
    for play in project.plays:
        chosen = select(play.hosts)
        for role in play.roles:
            for launch in role.launches:
                for name in chosen:
                    reached.setdefault(name, []).append((play, role, launch))
    out: list[HostVars] = []
    findings: list[Finding] = []
    for hv in hosts:
        done = None
        for play, role, launch in reached.get(hv.host, []):
            made = _launched(hv, play, role, launch, groups)
            if made is None:
                continue
            if done is not None:
                findings.append(_unresolved(hv, launch.origin, f"{hv.host} gets a second launch line here; pdlint "
                                            "reads the first one a host gets"))
                continue
            done = made
        out.append(hv if done is None else done[0])
        findings.extend(done[1] if done else [])
    return Applied(out, _merged(findings), project.templates)


def _merged(findings: list[Finding]) -> list[Finding]:
    """One finding per place and message: the same template line seen from many hosts is one problem."""
    hosts: dict[Finding, set[str]] = {}
    for f in findings:
        hosts.setdefault(dataclasses.replace(f, hosts=()), set()).update(f.hosts)
    return [dataclasses.replace(f, hosts=tuple(sorted(h))) for f, h in hosts.items()]

"""The playbook's launch lines in each host's variables: what will run, as the command line the rules already read.

Each play's hosts (patterns.py) get the engines its roles' launch tasks start (engines.py): one engine is the host's
own variables, several (two roles, a loop, one role twice with other params) its vllm_instances. Hosts no launch line
reaches keep their inventory reading.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..finding import Finding, Origin
from ..hostvars import INSTANCES, KEY, HostVars, Path, Unresolved, in_item
from ..load.errors import LoadError, load_error
from ..load.notes.pd_look import takes_part
from ..paths import display_path
from . import patterns, render
from .engines import ARGS, Engine, read_text, started, strings
from .project import Launch, Play, PlaybookError, Project, Role, read


@dataclasses.dataclass(frozen=True)
class Applied:
    hosts: list[HostVars]
    findings: list[Finding]
    files: tuple[str, ...]  # the playbook's templates (absolute)


def names_read(project: Project) -> frozenset[str]:
    """The variables the launch templates and the plays' values read: the loaders keep them beside pdlint's."""
    found: set[str] = set()
    for launch in _all_launches(project):
        text = read_text(launch.source) if launch.module == "template" else None  # a copy's src: is not templated
        if text is not None:
            found |= render.names_read(text)
        for value in strings((launch.args, launch.dest, launch.loop)):
            found |= render.names_read(value)
    for play in project.plays:
        for role in play.roles:
            for layer in (play.vars, *play.vars_files, role.defaults, role.vars, role.entry_vars, role.params):
                for value in layer.values():
                    if isinstance(value, str):
                        found |= render.names_read(value)
    return frozenset(found)


def _all_launches(project: Project) -> list[Launch]:
    return [launch for play in project.plays for role in play.roles for launch in role.launches]


def project_of(playbook: str) -> Project:
    """The playbook read statically; one that cannot be read is a LoadError naming the file and line (exit 2)."""
    try:
        return read(playbook)
    except PlaybookError as exc:
        raise LoadError(load_error(exc.origin, exc.message, "fix the playbook, or name another with --playbook")) \
            from None


def apply(hosts: Sequence[HostVars], project: Project, allow_lookups: bool = False) -> Applied:
    """The hosts with each launch line the playbook gives them; allow_lookups: the plays' and templates' lookups
    are rendered (--allow-lookups), else they are refused (unresolved)."""
    with render.lookups(allow_lookups):
        return _apply(hosts, project)


def _apply(hosts: Sequence[HostVars], project: Project) -> Applied:
    select = patterns.matcher(hosts)
    groups: dict[str, list[str]] = {"all": sorted(hv.host for hv in hosts)}
    for hv in hosts:
        for group in hv.groups:
            groups.setdefault(group, []).append(hv.host)
    reached: dict[str, list[tuple[Play, Role, Launch]]] = {}
    findings: list[Finding] = []
    targeted: set[str] = set()
    for play in project.plays:
        if patterns.ordered(play.hosts):
            findings.append(Finding(play.origin, "unresolved", "warning", f"hosts: {play.hosts} selects hosts by "
                                    "their order in the inventory, which pdlint does not model: the play is not read",
                                    "name the hosts or groups the play runs on", ()))
            continue
        chosen = select(play.hosts)
        targeted |= chosen
        for role in play.roles:
            for launch in role.launches:
                for name in chosen:
                    reached.setdefault(name, []).append((play, role, launch))
    out: list[HostVars] = []
    for hv in hosts:
        by_file: dict[str, Engine] = {}  # a later task writing the same unit file replaces it: that one runs
        for play, role, launch in reached.get(hv.host, []):
            made, problems = started(hv, play, role, launch, groups)
            findings += problems
            for engine in made:
                by_file.pop(engine.dest, None)
                by_file[engine.dest] = engine
        out.append(_host(hv, list(by_file.values())) if by_file else hv)
    silent = sorted(hv.host for hv, done in zip(hosts, out) if done is hv and hv.host in targeted and takes_part(hv))
    if silent:  # never a silent pass: the inventory's reading stands for them, and the user should know
        findings.append(Finding(Origin(display_path(project.playbook)), "unresolved", "warning",
                                f"the playbook's plays run on {len(silent)} P/D host(s) but start vLLM on none of "
                                "them in a way pdlint reads: their inventory variables are checked instead",
                                "pdlint reads a role task's template or copy of a systemd unit (ExecStart=), a "
                                "shell script or a compose file, docker_container/podman_container command:, and "
                                "command/shell tasks",
                                tuple(silent)))
    return Applied(out, _merged(findings), project.templates)


def _host(hv: HostVars, engines: list[Engine]) -> HostVars:
    """hv running engines: one is the host's own variables; several are its vllm_instances, each item what differs
    from the first engine's variables (the host's), under the item's names (no vllm_ prefix)."""
    first = engines[0]
    if len(engines) == 1:
        return dataclasses.replace(hv, values=dict(first.values), origins=dict(first.origins), secrets=first.secrets,
                                   notes=dict(first.notes))
    shared = {k: v for k, v in first.values.items() if k != ARGS and not isinstance(v, Unresolved)
              and all(e.values.get(k) == v for e in engines)}
    values: dict[str, Any] = dict(shared)
    origins: dict[Path, Origin] = {p: o for p, o in first.origins.items() if p[0] in shared}
    notes: dict[Path, str] = {}
    secrets: set[Path] = {p for p in first.secrets if p[0] in shared}
    items: list[dict[str, Any]] = []
    for index, engine in enumerate(engines):
        item = {k[5:]: v for k, v in engine.values.items() if k not in shared}
        items.append(item)
        at: Path = (INSTANCES, index)
        origins[at] = engine.origins.get((ARGS,), Origin())
        for path, origin in engine.origins.items():
            if path[0] not in shared and isinstance(path[0], str):
                origins[in_item(index, path)] = origin
        notes.update({in_item(index, p): n for p, n in engine.notes.items()})
        secrets |= {in_item(index, p) for p in engine.secrets if p[0] not in shared}
    values[INSTANCES] = items
    origins[(INSTANCES,)] = origins[(INSTANCES, KEY)] = origins[(INSTANCES, 0)]
    return dataclasses.replace(hv, values=values, origins=origins, secrets=frozenset(secrets), notes=notes)


def _merged(findings: list[Finding]) -> list[Finding]:
    """One finding per place and message: the same template line seen from many hosts is one problem."""
    hosts: dict[Finding, set[str]] = {}
    for f in findings:
        hosts.setdefault(dataclasses.replace(f, hosts=()), set()).update(f.hosts)
    return [dataclasses.replace(f, hosts=tuple(sorted(h))) for f, h in hosts.items()]

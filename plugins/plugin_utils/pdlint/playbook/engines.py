"""The engines one launch task starts on one host: its template rendered with the host's variables in that task's
scope, once per `loop:` item, each engine the contract's variables with the rendered line as `vllm_args`.

The line is the engine: the scope's vLLM argument variables (`vllm_tensor_parallel_size`, `vllm_env`, ...) are what
the template may or may not pass, so only the line's words say them; the contract's other variables (the deployment,
the side, the release, the node) come from the same scope with Ansible's precedence, a play var over the inventory.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..contract import VARIABLES
from ..finding import Finding, Origin
from ..hostvars import KEY, HostVars, Path, Unresolved, is_relevant
from ..paths import display_path
from ..vllm import releases
from ..vllm.arguments.args import arguments
from . import conditions, render, task_line, unit, written
from .project import Launch, Play, Role
from .variables import Scope, magic, scope

ARGS = "vllm_args"
CONTRACT = tuple(f"vllm_{v.name}" for v in VARIABLES)
# what the launch line decides besides vLLM's arguments: pdlint's own spellings of the engine
_LINE_DECIDES = frozenset(("vllm_args", "vllm_env", "vllm_instances", "vllm_launcher"))


@dataclasses.dataclass(frozen=True)
class Engine:
    """One engine: its contract variables (vllm_* names), their origins, where its values came from, and the file
    its unit is written to (a second task writing the same file replaces it)."""

    values: Mapping[str, Any]
    origins: Mapping[Path, Origin]
    notes: Mapping[Path, str]
    dest: str
    secrets: frozenset[Path] = frozenset()  # vault-decrypted values, and a line that reads one: never printed


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def unresolved(hv: HostVars, origin: Origin, message: str) -> Finding:
    return Finding(origin, "unresolved", "warning", message,
                   "define the variables the template reads, or set a literal value", (hv.host,))


def started(hv: HostVars, play: Play, role: Role, launch: Launch,
            groups: Mapping[str, list[str]]) -> tuple[list[Engine], list[Finding]]:
    """The engines launch starts on hv (none: its template writes no ExecStart=), and what stood in the way."""
    found = scope(hv, play, role)
    variables = {**found.values, **magic(hv, play, role, groups)}
    source = read_text(launch.source)
    if source is None and launch.module == "copy":
        return [], []  # a copy of a file not in the role's files/, or not text: no launch pdlint reads
    if source is None:
        return [], [unresolved(hv, launch.origin, f"template {display_path(launch.source)} cannot be read")]
    items: list[Any] = [None]
    if launch.loop is not None:
        looped = plain(variables, launch.loop)
        if not isinstance(looped, list):
            why = looped.reason if isinstance(looped, Unresolved) else f"it is a {type(looped).__name__}"
            return [], [unresolved(hv, launch.origin, f"the launch task's loop cannot be rendered statically ({why}); "
                                   "its engines are not checked")]
        items = looped
    registered = play.registered.union(*(r.registered for r in play.roles))
    problems: list[Finding] = []
    decided = conditions.decide(role.when, variables, registered)
    if decided is False:
        return [], []
    if isinstance(decided, conditions.Undecided):
        problems.append(_undecided(hv, decided, role.origin, f"role {role.name}"))
    engines: list[Engine] = []
    vaulted = {p[0] for p in hv.secrets}
    reads = render.names_read(source) if launch.module == "template" else frozenset(
        n for text in strings(launch.args) for n in render.names_read(text))
    for index, item in enumerate(items):
        here = variables if launch.loop is None else {**variables, launch.loop_var: item}
        ran = conditions.decide((launch.when,), here, registered)
        if ran is False:
            continue
        if isinstance(ran, conditions.Undecided):
            problems.append(_undecided(hv, ran, launch.origin, "the launch task"))
        dest = plain(here, launch.dest)
        where = dest if isinstance(dest, str) else f"{launch.origin}#{index}"
        made, more = _one(hv, found, here, launch, source, where)
        problems += more
        for engine in made:
            kept = {p for p in hv.secrets if p[0] in engine.values and engine.origins.get(p[:1]) == hv.origin(p[0])}
            line = {(ARGS,)} if reads & vaulted and ARGS in engine.values else set()
            engines.append(dataclasses.replace(engine, secrets=frozenset(kept | line)))
    return engines, problems


def _undecided(hv: HostVars, found: conditions.Undecided, origin: Origin, what: str) -> Finding:
    return Finding(found.origin or origin, "unresolved", "warning",
                   f"the `when: {found.condition}` of {what} is not decided statically ({found.reason}): pdlint "
                   "takes it as run", "decide it from inventory or play variables, or check this host as it runs",
                   (hv.host,))


def strings(value: Any) -> list[str]:
    """Every string inside value (a task's arguments)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in strings(item)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in strings(item)]
    return []


def _one(hv: HostVars, found: Scope, variables: Mapping[str, Any], launch: Launch, source: str,
         dest: str) -> tuple[list[Engine], list[Finding]]:
    if launch.module not in ("template", "copy"):
        engine, more = _task(hv, found, variables, launch, dest)
        return [] if engine is None else [engine], more
    try:
        got = written.read(launch, source, variables, found.origins, dest)
    except unit.Unreadable as exc:
        what = "ExecStart=" if exc.kind == "unit" else display_path(launch.source)
        runs = "systemd" if what == "ExecStart=" else "a shell"
        return [_engine(hv, found, variables, None, launch.origin, dest)], [
            Finding(exc.origin, "vllm-args[invalid]", "error", f"{what}: {exc}: {runs} would not run this "
                    "command line", "close the quote, or drop the trailing backslash", (hv.host,))]
    if isinstance(got, written.Unrendered):
        why = _lacking(found, got.reason, source) if launch.module == "template" else got.reason
        what = f"the launch template {display_path(launch.source)}" if launch.module == "template" else \
            "the copy task's content" if isinstance(launch.args, str) else f"the copied file {display_path(launch.source)}"
        return [_engine(hv, found, variables, None, launch.origin, dest)], [
            unresolved(hv, launch.origin, f"{what} cannot be rendered statically ({why}); rules that need the "
                       "engine's arguments are skipped")]
    if got.unread is not None:
        shown = {"compose": "compose file", "script": "launch script"}[got.kind]
        return [_engine(hv, found, variables, None, launch.origin, dest)], [
            unresolved(hv, launch.origin, f"the {shown} {dest} cannot be read statically ({got.unread.reason}); "
                       "rules that need the engine's arguments are skipped")]
    engines: list[Engine] = []
    notes: list[Finding] = []
    for name, line in got.lines:
        engines.append(_engine(hv, found, variables, line, launch.origin, f"{dest}#{name}" if name else dest))
        notes += [unresolved(hv, origin, message) for origin, message in line.unmodelled]
    return engines, notes


def _task(hv: HostVars, found: Scope, variables: Mapping[str, Any], launch: Launch,
          dest: str) -> tuple[Engine | None, list[Finding]]:
    """A container's or a command task's own line."""
    try:
        line = task_line.read(launch, variables, found.origins)
    except unit.Unreadable as exc:
        return _engine(hv, found, variables, None, launch.origin, dest), [
            Finding(exc.origin, "vllm-args[invalid]", "error", f"{launch.module}: {exc}: a shell would not run this "
                    "command line", "close the quote, or drop the trailing backslash", (hv.host,))]
    if isinstance(line, Unresolved):
        return _engine(hv, found, variables, None, launch.origin, dest), [
            unresolved(hv, launch.origin, f"the {launch.module} task's launch line cannot be rendered statically "
                       f"({line.reason}); rules that need the engine's arguments are skipped")]
    if line is None:
        return None, []
    return _engine(hv, found, variables, line, launch.origin, dest), []


def _lacking(found: Scope, reason: str, source: str) -> str:
    """The reason, naming an inventory value the template reads that the loader could not render."""
    broken = sorted(n for n in render.names_read(source) if n in found.unresolved)
    if broken:
        return "; ".join(f"{n} cannot be rendered: {found.unresolved[n].reason}" for n in broken)
    return reason


def _decided_by_line(name: str, release: releases.Release) -> bool:
    return name in _LINE_DECIDES or (name.startswith("vllm_") and name[5:] in arguments(release))


def _engine(hv: HostVars, found: Scope, variables: Mapping[str, Any], line: unit.Line | None, task: Origin,
            dest: str) -> Engine:
    release = releases.of_version(plain(variables, variables.get("vllm_version")))
    values: dict[str, Any] = {}
    origins: dict[Path, Origin] = {}
    for name in found.values.keys() | found.unresolved.keys():
        if not is_relevant(name) or _decided_by_line(name, release):
            continue
        if name in hv.values and found.origins.get(name) == hv.origin(name):  # the loader's value, its inner origins
            values[name] = hv.values[name]
            origins.update({p: o for p, o in hv.origins.items() if p[:1] == (name,)})
            continue
        values[name] = plain(variables, variables[name])
        origins[(name,)] = origins[(name, KEY)] = found.origins[name]
    if line is None:  # the engine's arguments are unknown, never vLLM's defaults: the rules that need them skip it
        for name in CONTRACT:
            if name[5:] in arguments(release) and name not in values:
                values[name] = Unresolved("the launch template cannot be rendered", reported=True)
                origins[(name,)] = task
        return Engine(values, origins, {}, dest)
    values[ARGS] = [w.text for w in line.words]
    origins[(ARGS,)] = origins[(ARGS, KEY)] = line.start
    origins.update({(ARGS, i): w.origin for i, w in enumerate(line.words)})
    return Engine(values, origins, _chain(line), dest)


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


def plain(variables: Mapping[str, Any], value: Any) -> Any:
    """value as the task sees it (its templates rendered over variables, ansible-core's tags dropped), or
    Unresolved."""
    if isinstance(value, str):
        try:
            value = render.templar(variables).template(value)
        except Exception as exc:  # noqa: BLE001 - a value that fails to render is data, never a crash
            from ..load.reference.errors import message_of

            return Unresolved(message_of(exc))
    return _untagged(value)


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

"""A run after an edit: check again only the units (units.py) whose hosts read an edited vars file.

A whole run whose hosts the fast loader read alone leaves, beside its outcome (cache/runs.py), a state: every
file's stat fingerprint as that run saw it, its parsed inventory, its notes by what they came from, and for
each unit its hosts, the keys linking them, its findings before pdlint_skip and config apply, its pdlint_skip
entries and role conflicts. The next run with the same slot (inventory, settings, environment, pdlint code)
compares fingerprints. When only group_vars/host_vars files changed (no file added, removed or renamed, no
inventory file changed), it reads those files again with the same preflight, loads the hosts of the units
they touch from the kept inventory, checks them, and puts their findings with every other unit's kept ones
through the same merge, pdlint_skip and config steps as a whole run. Anything else (a file that is not one
entity's, group_vars/all, a template, a vault, an edit that links a unit to another, half the hosts touched)
and the whole run is done instead, so the outcome is the whole run's, byte for byte: tests/cache/test_incremental.py's
random edits compare the two.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import configuration
from ..config.configuration import Config
from ..engine import suppress
from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..load import errors, preflight
from ..load.preflight import guard
from ..load.fast import inventory as fast_model
from ..load.fast import loader as fast
from ..load.preflight.layout import absolute_sources
from . import runs, store, units
from .outcome import watch

_VERSION = 2


def _rows(findings: Sequence[Finding]) -> list[tuple[Any, ...]]:
    return [store.row(f) for f in findings]


def _findings(rows: Sequence[Any]) -> list[Finding]:
    return [store.finding(r) for r in rows]


def _mark_rows(marks: Sequence[suppress.Entry]) -> list[tuple[Any, ...]]:
    return [(str(m.host), str(m.name), str(m.origin.file), m.origin.line, m.origin.column) for m in marks]


def _marks(rows: Sequence[Any]) -> list[suppress.Entry]:
    return [suppress.Entry(host, name, Origin(file, line, column)) for host, name, file, line, column in rows]


def _assumed(instances: Any) -> set[str]:
    """Hosts with an instance that sets no vllm_version."""
    return {i.host for i in instances if "version" not in i.origins}


def _unit_rows(parts: list[tuple[tuple[str, ...], frozenset[units.Key]]], found: Sequence[Finding],
               hosts: Sequence[HostVars], roles: dict[str, list[Finding]], topology: Any) -> list[Any] | None:
    """Each unit as the state keeps it: hosts, keys, findings, pdlint_skip entries, role conflicts, whether one
    of its instances assumed the newest vllm release; None when a finding concerns no host."""
    unit_of = {h: i for i, (members, _unused) in enumerate(parts) for h in members}
    by_unit = units.split(found, unit_of)
    if by_unit is None:
        return None
    marks: dict[int, list[suppress.Entry]] = {}
    for m in suppress.entries(hosts):
        marks.setdefault(unit_of[m.host], []).append(m)
    assumed = _assumed(topology.instances)
    return [(list(members), sorted(keys), _rows(by_unit.get(i, [])), _mark_rows(marks.get(i, [])),
             _rows([f for h in members for f in roles.get(h, [])]), any(h in assumed for h in members))
            for i, (members, keys) in enumerate(parts)]


def state(kept: fast.Kept, hosts: Sequence[HostVars], found: Sequence[Finding], topology: Any,
          watched: Sequence[Any] = ()) -> Any:
    """What a run after an edit needs of this whole run; None when it cannot be reused (see the module doc)."""
    from ..engine import redact

    if kept.inventory is None or redact.secret_texts(hosts):
        return None
    rows = _unit_rows(units.partition([hv.host for hv in hosts], topology), found, hosts, kept.roles, topology)
    if rows is None:
        return None
    return (_VERSION, fast_model.dump(kept.inventory), _rows(kept.structure),
            {path: _rows(fs) for path, fs in kept.by_file.items()}, list(kept.inventory_files), rows,
            [list(w) for w in watched])


class _Stale(Exception):
    """The kept state cannot answer this run: do the whole run."""


def outcome(e: runs.Entry | None, sources: list[str], config: Config, limits: guard.Limits,
            files: Any = None) -> runs.Outcome | None:
    """The outcome of checking sources again after an edit, from the last run's state; None: do a whole run."""
    if e is None:
        return None
    kept = store.read(runs.units_key(e), runs.units_folder())
    try:
        return _outcome(e, kept, sources, config, limits, files)
    except (_Stale, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None  # also a state that is not what _outcome expects: never trusted


def _changed(e: runs.Entry, kept: Any) -> tuple[list[str], Any]:
    paths, stats, racy, data = kept
    if paths != store.name(tuple(path for path, *_unused in e.files)) or len(stats) != len(e.files):
        raise _Stale  # a file added, removed or renamed
    # a file modified just before that run may have changed since without changing its stat (racily clean)
    racy = {path for path, digest in racy if runs.digest_of(path) != digest}
    changed = [new[0] for old, new in zip(stats, e.files) if tuple(old) != new[1:] or new[0] in racy]
    if not changed or data[0] != _VERSION:
        raise _Stale
    return changed, data


def _outcome(e: runs.Entry, kept: Any, sources: list[str], config: Config, limits: guard.Limits,
             files: Any) -> runs.Outcome:
    if not isinstance(kept, tuple) or len(kept) != 4:
        raise _Stale
    changed, (_unused, inventory, structure, by_file, inventory_files, rows, watched) = _changed(e, kept)
    if not runs.unchanged(watched):
        raise _Stale  # a model's config.json changed (or appeared): every unit may see other facts
    edited = set(changed)
    if edited & set(inventory_files):
        raise _Stale  # an inventory file changed
    sources = absolute_sources(sources)
    inv = fast_model.restore(inventory)
    touched: set[str] = set()
    for path in changed:
        readers = fast.read_by(inv, sources, path)
        if readers is None:
            raise _Stale
        touched.update(readers)
    unit_of = {h: i for i, row in enumerate(rows) for h in row[0]}
    redo = sorted({unit_of[h] for h in touched})
    names = [h for i in redo for h in rows[i][0]]
    if 2 * len(names) > len(unit_of):
        raise _Stale  # most hosts: the whole run is as quick
    try:
        checked = preflight.check_files(changed, limits)
        hosts, roles = fast.load_hosts(sources, inv, checked, names)
    except (guard.Refused, errors.LoadError, fast.Unsupported):
        raise _Stale from None  # the whole run says it as it always does
    from ..engine import core as engine
    from ..engine import redact

    if checked.encrypted or redact.secret_texts(hosts):
        raise _Stale
    result = engine.lint(hosts, config, files)
    parts = units.partition(names, result.topology)
    again = set(redo)
    others = [i for i in range(len(rows)) if i not in again]
    linked = {tuple(k) for i in others for k in rows[i][1]}
    if any(k in linked for _unused, keys in parts for k in keys):
        raise _Stale  # the edit links these hosts to a unit it did not touch
    fresh = _unit_rows(parts, result.found, hosts, roles, result.topology)
    if fresh is None:
        raise _Stale
    all_rows = [rows[i] for i in others] + fresh
    all_rows.sort(key=lambda row: row[0][0])
    found = engine.merge(f for row in all_rows for f in _findings(row[2]))
    kept, suppressed = engine.finish(found, [m for row in all_rows for m in _marks(row[3])], set(), config)
    by_name = {path: fs for path, fs in by_file.items() if path not in edited}
    by_name.update({path: _rows(fs) for path, fs in checked.by_file.items()})
    notes = _findings(structure) + [f for path in by_name for f in _findings(by_name[path])]
    notes += [f for row in all_rows for f in _findings(row[4])]
    deployments = sum(1 for row in all_rows for k in row[1] if k[0] == "deployment")
    if not deployments:
        raise _Stale  # perhaps no host takes part any more: only a whole run says so (load/notes/pd_look.py)
    watched = [*watched, *(list(w) for w in watch([p for p in result.model_files
                                                   if p not in {w[0] for w in watched}]))]
    return runs.Outcome(configuration.with_notes(notes, kept, config), suppressed, len(unit_of), deployments,
                        any(row[5] for row in all_rows), [], tuple(tuple(w) for w in watched),
                        state=(_VERSION, inventory, structure, by_name, inventory_files, all_rows, watched))

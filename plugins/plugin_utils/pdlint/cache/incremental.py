"""A run after an edit: check again only the units (units.py) whose hosts read an edited vars file.

A whole run whose hosts the fast loader read alone leaves, beside its outcome (cache/runs.py), a State: every
file's stat fingerprint as that run saw it, its parsed inventory, its notes by what they came from, and for
each unit its hosts, the keys linking them, its findings before pdlint_skip and config apply, its pdlint_skip
entries and role conflicts. The next run with the same slot (inventory, settings, environment, pdlint code)
compares fingerprints. When only group_vars/host_vars files changed (no file added, removed or renamed, no
inventory file changed), it reads those files again with the same preflight, loads the hosts of the units
they touch from the kept inventory, checks them, and puts their findings with every other unit's kept ones
through the same merge, pdlint_skip and config steps as a whole run. Anything else (a file that is not one
entity's, group_vars/all, a template, a vault, an edit that links a unit to another, half the hosts touched)
and the whole run is done instead, so the outcome is the whole run's, byte for byte: tests/cache/test_incremental.py's
random edits compare the two. The language server keeps its State in memory and asks again() the same way
(lsp/inventory.py), with the editor's buffers in place of the files.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..config import configuration
from ..config.configuration import Config
from ..engine import suppress
from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..load import errors, preflight
from ..load.fast import inventory as fast_model
from ..load.fast import loader as fast
from ..load.preflight import guard
from ..load.preflight.layout import absolute_sources
from . import runs, store, units
from .outcome import unchanged, watch

if TYPE_CHECKING:
    from ..engine.core import Result

_VERSION = 2


def _rows(findings: Sequence[Finding]) -> list[tuple[Any, ...]]:
    return [store.row(f) for f in findings]


def _findings(rows: Sequence[Any]) -> tuple[Finding, ...]:
    return tuple(store.finding(r) for r in rows)


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit of the last run: its hosts (sorted), the keys linking them, its findings before pdlint_skip and
    config, its pdlint_skip entries, its hosts' role conflicts, whether one of its instances assumed the newest
    vllm release."""

    hosts: tuple[str, ...]
    keys: tuple[units.Key, ...]
    found: tuple[Finding, ...]
    marks: tuple[suppress.Entry, ...]
    roles: tuple[Finding, ...]
    assumed: bool

    def data(self) -> tuple[Any, ...]:
        return (list(self.hosts), [list(k) for k in self.keys], _rows(self.found),
                [(str(m.host), str(m.name), str(m.origin.file), m.origin.line, m.origin.column) for m in self.marks],
                _rows(self.roles), self.assumed)

    @classmethod
    def of(cls, data: Any) -> Unit:
        """The unit data() gave (raises ValueError, TypeError on anything else)."""
        hosts, keys, found, marks, roles, assumed = data
        return cls(tuple(str(h) for h in hosts), tuple((str(a), str(b)) for a, b in keys), _findings(found),
                   tuple(suppress.Entry(host, name, Origin(file, line, column)) for host, name, file, line, column
                         in marks), _findings(roles), bool(assumed))


@dataclasses.dataclass(frozen=True)
class State:
    """What a run after an edit needs of the last run (stored as data() under runs.units_key)."""

    inventory: tuple[Any, ...]  # fast_model.dump() of the parsed inventory
    structure: tuple[Finding, ...]  # the notes that depend only on the inventory files
    by_file: dict[str, tuple[Finding, ...]]  # the preflight's notes, by vars file
    inventory_files: tuple[str, ...]
    units: tuple[Unit, ...]
    watched: tuple[tuple[Any, ...], ...]  # stamp() of each model file the findings depend on

    def data(self) -> tuple[Any, ...]:
        return (_VERSION, self.inventory, _rows(self.structure), {p: _rows(fs) for p, fs in self.by_file.items()},
                list(self.inventory_files), [u.data() for u in self.units], [list(w) for w in self.watched])

    @classmethod
    def of(cls, data: Any) -> State:
        """The state data() gave; _Stale for another version or shape, as damaged or foreign data is."""
        try:
            version, inventory, structure, by_file, inventory_files, rows, watched = data
            if version != _VERSION or not isinstance(inventory, tuple):
                raise _Stale
            return cls(inventory, _findings(structure), {str(p): _findings(fs) for p, fs in by_file.items()},
                       tuple(str(p) for p in inventory_files), tuple(Unit.of(r) for r in rows),
                       tuple(tuple(w) for w in watched))
        except (TypeError, ValueError, AttributeError):  # AttributeError: by_file not a dict
            raise _Stale from None


def _units(parts: list[tuple[tuple[str, ...], frozenset[units.Key]]], found: Sequence[Finding],
           hosts: Sequence[HostVars], roles: dict[str, list[Finding]], topology: Any) -> list[Unit] | None:
    """Each unit as the state keeps it; None when a finding concerns no host."""
    unit_of = {h: i for i, (members, _unused) in enumerate(parts) for h in members}
    by_unit = units.split(found, unit_of)
    if by_unit is None:
        return None
    marks: dict[int, list[suppress.Entry]] = {}
    for m in suppress.entries(hosts):
        marks.setdefault(unit_of[m.host], []).append(m)
    assumed = {i.host for i in topology.instances if "version" not in i.origins}  # no vllm_version set
    return [Unit(tuple(members), tuple(sorted(keys)), tuple(by_unit.get(i, [])), tuple(marks.get(i, [])),
                 tuple(f for h in members for f in roles.get(h, [])), any(h in assumed for h in members))
            for i, (members, keys) in enumerate(parts)]


def state(kept: fast.Kept, hosts: Sequence[HostVars], found: Sequence[Finding], topology: Any,
          watched: Sequence[Any] = ()) -> State | None:
    """What a run after an edit needs of this whole run; None when it cannot be reused (see the module doc)."""
    from ..engine import redact

    if kept.inventory is None or redact.secret_texts(hosts):
        return None
    found_units = _units(units.partition([hv.host for hv in hosts], topology), found, hosts, kept.roles, topology)
    if found_units is None:
        return None
    return State(fast_model.dump(kept.inventory), tuple(kept.structure),
                 {path: tuple(fs) for path, fs in kept.by_file.items()}, tuple(kept.inventory_files),
                 tuple(found_units), tuple(tuple(w) for w in watched))


class _Stale(Exception):
    """The kept state cannot answer this run: do the whole run."""


Stale = _Stale  # what again() raises, for the language server


@dataclasses.dataclass(frozen=True)
class Again:
    """A check after an edit: the whole run's findings, and what was checked again to get them."""

    findings: list[Finding]  # notes, then the findings kept after pdlint_skip and config
    suppressed: list[Finding]
    state: State  # for the next edit
    hosts: list[HostVars]  # the hosts loaded and checked again, by name
    result: Result  # their check
    hosts_total: int
    deployments: int
    assumed: bool


def read_by(inv: fast_model.Inventory, sources: Sequence[str], changed: Sequence[str]) -> set[str] | None:
    """The hosts that read the changed vars files (None: one is no entity's, or all's)."""
    touched: set[str] = set()
    for path in changed:
        readers = fast.read_by(inv, sources, path)
        if readers is None:
            return None
        touched.update(readers)
    return touched


def outcome(e: runs.Entry | None, sources: list[str], config: Config, limits: guard.Limits,
            files: Any = None) -> runs.Outcome | None:
    """The outcome of checking sources again after an edit, from the last run's state; None: do a whole run."""
    if e is None:
        return None
    kept = store.read(runs.units_key(e), runs.units_folder())
    try:
        return _outcome(e, kept, sources, config, limits, files)
    except _Stale:
        return None


def _changed(e: runs.Entry, kept: Any) -> tuple[list[str], State]:
    if not isinstance(kept, tuple) or len(kept) != 4:
        raise _Stale
    paths, stats, racy, data = kept
    try:
        if paths != store.name(tuple(path for path, *_unused in e.files)) or len(stats) != len(e.files):
            raise _Stale  # a file added, removed or renamed
        # a file modified just before that run may have changed since without changing its stat (racily clean)
        racy = {path for path, digest in racy if runs.digest_of(path) != digest}
        changed = [new[0] for old, new in zip(stats, e.files) if tuple(old) != new[1:] or new[0] in racy]
    except (TypeError, ValueError):
        raise _Stale from None
    if not changed:
        raise _Stale
    return changed, State.of(data)


def _outcome(e: runs.Entry, kept: Any, sources: list[str], config: Config, limits: guard.Limits,
             files: Any) -> runs.Outcome:
    changed, last = _changed(e, kept)
    done = again(last, changed, sources, config, limits, files)
    watched = done.state.watched
    return runs.Outcome(done.findings, done.suppressed, done.hosts_total, done.deployments, done.assumed, [],
                        watched, state=done.state)


def again(last: State, changed: Sequence[str], sources: Sequence[str], config: Config, limits: guard.Limits,
          files: Any, overlay: Mapping[str, str] | None = None) -> Again:
    """Check again the units whose hosts read the changed vars files (overlay: texts read in place of files).
    Raises _Stale where only a whole run can say what it says."""
    if not unchanged(last.watched):
        raise _Stale  # a model's config.json changed (or appeared): every unit may see other facts
    edited = set(changed)
    if edited & set(last.inventory_files):
        raise _Stale  # an inventory file changed
    sources = absolute_sources(sources)
    try:
        inv = fast_model.restore(last.inventory)
    except (TypeError, ValueError):
        raise _Stale from None
    unit_of = {h: i for i, unit in enumerate(last.units) for h in unit.hosts}
    if not unit_of.keys() <= inv.hosts.keys():
        raise _Stale  # a unit names a host the inventory does not have
    touched = read_by(inv, sources, changed)
    if touched is None or not unit_of.keys() >= touched:
        raise _Stale
    redo = sorted({unit_of[h] for h in touched})
    names = [h for i in redo for h in last.units[i].hosts]
    if 2 * len(names) > len(unit_of):
        raise _Stale  # most hosts: the whole run is as quick
    try:
        checked = preflight.check_files(changed, limits, overlay)
        hosts, roles = fast.load_hosts(sources, inv, checked, names)
    except (guard.Refused, errors.LoadError, fast.Unsupported):
        raise _Stale from None  # the whole run says it as it always does
    from ..engine import core as engine
    from ..engine import redact

    if checked.encrypted or redact.secret_texts(hosts):
        raise _Stale
    result = engine.lint(hosts, config, files, overlay)
    parts = units.partition(names, result.topology)
    again_ = set(redo)
    others = [u for i, u in enumerate(last.units) if i not in again_]
    linked = {k for u in others for k in u.keys}
    if any(k in linked for _unused, keys in parts for k in keys):
        raise _Stale  # the edit links these hosts to a unit it did not touch
    fresh = _units(parts, result.found, hosts, roles, result.topology)
    if fresh is None:
        raise _Stale
    all_units = sorted([*others, *fresh], key=lambda u: u.hosts[0])
    found = engine.merge(f for u in all_units for f in u.found)
    kept, suppressed = engine.finish(found, [m for u in all_units for m in u.marks], set(), config)
    by_file = {path: fs for path, fs in last.by_file.items() if path not in edited}
    by_file.update({path: tuple(fs) for path, fs in checked.by_file.items()})
    notes = [*last.structure, *(f for path in by_file for f in by_file[path]), *(f for u in all_units for f in u.roles)]
    deployments = sum(1 for u in all_units for k in u.keys if k[0] == "deployment")
    if not deployments:
        raise _Stale  # perhaps no host takes part any more: only a whole run says so (load/notes/pd_look.py)
    seen = {w[0] for w in last.watched}
    watched = (*last.watched, *(tuple(w) for w in watch([p for p in result.model_files if p not in seen])))
    new = State(last.inventory, last.structure, by_file, last.inventory_files, tuple(all_units), watched)
    return Again(configuration.with_notes(notes, kept, config), suppressed, new, hosts, result, len(unit_of),
                 deployments, any(u.assumed for u in all_units))

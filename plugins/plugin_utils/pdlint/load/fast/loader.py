"""The fast loader: static YAML/INI inventories with group_vars/ and host_vars/, read with libyaml.

It applies ansible-core's precedence itself (tests/load/test_fast_differential.py
proves it equal to the reference loader) and never imports ansible. What it
does not model raises Unsupported, and the caller uses the reference loader.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from ...finding import Finding
from ...hostvars import HostVars
from .. import errors, preflight
from ..notes import pd_look, unmatched_vars
from ..notes.group_names import invalid_names
from ..preflight import guard, layout
from ..preflight.gc_pause import gc_paused
from ..preflight.layout import absolute_sources, paths_only, source_dir
from . import ansible_cfg
from .files import Files
from .inventory import Inventory
from .sources import add_source
from .variables.precedence import resolve, role_conflicts
from .variables.values import Unsupported
from .variables.vars_dirs import VarsFiles, find_vars_files

__all__ = ["Unsupported", "load"]


def load(sources: Sequence[str], *, allow_lookups: bool = False, checked: preflight.Preflight | None = None,
         notes: list[Finding] | None = None, keep: Kept | None = None) -> list[HostVars]:
    """Every host with its pdlint variables, as the reference loader returns them. Raises Unsupported, LoadError.

    `checked` is the preflight of these sources (run here when not given); group-name warnings go to notes.
    Hosts with a templated value are rendered by the reference loader (ansible-core imported only then).
    keep, when given with notes, receives what load_hosts() needs to load some hosts again (unless a template
    made the reference loader take part).
    """
    # The cyclic GC rescans the ever-growing heap of parsed nodes (no cycles among them): a third of the time at 10k.
    with gc_paused():
        return _load(sources, allow_lookups, checked, notes, keep)


@dataclasses.dataclass
class Kept:
    """What a whole load leaves for loading some of its hosts again while its inventory files are unchanged: the
    parsed inventory, its notes that depend only on them and the file list, and each host's role conflicts."""

    inventory: Inventory | None = None
    structure: list[Finding] = dataclasses.field(default_factory=list)
    roles: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)
    by_file: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)  # the preflight's, by file
    inventory_files: list[str] = dataclasses.field(default_factory=list)  # as the preflight walked them


_WIDER = 3  # how many times a load is done again keeping more names for templates (each finds the names one reads)


def _without(hv: HostVars, names: frozenset[str]) -> HostVars:
    """hv without the variables read only for templates (what the reference loader, keeping pdlint's, returns)."""
    if not names or not names & hv.values.keys():
        return hv
    return dataclasses.replace(hv, values={k: v for k, v in hv.values.items() if k not in names},
                               origins={p: o for p, o in hv.origins.items() if p[0] not in names})


def _load(sources: Sequence[str], allow_lookups: bool, checked: preflight.Preflight | None,
          notes: list[Finding] | None, keep: Kept | None,
          kept_for_templates: frozenset[str] = frozenset(), tries: int = 0) -> list[HostVars]:
    settings = ansible_cfg.check()
    sources = absolute_sources(sources)
    if checked is None:
        try:
            checked = preflight.check(sources)
        except guard.Refused as exc:
            raise errors.LoadError(exc.finding) from None
    if checked.encrypted:
        raise Unsupported("vault-encrypted files")
    files = Files(paths_only(sources), checked)
    inv = Inventory(safe_group_names=settings.safe_group_names, keep=checked.keep_names)
    for source in sources:
        add_source(inv, source, files)
    inv.reconcile()
    structure = [*invalid_names(inv.groups, paths_only(sources), inv.declared),
                 *unmatched_vars.unmatched(sources, inv.hosts, inv.groups, frozenset(checked.vars_files))]
    names = sorted(inv.hosts)
    by_name = VarsFiles(sources, files)
    ancestors = {g: inv.ancestors(g) for g in inv.groups}
    wants: set[str] = set()
    result = resolve(inv, names, by_name, ancestors, checked.memo, wants)
    if wants and tries < _WIDER:
        # Templates read variables the scan dropped (ansible_host, a site's own names): scan again keeping them,
        # which costs a second pass, not ansible-core's per-host one; they are dropped again from what is returned.
        wider = preflight.check(sources, checked.limits, checked.allow_dynamic, checked.overlay, None,
                                checked.keep_names | wants)
        return _load(sources, allow_lookups, wider, notes, None, kept_for_templates | wants, tries + 1)
    if notes is not None:
        notes.extend(structure)
    templated = {name for name, hv in zip(names, result) if hv is None}
    final = [_without(hv, kept_for_templates) for hv in result if hv is not None]
    if templated:
        from ..reference import loader as reference

        rendered = iter(reference.load(sources, allow_lookups=allow_lookups, only=templated, checked=checked,
                                       keep_names=checked.keep_names))
        final = [_without(hv if hv is not None else next(rendered), kept_for_templates) for hv in result]
    if notes is not None:
        conflicts = list(role_conflicts(inv, by_name, ancestors, final))
        notes.extend(f for _unused, f in conflicts)
        # over every host: a run that reuses some hosts' findings cannot say it, so such a run keeps no state
        look = pd_look.silent_pass(final, inv.groups, checked.texts, paths_only(sources))
        notes.extend(look)
        if keep is not None and not templated and not look:
            keep.inventory, keep.structure = inv, structure
            keep.by_file, keep.inventory_files = checked.by_file, checked.inventory_files
            for host, finding in conflicts:
                keep.roles.setdefault(host, []).append(finding)
    return final


def load_hosts(sources: Sequence[str], inv: Inventory, checked: preflight.Preflight,
               names: Sequence[str]) -> tuple[list[HostVars], dict[str, list[Finding]]]:
    """Some hosts of an inventory a whole load kept (its files unchanged), from a preflight of the vars files they
    read: their variables as load() gives them, and their role conflicts. Raises Unsupported (a template, which
    the reference loader renders), LoadError."""
    with gc_paused():
        sources = absolute_sources(sources)
        if checked.encrypted:
            raise Unsupported("vault-encrypted files")
        files = Files(paths_only(sources), checked)
        by_name = VarsFiles(sources, files)
        ancestors = {g: inv.ancestors(g) for g in inv.groups}
        names = sorted(names)
        result = resolve(inv, names, by_name, ancestors, None)
        if any(hv is None for hv in result):
            raise Unsupported("a templated value")
        final = [hv for hv in result if hv is not None]
        roles: dict[str, list[Finding]] = {}
        for host, finding in role_conflicts(inv, by_name, ancestors, final, names):
            roles.setdefault(host, []).append(finding)
        return final, roles


def read_by(inv: Inventory, sources: Sequence[str], path: str) -> list[str] | None:
    """The hosts whose variables a group_vars/host_vars file is read into (None: a file of no entity, or all)."""
    path = os.path.abspath(path)
    for base in {os.path.realpath(source_dir(s)) for s in paths_only(sources)}:
        for subdir in layout.VARS_DIRS:
            folder = os.path.join(base, subdir)
            if not path.startswith(folder + os.sep):
                continue
            entry = path[len(folder) + 1:].split(os.sep)[0]
            name = unmatched_vars.entity(entry, os.path.join(folder, entry))
            found = find_vars_files(folder, name)
            if path not in found:
                return None
            if subdir == "host_vars":
                return [name] if name in inv.hosts else []
            if name == "all" or name not in inv.groups:
                return None if name == "all" else []
            return sorted(h for h, host in inv.hosts.items() if name in inv.host_groups(host))
    return None

"""Which inventory an editor file belongs to, and one check of it with the editor's unsaved buffers in place."""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import configuration
from ..config import files as configfile
from ..config.configuration import Config, ConfigError
from ..engine import core as engine
from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..launch.mapping import keep_names
from ..load.errors import LoadError, load_error, no_hosts
from ..load.preflight import guard
from ..load.preflight.gc_pause import gc_paused
from ..load.preflight.layout import VARS_DIRS, source_dir
from ..topology.types import Topology

_INVENTORY_NAMES = ("hosts", "inventory")


def inventory_of(path: str) -> str | None:
    """The inventory source a file belongs to, as the CLI finds it; None for a file that is no inventory.

    A group_vars/host_vars file names the directory above it (as `pdlint PATH` does). Any other file names its
    directory when that holds group_vars/ or host_vars/ (the same inventory, whichever of its files is open),
    else itself when it is named like an inventory (hosts*, inventory*, *.ini); a Kubernetes manifest names its
    folder. Other YAML (playbooks) is left alone.
    """
    p = Path(os.path.abspath(path))
    for parent in p.parents:
        if parent.name in VARS_DIRS:
            return str(parent.parent)
    if any((p.parent / d).is_dir() for d in VARS_DIRS):
        return str(p.parent)
    if p.suffix == ".ini" or p.stem.startswith(_INVENTORY_NAMES):
        return str(p)
    from ..kubernetes.detect import manifest_files

    if p.is_file() and manifest_files(str(p)) is not None:
        return str(p.parent)  # a Kubernetes manifest: its folder's manifests are checked together, as the hook does
    return None


def _manifests(source: str, overlay: Mapping[str, str]) -> Outcome | None:
    """The check of a folder of Kubernetes manifests (None: source is an inventory)."""
    from ..kubernetes import detect, read

    if not os.path.isdir(source) or any(os.path.isdir(os.path.join(source, d)) for d in VARS_DIRS):
        return None
    try:
        files = detect.manifest_files(source)
        if files is None:
            return None
        config = _config(source)
        loaded = read.load(files, guard.Limits(), overlay)
    except LoadError as exc:
        return Outcome(source, failed=exc.finding)
    except ConfigError as exc:
        return Outcome(source, failed=load_error(Origin(source), str(exc)))
    from ..kubernetes.wording import worded
    from ..load.model_files import Files

    result = engine.lint(loaded.hosts, config, Files.of([source]), overlay)
    findings = sorted(configuration.with_notes(result.settled(loaded.findings), worded(result.findings), config))
    return Outcome(source, tuple(findings), tuple(result.hosts), result.topology, model_files=result.model_files)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One check of one inventory: findings (or the load-error that stopped it), and what they were computed on."""

    source: str
    findings: tuple[Finding, ...] = ()
    hosts: tuple[HostVars, ...] = ()
    topology: Topology | None = None
    failed: Finding | None = None  # a load-error: the other files keep their last diagnostics
    model_files: tuple[str, ...] = ()  # the config.json files the model facts came from (or were looked for)
    playbook_dir: str | None = None  # the config's playbook's folder: a file saved under it checks this again
    # the hosts as checked, when the config file's `variables:` mapping made them (hover says where a value came from)
    mapped: tuple[HostVars, ...] = ()
    seen: Any = dataclasses.field(default=None, compare=False, repr=False)  # again.Seen, for the next check
    rechecked: tuple[str, ...] | None = None  # after an edit, the hosts checked again; None: every host


def _config(source: str) -> Config:
    start = Path(source_dir(source))
    return configfile.load(start)


def check(source: str, overlay: Mapping[str, str], memo: Any = None, last: Outcome | None = None) -> Outcome:
    """Load and lint source with overlay's texts in place of those files, as `pdlint SOURCE` would.

    memo (a load.filememo.Memo the server keeps between checks) answers for the files whose content it has seen.
    last (this source's previous outcome): after an edit, only the units of the hosts the changed files touch
    are checked again (lsp/again.py), when its state can say so.
    Without the cyclic GC meanwhile, as the CLI runs: a check makes only acyclic objects (a test holds it to
    that), and a collection during it would rescan the server's whole heap (the memo of every file) again."""
    with gc_paused():
        return _check(source, overlay, memo, last)


def _check(source: str, overlay: Mapping[str, str], memo: Any, last: Outcome | None) -> Outcome:
    manifests = _manifests(source, overlay)
    if manifests is not None:
        return manifests
    from ..cache import incremental
    from ..cache.outcome import watch
    from ..load import select
    from ..load.fast import loader as fast
    from ..load.model_files import Files
    from ..load.preflight import fingerprints
    from . import again

    notes: list[Finding] = []
    try:
        config = _config(source)
    except ConfigError as exc:
        return Outcome(source, failed=load_error(Origin(source), str(exc)))
    project = None
    if config.playbook:  # what runs, as the CLI reads it (from disk: a playbook's unsaved buffer is not read)
        from ..playbook import apply as playbook

        try:
            project = playbook.project_of(config.playbook)
        except LoadError as exc:
            return Outcome(source, failed=exc.finding)
    limits = guard.Limits()
    started = time.time_ns()
    # the incremental re-check knows the inventory's files only: a mapping or a playbook checks the whole again
    tree = None if config.variables or project is not None else again.walk(source, limits)  # the one stat walk: here, and the preflight's
    try:
        walked = None if tree is None else fingerprints.of_walk(tree)
    except OSError:  # a file gone since the walk: the whole check says what the preflight makes of it
        tree = walked = None
    racy = again.racy(walked or (), started)
    settings = again.settings(config)
    if walked is not None and last is not None and isinstance(last.seen, again.Seen) and last.seen.settings == settings:
        changed = again.changed(last.seen, walked, overlay)
        pending = last.seen.state
        kept = pending.state([source], changed) if changed and isinstance(pending, again.Pending) else pending
        if changed and isinstance(kept, incremental.State):
            try:
                done = incremental.again(kept, changed, [source], config, limits, Files.of([source]), overlay)
            except incremental.Stale:
                pass  # the whole check
            else:
                return _after(last, done, again.Seen(settings, tuple(walked), started, again.buffers(overlay),
                                                     racy, done.state))
    said: list[str] = []
    keep = fast.Kept() if walked is not None else None
    try:
        # the buffers reach ansible-core's loader too (templated hosts, what the fast loader does not cover), so
        # its fallback is no news to the editor
        names = keep_names(config.variables) | (playbook.names_read(project) if project is not None else frozenset())
        hosts = select.load([source], notes=notes, note=said.append, overlay=overlay, limits=limits,
                            memo=memo, keep_names=names, keep=keep, walked=tree)
    except LoadError as exc:
        return Outcome(source, failed=exc.finding)
    if not hosts:
        return Outcome(source, failed=no_hosts([source]))
    if project is not None:
        launched = playbook.apply(hosts, project)
        notes.extend(launched.findings)
        hosts = launched.hosts
    known = last.topology.bodies_known if last is not None and last.topology is not None else None
    result = engine.lint(hosts, config, Files.of([source]), overlay, getattr(memo, "checked", None),
                         {} if known is None else known)
    if memo is not None:
        memo.checked = result
    findings = sorted(configuration.with_notes(result.settled(notes), result.findings, config))
    state = None
    if keep is not None and walked is not None and not said:
        state = again.Pending(keep, hosts, result.found, result.topology, watch(result.model_files))
    seen = None
    if state is not None:
        seen = again.Seen(settings, tuple(walked or ()), started, again.buffers(overlay), racy, state)
    return Outcome(source, tuple(findings), tuple(hosts), result.topology, model_files=result.model_files,
                   mapped=result.hosts if config.variables else (), seen=seen,
                   playbook_dir=os.path.dirname(os.path.abspath(project.playbook)) if project is not None else None)


def _after(last: Outcome, done: Any, seen: Any) -> Outcome:
    """The whole check's outcome from the last one and incremental.again()'s check of some hosts (done)."""
    from . import again

    if last.topology is None:
        raise AssertionError("an outcome checked again after an edit has its last topology")
    fresh = {hv.host: hv for hv in done.hosts}
    hosts = tuple(fresh.get(hv.host, hv) for hv in last.hosts)
    topology = again.combine(last.topology, done.result.topology, [hv.host for hv in hosts], set(fresh))
    model_files = tuple(dict.fromkeys((*last.model_files, *done.result.model_files)))
    return Outcome(last.source, tuple(sorted(done.findings)), hosts, topology, model_files=model_files, seen=seen,
                   rechecked=tuple(sorted(fresh)))

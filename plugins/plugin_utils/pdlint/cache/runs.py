"""A whole check of one inventory, remembered: reused while nothing it depends on has changed.

The key is everything the result depends on: the stat fingerprint (mode, size, mtime_ns, ctime_ns, inode,
device) of every file the preflight walk would read, in walk order (so an added, removed or renamed file
changes it), the ansible.cfg in effect, ANSIBLE_* variables, the working directory (paths are printed
relative to it), the options and the configuration; the store adds pdlint's code. A file changed within
the clock's granularity of the run keeps its stat, as in git's "racy clean" case, so the entry also holds
a digest of the content of every file modified in the two seconds before the run, checked on reuse.
One entry is kept per inventory, options and environment (its slot): a run after an edit replaces it.

The model facts' config.json files (every one read or looked for: a model downloaded into the Hugging Face cache
after the run must be seen) are kept in the outcome by their stat and compared on reuse; the environment
variables that name the Hugging Face cache are in the slot.

Where ansible-core's loader takes part (templates, a fallback), its release is in the key too; runs that
allow lookups or inventory plugins may run code and read anything, so they are stored only when the fast
loader read every host alone.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..load import preflight
from ..load.fast import ansible_cfg
from ..load.preflight import fingerprints
from ..load.preflight.fingerprints import Stat, digest
from ..load.preflight.layout import source_dir
from . import store
from .outcome import Outcome, stamp, unchanged

Fingerprint = list[Stat]


@dataclasses.dataclass(frozen=True)
class Entry:
    slot: str  # one stored entry per inventory and settings: an edit replaces it, old results do not pile up
    key: str  # the slot and every file's fingerprint
    files: Fingerprint
    started: int  # time.time_ns() before the files were read
    racy: list[tuple[str, bytes | None]]  # content digests of the files modified just before
    sources: list[str]
    limits: preflight.Limits | None


def digest_of(path: str) -> bytes | None:
    """The digest of a file's content now (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            return digest(fh.read())
    except OSError:
        return None


_HF_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")  # where the model cache is


def _cfg() -> Stat | None:
    return stamp(ansible_cfg.config_file())


def _ansible() -> Stat | None:
    """ansible-core's release file, found without importing it (importing costs a warm run its budget)."""
    import importlib.util

    spec = importlib.util.find_spec("ansible")
    if spec is None or not spec.submodule_search_locations:
        return None
    return stamp(os.path.join(next(iter(spec.submodule_search_locations)), "release.py"))


def entry(sources: Sequence[str], settings: tuple[Any, ...], limits: preflight.Limits | None) -> Entry | None:
    """The cache entry for checking sources with these settings; None when the inventory cannot be keyed."""
    started = time.time_ns()
    folder = os.path.realpath(store.directory())
    for source in sources:  # a cache inside an inventory would be read as part of it (HOME set to a checkout)
        base = os.path.realpath(source_dir(source))
        if folder == base or folder.startswith(base.rstrip(os.sep) + os.sep):
            return None
    files = fingerprints.fingerprints(sources, limits)
    if files is None:
        return None
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("ANSIBLE_") or k in _HF_ENV)
    slot = store.name("run", tuple(sources), os.getcwd(), settings, tuple(env), _cfg(), _ansible(),
                      sys.version)
    return Entry(slot, store.name(slot, tuple(files)), files, started, _racy(files, started), list(sources),
                 limits)


def get(e: Entry) -> Outcome | None:
    """The stored outcome, if intact and every recently modified file still has the content it was stored with."""
    data = store.read(e.slot)
    if not isinstance(data, tuple) or len(data) != 9 or data[0] != e.key:
        return None
    try:
        _unused, racy, findings, suppressed, hosts, deployments, assumed, notes, watched = data
        if any(digest_of(path) != digest for path, digest in racy) or not unchanged(watched):
            return None
        return Outcome([store.finding(r) for r in findings], [store.finding(r) for r in suppressed], hosts, deployments,
                       assumed, list(notes), tuple(watched))
    except (TypeError, ValueError):
        return None


def _racy(files: Fingerprint, started: int) -> list[tuple[str, bytes | None]]:
    return [(f[0], digest_of(f[0])) for f in files if fingerprints.recent(f, started)]


def put(e: Entry, outcome: Outcome) -> None:
    """Store outcome, unless a recently modified file changed while it was computed. No second stat pass: the key
    holds every file's stat from before it was read, so a file changed meanwhile has another stat at the next
    run's walk (no reuse), unless the change kept it, which only a file modified within the racy window can do,
    and those are compared by content here and on reuse."""
    racy = _racy(e.files, e.started)
    if racy != e.racy:
        return
    store.write(e.slot, (e.key, racy, [store.row(f) for f in outcome.findings], [store.row(f) for f in outcome.suppressed],
                         outcome.hosts, outcome.deployments, outcome.assumed, list(outcome.notes),
                         [list(w) for w in outcome.watched]))
    if outcome.state is not None:  # the files' stats without their paths, which the key holds
        store.write(units_key(e), (store.name(tuple(path for path, *_unused in e.files)), [f[1:] for f in e.files],
                                   racy, outcome.state.data()), units_folder())


def units_key(e: Entry) -> str:
    """Where the state of the last run in e's slot is kept for a run after an edit (incremental.py), in
    units_folder()."""
    return store.name(e.slot, "units")


def units_folder() -> str:
    """The run states' own folder beside the run entries (the per-file memo has one too)."""
    return os.path.join(store.directory(), "units")


_REFERENCE = f"{__package__.rpartition('.')[0]}.load.reference.loader"  # imported: ansible-core loaded the inventory


def through(e: Entry | None, compute: Callable[[], Outcome], static: bool) -> Outcome:
    """The stored outcome for e, else compute(), stored unless ansible-core's loader took part and may have
    run code (static: no lookups, no plugins, so its answer depends only on what the key covers)."""
    if e is not None:
        found = get(e)
        if found is not None:
            for text in found.notes:
                sys.stderr.write(f"pdlint: info: {text}\n")
            return found
    used_before = _REFERENCE in sys.modules
    outcome = compute()
    if e is not None and (static or (not used_before and _REFERENCE not in sys.modules)):
        put(e, outcome)
    return outcome

"""What the preflight scan and the fast loader make of each file, reused while the file's content is the same.

Two levels of one memo: in memory (the language server keeps one between requests: scans and variables) and
on disk (the CLI reads one bundle per inventory and writes it back: the scans only, since rebuilding 10,000
files' values and origins from disk costs as much as composing them again: 1.0 s against 0.75 s measured at
10,000 hosts, see bench/RESULTS.md). Each entry is keyed by the file's path and a digest of its
bytes: the preflight reads every file anyway (bounded, and an editor's unsaved buffer in place of the file), so
keying by content costs one hash and sees every edit, even one that keeps size and mtime (git's "racy clean").
The limits and the working directory (origins are printed relative to it) are part of the key; the store adds
pdlint's code. Only clean results are kept: a file that is refused, has a syntax error or holds something the
fast loader does not model is recomputed every time, so every error comes from the same code as without the memo.
The language server's memo also notes each vars file's stat when it was read: a file whose stat is unchanged
and was last changed well before that read (unchanged()) is not read again, so an edit re-reads one file, not
every file of the inventory (1,377 reads per check at 1,000 hosts).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from ..finding import Finding
from ..load.fast.variables.values import Var
from ..load.preflight.fingerprints import RACY_NS, stat_key
from ..load.preflight.gc_pause import gc_paused
from ..load.preflight.guard import Limits
from . import store

Scan = tuple[list[Finding], list[str]]  # duplicate-key warnings, top-level keys


class Memo:
    """Per-file results, one entry per path (the latest content seen): an edit replaces it, nothing piles up."""

    def __init__(self, slot: str | None = None) -> None:
        self.slot = slot  # the on-disk bundle this memo is read from and written to; None: memory only
        self.keeps_variables = slot is None  # a bundle stores scans only: holding values for it would cost memory
        self.scans: dict[str, tuple[bytes, tuple[Any, ...], str, Scan]] = {}
        self.vars: dict[str, tuple[bytes, str, str, dict[str, Var]]] = {}
        self.changed = False
        self.used: set[str] = set()
        self.cwd = _cwd()
        self.prefixed: Any = None  # the fast loader's last per-variable origins (kept by the language server)
        self.checked: Any = None  # the last check's engine.core.Result, the next one's `before` (the same)
        # Memory only: each file's stat when it was read, its digest and when it was read (see unchanged()).
        self.stats: dict[str, tuple[tuple[int, ...], bytes, int]] = {}
        self.racy_ns = RACY_NS
        self.inventories: dict[str, tuple[bytes, tuple[str, bool], str, Any]] = {}  # memory only

    def begin(self) -> None:
        """A load starts: note the working directory once (origins are printed relative to it), not per file."""
        self.cwd = _cwd()

    # ---- the preflight's event scan of one file ----------------------------------------------------------

    def scan(self, path: str, key: bytes, limits: Limits) -> Scan | None:
        found = self.scans.get(path)
        self.used.add(path)
        if found is None or found[0] != key or found[1] != _limits(limits) or found[2] != self.cwd:
            return None
        return found[3]

    def put_scan(self, path: str, key: bytes, limits: Limits, scan: Scan) -> None:
        self.scans[path] = (key, _limits(limits), self.cwd, scan)
        self.used.add(path)
        self.changed = True

    # ---- a file not read again: its stat is the one it had when it was read ---------------------------------

    def saw(self, path: str, st: os.stat_result | None, key: bytes) -> None:
        """path was read from disk with this stat and content digest (the language server's memo only)."""
        if st is not None and self.keeps_variables:
            self.stats[path] = (stat_key(st), key, time.time_ns())

    def unchanged(self, path: str, st: os.stat_result | None, limits: Limits) -> tuple[bytes, Scan] | None:
        """The digest and scan of a vars file whose stat is as when it was read, and whose variables the memo
        holds: it need not be read again. None when anything differs, or when the file was changed less than
        racy_ns before it was read: an edit in the same clock tick that kept the size would leave the stat as it
        was (git's "racily clean" entries), so such a file is read and compared by content until it is older."""
        found = self.stats.get(path) if st is not None else None
        if st is None or found is None or found[0] != stat_key(st) or max(st.st_mtime_ns, st.st_ctime_ns) >= found[2] - self.racy_ns:
            return None
        scan = self.scan(path, found[1], limits)
        if scan is None or not self.known(path, found[1]):
            return None
        return found[1], scan

    # ---- a vars file's variables, values with origins -------------------------------------------------------

    def known(self, path: str, key: bytes) -> bool:
        """Whether path's variables were read from this content (it composed cleanly then, and will again)."""
        found = self.vars.get(path)
        self.used.add(path)
        return found is not None and found[0] == key and found[2] == self.cwd

    def variables(self, path: str, key: bytes, shown: str) -> dict[str, Var] | None:
        found = self.vars.get(path)
        self.used.add(path)
        if found is None or found[0] != key or found[1] != shown or found[2] != self.cwd:
            return None
        return found[3]

    def put_variables(self, path: str, key: bytes, shown: str, data: dict[str, Var]) -> None:
        if not self.keeps_variables:
            return
        self.vars[path] = (key, shown, self.cwd, data)
        self.used.add(path)

    # ---- a YAML inventory file's calls on the fast loader's Inventory (load/fast/replay.py) ---------------

    def knows_inventory(self, path: str, key: bytes | None) -> bool:
        """Whether path's inventory calls were recorded from this content (it composed cleanly then)."""
        found = self.inventories.get(path)
        self.used.add(path)
        return found is not None and found[0] == key and found[2] == self.cwd

    def inventory_ops(self, path: str, key: bytes | None, shown: str, safe_names: bool) -> Any:
        found = self.inventories.get(path)
        if found is None or found[0] != key or found[1] != (shown, safe_names) or found[2] != self.cwd:
            return None
        return found[3]

    def put_inventory_ops(self, path: str, key: bytes | None, shown: str, safe_names: bool, ops: Any) -> None:
        if self.keeps_variables and key is not None:
            self.inventories[path] = (key, (shown, safe_names), self.cwd, ops)

    # ---- on disk --------------------------------------------------------------------------------------------

    def save(self) -> None:
        """Write the bundle back when something changed, without the files this run no longer walked."""
        if self.slot is None or not (self.changed or not self.used.issuperset(self.scans)):
            return

        with gc_paused():  # a collection per few hundred tuples built would rescan the whole heap of parsed values
            scans = {p: (k, lim, cwd, ([store.row(f) for f in dups], list(top)))
                     for p, (k, lim, cwd, (dups, top)) in self.scans.items() if p in self.used}
        store.write(self.slot, ("files", scans), folder())


def folder() -> str:
    """Beside the run results, in a folder of its own."""

    return os.path.join(store.directory(), "files")


def on_disk(sources: Sequence[str]) -> Memo:
    """The memo stored for these sources (empty when absent, damaged or made by other code)."""

    memo = Memo(store.name("files", tuple(sources), os.getcwd()))
    data = store.read(memo.slot, folder())  # type: ignore[arg-type]
    try:
        if isinstance(data, tuple) and len(data) == 2 and data[0] == "files":
            memo.scans = {p: (k, lim, cwd, ([store.finding(r) for r in dups], list(top)))
                          for p, (k, lim, cwd, (dups, top)) in data[1].items()}
    except (TypeError, ValueError, AttributeError):
        memo.scans = {}
    return memo


def _cwd() -> str:
    """The working directory, one string object per directory (marshal writes a shared object once)."""
    cwd = os.getcwd()
    return _CWDS.setdefault(cwd, cwd)


_CWDS: dict[str, str] = {}


def _limits(limits: Limits) -> tuple[Any, ...]:
    return (limits.max_file_bytes, limits.max_depth, limits.max_nodes, limits.max_files)

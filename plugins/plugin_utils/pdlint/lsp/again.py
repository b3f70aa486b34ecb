"""A check after an edit in the editor: the CLI's run after an edit (cache/incremental.py), its state in memory.

A whole check leaves what it was computed on (Seen): the stat walk taken before its files were read, a digest of
each editor buffer read in place of its file, the settings, and incremental.State. The next check walks once,
takes as changed every file whose stat moved, whose buffer changed (or appeared, or went), or whose content
differs from when the last check walked, for a file modified within the racy window then (its stat may hide
an edit, as cache/runs.py says), and asks incremental.again() for the units
those files touch; the outcome is the whole check's (tests/lsp/test_lsp_again.py compares them), else the caller
does the whole check.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..cache import incremental
from ..cache.outcome import stamp
from ..config.configuration import Config
from ..finding import Finding
from ..hostvars import HostVars
from ..load.fast import ansible_cfg
from ..load.fast import loader as fast
from ..load.preflight import guard
from ..load.preflight.fingerprints import Stat, digest, recent
from ..load.preflight.layout import absolute_sources
from ..load.preflight.walk import Walked, walked
from ..topology.types import Topology


@dataclasses.dataclass(frozen=True)
class Seen:
    """What one check of an inventory was computed on."""

    settings: tuple[Any, ...]  # settings(): what else its findings depend on
    files: tuple[Stat, ...]  # the stat walk (fingerprints) taken before the files were read
    started: int  # time.time_ns() before that walk
    buffers: dict[str, bytes]  # path -> digest of the editor's text read in place of the file
    racy: dict[str, bytes | None]  # path -> digest of each file modified just before the walk, right after it
    state: incremental.State | Pending


@dataclasses.dataclass
class Pending:
    """What incremental.state() is made of, made into one only when an edit may use it: most edits of an
    inventory that is one deployment touch most hosts, and those checks are whole ones (state() costs a tenth
    of a check at 10,000 hosts)."""

    kept: fast.Kept
    hosts: Sequence[HostVars]
    found: Sequence[Finding]
    topology: Topology
    watched: tuple[Any, ...]

    def state(self, sources: Sequence[str], changed: Sequence[str]) -> incremental.State | None:
        """The state, or None when it cannot be had or these changes touch most hosts (a whole check)."""
        if self.kept.inventory is None:
            return None
        touched = incremental.read_by(self.kept.inventory, absolute_sources(sources), changed)
        if touched is None or 2 * len(touched) > len(self.hosts):
            return None
        return incremental.state(self.kept, self.hosts, self.found, self.topology, self.watched)


def racy(files: Sequence[Stat], started: int) -> dict[str, bytes | None]:
    """The content digest of each walked file modified less than RACY_NS before started."""
    return {f[0]: _digest_of(f[0]) for f in files if recent(f, started)}


def _digest_of(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return digest(fh.read())
    except OSError:
        return None


def walk(source: str, limits: guard.Limits) -> Walked | None:
    """The walk of source, for the fingerprints and the whole check's preflight; None where the preflight would
    refuse something (the whole check walks again and says why)."""
    try:
        done = walked(absolute_sources([source]), limits)
        return done
    except (guard.Refused, OSError):
        return None


def settings(config: Config) -> tuple[Any, ...]:
    """The configuration, ansible.cfg in effect and ANSIBLE_* environment: a change to any is a whole check."""
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("ANSIBLE_"))
    return (repr(config), stamp(ansible_cfg.config_file()), tuple(env))


def buffers(overlay: Mapping[str, str]) -> dict[str, bytes]:
    return {path: digest(text.encode("utf-8", "surrogateescape")) for path, text in overlay.items()}


def changed(last: Seen, files: Sequence[Stat], overlay: Mapping[str, str]) -> list[str] | None:
    """The walked files that may read otherwise than at the last check, in walk order; None when the walk
    differs otherwise (a file or a directory's entry added, removed or renamed)."""
    if len(files) != len(last.files):
        return None
    now = buffers(overlay)
    out: list[str] = []
    for old, new in zip(last.files, files):
        path = new[0]
        if old[0] != path or (old[1] == -1) != (new[1] == -1):
            return None
        if old != new:
            if new[1] == -1:
                return None  # a vars directory's names
            out.append(path)
        elif new[1] != -1 and (now.get(path) != last.buffers.get(path)
                               or (path in last.racy and _digest_of(path) != last.racy[path])):
            out.append(path)  # its buffer changed, or an edit its stat does not show
    return out


def combine(topology: Topology, fresh: Topology, order: Sequence[str], again: set[str]) -> Topology:
    """The whole check's topology from the last one and that of the hosts checked again (again): instances
    and undecided hosts in the hosts' order, deployments by name, as topology/build.py gives them."""
    position = {h: i for i, h in enumerate(order)}
    instances = sorted([*(i for i in topology.instances if i.host not in again), *fresh.instances],
                       key=lambda i: position[i.host])
    undecided = sorted([*(u for u in topology.undecided if u.host not in again), *fresh.undecided],
                       key=lambda u: position[u.host])
    kept = [d for d in topology.deployments if not any(e.hosts[0] in again for e in (*d.prefill, *d.decode))]
    deployments = sorted([*kept, *fresh.deployments], key=lambda d: d.name)
    return Topology(tuple(instances), tuple(deployments), tuple(undecided))

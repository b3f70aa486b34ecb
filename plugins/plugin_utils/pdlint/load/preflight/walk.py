"""The walk over an inventory's sources: every file Ansible could read, with symlink loops and special files refused."""
from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Iterator, Sequence

from .guard import Limits, refuse
from .layout import VARS_DIRS, YAML_EXT, ignored, is_host_list


@dataclasses.dataclass
class Walk:
    limits: Limits
    seen: int = 0
    stats: dict[str, os.stat_result] = dataclasses.field(default_factory=dict)  # each regular file's, as walked
    bases: list[str] = dataclasses.field(default_factory=list)  # the directories beside the sources
    listed: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # each directory's names

    def entries(self, directory: str, chain: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
        """(path, chain of real directories) of a directory's entries, sorted; symlink loops refused."""
        real = os.path.realpath(directory)
        if real in chain:
            raise refuse(directory, "symlink loop: this directory contains itself",
                         "remove the symlink that points back up the tree")
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            raise refuse(directory, f"cannot list directory: {exc.strerror}") from None
        self.listed[directory] = names
        self.seen += len(names)
        if self.seen > self.limits.max_files:
            raise refuse(directory, f"more than {self.limits.max_files:,} files under the inventory",
                         "point pdlint at the inventory itself, not a whole tree")
        for name in names:
            yield os.path.join(directory, name), (*chain, real)


def regular(path: str, walk: Walk | None = None) -> bool:
    """True for a regular file, False for a directory; anything else (FIFO, device, socket, dangling) refused.
    The walk keeps a regular file's stat, so fingerprints() does not ask again."""
    try:
        st = os.stat(path)
        mode = st.st_mode
    except OSError as exc:
        kind = "symlink loop" if exc.errno == 40 else exc.strerror
        raise refuse(path, f"cannot read: {kind}") from None
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        raise refuse(path, "not a regular file (FIFO, device or socket): not read",
                     "remove it from the inventory directory")
    if walk is not None:
        walk.stats[path] = st
    return True


def vars_files_of(base: str, walk: Walk) -> Iterator[str]:
    """The files Ansible's host_group_vars plugin could read under base/group_vars and base/host_vars."""
    for name in VARS_DIRS:
        root = os.path.join(base, name)
        if os.path.isdir(root):
            yield from _vars_tree(root, (), walk)


def _vars_tree(directory: str, chain: tuple[str, ...], walk: Walk) -> Iterator[str]:
    for path, inner in walk.entries(directory, chain):
        name = os.path.basename(path)
        if name.startswith(".") or name.endswith("~"):
            continue
        ext = os.path.splitext(name)[1]
        if not regular(path, walk):
            if not ext:
                yield from _vars_tree(path, inner, walk)
        elif not ext or ext in YAML_EXT:
            yield path


def inventory_files_of(directory: str, chain: tuple[str, ...], walk: Walk) -> Iterator[str]:
    """Files of a directory source, as ansible-core's InventoryManager walks it."""
    for path, inner in walk.entries(directory, chain):
        name = os.path.basename(path)
        if ignored(name):
            continue
        if regular(path, walk):
            yield path
        else:
            yield from inventory_files_of(path, inner, walk)


def walk_files(sources: Sequence[str], limits: Limits, walk: Walk | None = None) -> tuple[list[str], list[str]]:
    """The inventory files and the vars files of the sources, as Ansible would find them; Refused as check()."""
    walk = walk or Walk(limits)
    inventory: list[str] = []
    bases: list[str] = []
    for source in sources:
        if is_host_list(source):
            continue  # a host list, not a path
        if regular(source, walk):
            inventory.append(source)
            bases.append(os.path.dirname(source))
        else:
            inventory.extend(inventory_files_of(source, (), walk))
            bases.append(source)
    walk.bases = list(dict.fromkeys(bases))
    return inventory, [f for base in walk.bases for f in vars_files_of(base, walk)]


@dataclasses.dataclass(frozen=True)
class Walked:
    """One walk's answer: check() and fingerprints() of the same moment read it, so a caller that needs both
    (the language server) walks the tree once."""

    walk: Walk
    inventory: list[str]
    vars_files: list[str]


def walked(sources: Sequence[str], limits: Limits) -> Walked:
    """walk_files() with what it saw; Refused as check()."""
    walk = Walk(limits)
    inventory, vars_files = walk_files(sources, limits, walk)
    return Walked(walk, inventory, vars_files)

"""What a file is, as the caches compare it: one stamp, one content digest, one racy window.

Every cache level and the language server stamp a file here (stamp()): the inventory's files, ansible.cfg, a vault
password file, the model files, ansible-core's release file. Stamps are plain tuples, which the cache's marshal
data can hold.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

try:  # hashlib's own blake2b; importing hashlib also loads OpenSSL's library, which a run without a cache never uses
    from _blake2 import blake2b
except ImportError:  # a Python built without it: hashlib finds another
    from hashlib import blake2b

from .guard import Limits, Refused
from .layout import VARS_DIRS
from .walk import Walked, walked

# 2 s: the coarsest timestamps of common file systems (FAT), and clock skew. A file changed less than this before
# it was read may change again within the same timestamp (git's "racily clean" entries): compare it by content.
RACY_NS = 2_000_000_000

StatKey = tuple[int, int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    """Everything an edit, a replacement or a permission change moves: mode, size, mtime, ctime, inode, device."""
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def digest(data: bytes) -> bytes:
    """The content digest every cache level keys and checks by."""
    return blake2b(data, digest_size=16).digest()


# (path, mode, size, mtime_ns, ctime_ns, inode, device)
Stat = tuple[str, int, int, int, int, int, int]
GONE = -2  # the mode of a file that cannot be stat'ed
LISTING = -1  # the mode of a group_vars/ or host_vars/ directory's entry: its names, not its stat


def stamp(path: str | os.PathLike[str], st: os.stat_result | None = None) -> Stat:
    """What path is now (its stat unless given; mode GONE where it cannot be had)."""
    try:
        st = st or os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte in the name
        return (str(path), GONE, 0, 0, 0, 0, 0)
    return (str(path), *stat_key(st))


def recent(stat: Stat, started: int) -> bool:
    """Whether the file was changed less than RACY_NS before started: its stat alone cannot vouch for its content."""
    return stat[1] != LISTING and max(stat[3], stat[4]) >= started - RACY_NS


def listing(path: str, listed: Mapping[str, list[str]] | None = None) -> Stat:
    """fingerprints()' entry for a group_vars/ or host_vars/ directory (its names, as the walk listed them)."""
    names = (listed or {}).get(path)
    if names is None:
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return (path, LISTING, -1, 0, 0, 0, 0)
    digest = blake2b("\0".join(names).encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return (path, LISTING, len(names), int.from_bytes(digest, "big"), 0, 0, 0)


def fingerprints(sources: Sequence[str], limits: Limits | None = None) -> list[Stat] | None:
    """(path, mode, size, mtime_ns, ctime_ns, inode, device) of every file check() reads, in its order: what
    a cached result of these sources depends on. None where check() would refuse something (it says why).

    Then, for each group_vars/ and host_vars/ directory, (path, LISTING, entries, hash of their names, 0, 0, 0): an
    entry no file is read from (an empty directory, one of .txt files) is still reported as matching no host or
    group (vars_files.unmatched). Names, not the directory's stat, which every editor's save-by-rename changes."""
    try:
        return of_walk(walked(sources, limits or Limits()))
    except (Refused, OSError):
        return None


def of_walk(done: Walked) -> list[Stat]:
    """fingerprints() of a walk already taken (raises OSError for a file gone since)."""
    walk = done.walk
    found = [stamp(path, walk.stats.get(path) or os.stat(path)) for path in done.inventory + done.vars_files]
    found.extend(listing(os.path.join(base, name), walk.listed) for base in walk.bases for name in VARS_DIRS)
    return found

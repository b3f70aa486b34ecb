"""pdlint's on-disk cache: one file per key under the user's cache directory, never inside the inventory.

Entries are marshal data (no code runs when one is read, unlike pickle), compressed with zlib and framed
by a magic string, the pdlint code fingerprint and a digest of the payload, and written to a temporary
file that replaces the entry atomically. So a corrupt, truncated, foreign (other pdlint code) or concurrently written entry
reads as absent: the caller recomputes and writes it again, never crashes and never uses it.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import stat
import zlib
from typing import Any

from ..finding import Finding, Origin
from ..load.preflight.fingerprints import stamp

_MAGIC = b"PDLINT-CACHE-2\n"
_DIGEST = 32
_MAX_ENTRY = 512 * 1024 * 1024  # a larger file is not ours
_CODE: bytes | None = None


def disabled() -> bool:
    """PDLINT_NO_CACHE set to anything but empty or 0."""
    return os.environ.get("PDLINT_NO_CACHE", "") not in ("", "0")


def directory() -> str:
    """$PDLINT_CACHE_DIR, else $XDG_CACHE_HOME/pdlint/runs, else ~/.cache/pdlint/runs."""
    explicit = os.environ.get("PDLINT_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pdlint", "runs")


def code() -> bytes:
    """What the code that produced an entry was: pdlint's version and every module file's stamp.

    An editable install changes its code without changing its version; an entry made by other code is foreign.
    """
    global _CODE
    if _CODE is None:
        from .. import __version__

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.blake2b(__version__.encode(), digest_size=_DIGEST)
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in sorted(names):
                if name.endswith((".py", ".json")):
                    path = os.path.join(folder, name)
                    h.update(repr((os.path.relpath(path, root), *stamp(path)[1:])).encode())
        _CODE = h.digest()
    return _CODE


def name(*parts: Any) -> str:
    """A file name for a key made of marshal-able parts."""
    return hashlib.blake2b(marshal.dumps(parts), digest_size=20).hexdigest()


def _entry_bytes(path: str) -> bytes | None:
    """An entry's bytes, only from a regular file of at most _MAX_ENTRY bytes: a FIFO put in the cache would block
    every later run on open, and a symlink to /dev/zero would be read to the bound (so neither is opened as a file:
    no symlink is followed, and the open does not wait for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY:
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read(_MAX_ENTRY + 1)
    except OSError:
        return None
    finally:
        if fd != -1:
            os.close(fd)


def read(key: str, folder: str | None = None) -> Any:
    """The entry stored under key, or None when absent or not an intact entry of this code."""
    data = _entry_bytes(os.path.join(folder or directory(), key))
    if data is None:
        return None
    head = len(_MAGIC) + 2 * _DIGEST
    if len(data) > _MAX_ENTRY or len(data) < head or not data.startswith(_MAGIC):
        return None
    made_by, digest, payload = data[len(_MAGIC):len(_MAGIC) + _DIGEST], data[len(_MAGIC) + _DIGEST:head], data[head:]
    if made_by != code() or hashlib.blake2b(payload, digest_size=_DIGEST).digest() != digest:
        return None
    try:
        inflate = zlib.decompressobj()
        plain = inflate.decompress(payload, _MAX_ENTRY)
        if inflate.unconsumed_tail or not inflate.eof:
            return None  # more than an entry may hold, or cut short
        return marshal.loads(plain)
    except (EOFError, ValueError, TypeError, zlib.error):
        return None


def write(key: str, value: Any, folder: str | None = None) -> None:
    """Store value under key, atomically; a cache that cannot be written is skipped silently."""
    import tempfile  # only a write needs it (a cold run's import time)

    folder = folder or directory()
    try:
        payload = zlib.compress(marshal.dumps(value), 1)  # a fifth of the size, for a few ms
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + code() + hashlib.blake2b(payload, digest_size=_DIGEST).digest() + payload)
            os.replace(tmp, os.path.join(folder, key))
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass


def row(f: Finding) -> tuple[Any, ...]:
    """A finding as plain str/int/None (ansible-core's values are tagged subclasses, which marshal refuses)."""
    o = f.origin

    def text(v: Any) -> str | None:
        return None if v is None else str(v)

    def number(v: Any) -> int | None:
        return None if v is None else int(v)

    return (str(o.file), number(o.line), number(o.column), str(f.rule), str(f.severity), str(f.message),
            text(f.hint), tuple(str(h) for h in f.hosts), text(f.deployment))


def finding(r: tuple[Any, ...]) -> Finding:
    """The finding row() stored."""
    file, line, column, rule, severity, message, hint, hosts, deployment = r
    return Finding(Origin(file, line, column), rule, severity, message, hint, tuple(hosts), deployment)

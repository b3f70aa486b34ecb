"""What a file is, as the caches compare it: one stat tuple, one content digest, one racy window."""
from __future__ import annotations

import hashlib
import os

# 2 s: the coarsest timestamps of common file systems (FAT), and clock skew. A file changed less than this before
# it was read may change again within the same timestamp (git's "racily clean" entries): compare it by content.
RACY_NS = 2_000_000_000

StatKey = tuple[int, int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    """Everything an edit, a replacement or a permission change moves: mode, size, mtime, ctime, inode, device."""
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def digest(data: bytes) -> bytes:
    """The content digest every cache level keys and checks by."""
    return hashlib.blake2b(data, digest_size=16).digest()

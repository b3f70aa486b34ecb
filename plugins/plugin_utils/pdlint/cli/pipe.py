"""Standard output whose reader may leave (`pdlint ... | head`): the command ends as it would have, silently."""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class _Guarded:
    """sys.stdout that swallows writes once the pipe is closed, so no subcommand's exit code depends on when the
    reader left (a listing exits 0, the lint verdict stays the verdict), and nothing is printed about it."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self.closed_pipe = False

    def _gone(self) -> None:
        self.closed_pipe = True
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a test's capture has no file descriptor
            # what is still buffered would fail again at interpreter exit ("Exception ignored ...", exit 120)
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._inner.fileno())

    def write(self, text: str) -> int:
        if not self.closed_pipe and not self._inner.closed:
            try:
                return self._inner.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        # closed: the language server's transport closes stdout when the editor says exit, before this last flush
        if not self.closed_pipe and not self._inner.closed:
            try:
                self._inner.flush()
            except BrokenPipeError:
                self._gone()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, buffer, encoding: the real stream's
        return getattr(self._inner, name)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Run a command with sys.stdout guarded, flushed inside the guard (a closed pipe often shows only then)."""
    inner = sys.stdout
    guard = _Guarded(inner)
    sys.stdout = guard
    try:
        yield
        guard.flush()
    finally:
        if sys.stdout is guard:
            sys.stdout = inner

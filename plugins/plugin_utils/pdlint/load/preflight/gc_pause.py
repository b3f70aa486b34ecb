"""The cyclic garbage collector paused while pdlint builds values: they hold no reference cycles (a test holds
every check to that), so a collection would only rescan a heap that keeps growing (a third of a cold run at 10k)."""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused(freeze: bool = False) -> Iterator[None]:
    """No cyclic GC inside; afterwards it runs again only if it ran before (a caller may have paused it already).

    freeze: the process ends right after (the CLI's entry point): keep it off and freeze the heap instead, so exit
    does not pay for a final collection either."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        elif enabled:
            gc.enable()

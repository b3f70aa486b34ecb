"""Pick the loader: fast unless it does not cover the inventory (then ansible-core's, with a note)."""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from ..hostvars import HostVars

LOADERS = ("fast", "ansible")


def _note(text: str) -> None:
    sys.stderr.write(f"pdlint: info: {text}\n")


def load(sources: Sequence[str], *, loader: str = "fast", allow_lookups: bool = False,
         note: Callable[[str], None] = _note) -> list[HostVars]:
    """The inventory's hosts from the chosen loader; `fast` falls back to `ansible` when it must. Raises LoadError."""
    if loader == "fast":
        from . import fast

        try:
            return fast.load(sources, allow_lookups=allow_lookups)
        except fast.Unsupported as exc:
            note(f"the fast loader does not cover this inventory ({exc}); using ansible-core's loader")
    from . import reference

    return reference.load(sources, allow_lookups=allow_lookups)

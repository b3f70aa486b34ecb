"""Pick the loader: fast unless it does not cover the inventory (then ansible-core's, with a note).

Both start from one preflight over every file (limits, dynamic sources, duplicate keys), so a hostile
file is refused the same way whichever loader reads the rest.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..finding import Finding
from ..hostvars import HostVars
from . import errors, preflight
from .preflight import guard
from .preflight.layout import absolute_sources

LOADERS = ("fast", "ansible")


def _note(text: str) -> None:
    sys.stderr.write(f"pdlint: info: {text}\n")


def load(sources: Sequence[str], *, loader: str = "fast", allow_lookups: bool = False, allow_plugins: bool = False,
         limits: guard.Limits | None = None, vault_password_file: str | None = None,
         notes: list[Finding] | None = None, note: Callable[[str], None] = _note,
         overlay: Mapping[str, str] | None = None, memo: Any = None, keep: Any = None,
         keep_names: frozenset[str] = frozenset(), walked: Any = None) -> list[HostVars]:
    """The inventory's hosts from the chosen loader; `fast` falls back to `ansible` when it must. Raises LoadError.

    File-level warnings (duplicate keys, group names, files left encrypted) are appended to notes. overlay
    ({absolute path: text}, an editor's unsaved buffers) is read instead of those files by the preflight and the
    fast loader; ansible-core's loader reads the files on disk. memo (a filememo.Memo) answers for the files
    whose content it has seen; it is written back (when it has a place on disk) after a load that succeeds.
    keep (a fast.Kept) receives what loading some hosts again needs, when the fast loader read every host.
    keep_names: variables every loader keeps beside vllm_*/pdlint_* (what the config file's `variables:` mapping
    reads); with any, no memo is used, since the memo's variables and recorded calls hold pdlint's names only.
    walked: the preflight walk of these sources and limits, taken by the caller (preflight.check's).
    """
    sources = absolute_sources(sources)
    notes = notes if notes is not None else []
    if keep_names:
        memo = None
    if memo is not None:
        memo.begin()
    try:
        checked = preflight.check(sources, limits, allow_dynamic=allow_plugins, overlay=overlay, memo=memo,
                                  keep_names=keep_names, walked=walked)
    except guard.Refused as exc:
        raise errors.LoadError(exc.finding) from None
    notes.extend(checked.findings)
    if loader == "fast":
        from .fast import loader as fast

        try:
            if allow_plugins:
                raise fast.Unsupported("dynamic inventories are allowed")
            found: list[Finding] = []
            hosts = fast.load(sources, allow_lookups=allow_lookups, checked=checked, notes=found, keep=keep)
            notes.extend(found)
            if memo is not None:
                memo.save()
            return hosts
        except fast.Unsupported as exc:
            note(f"the fast loader does not cover this inventory ({exc}); using ansible-core's loader")
    from .reference import loader as reference

    return reference.load(sources, allow_lookups=allow_lookups, allow_plugins=allow_plugins, limits=limits,
                          vault_password_file=vault_password_file, notes=notes, checked=checked,
                          keep_names=keep_names)

"""The loader's file-level findings for an inventory some other program loaded (the play, in the check action).

The CLI gets these from its own load; inside a play, ansible-core has already
read the inventory, so the same checks run over its sources afterwards to give
the same verdict: duplicate keys, group names, files left encrypted, files
over the limits.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..finding import Finding
from . import group_names as groups
from . import guard, preflight, vault
from . import unmatched_vars as vars_files
from .layout import paths_only


def file_notes(sources: Sequence[str], group_names: Iterable[Any], decrypting: bool) -> list[Finding]:
    """Warnings (or the load-error) the CLI would report for these inventory sources."""
    paths = paths_only(sources)
    try:
        checked = preflight.check(paths, allow_dynamic=True)  # the play already chose to run its sources
    except guard.Refused as exc:
        return [exc.finding]
    found = list(checked.findings)
    if not decrypting:
        found.extend(vault.locked(p) for p in checked.encrypted)
    found.extend(groups.invalid_names(group_names, paths))
    if isinstance(group_names, Mapping):  # the play's `groups`: group name -> its hosts
        hosts = {h for members in group_names.values() for h in members}
        found.extend(vars_files.unmatched(paths, hosts, group_names))
    return found

"""The loader's file-level findings for an inventory some other program loaded (the play, in the check action).

The CLI gets these from its own load; inside a play, ansible-core has already
read the inventory, so the same checks run over its sources afterwards to give
the same verdict: duplicate keys, group names, files left encrypted, files
over the limits.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...finding import Finding
from ...hostvars import HostVars
from .. import preflight, vault
from ..preflight import guard
from ..preflight.layout import paths_only
from . import group_names as groups
from . import pd_look, unmatched_vars


def file_notes(sources: Sequence[str], group_names: Iterable[Any], decrypting: bool,
               hosts: Sequence[HostVars] = ()) -> list[Finding]:
    """Warnings (or the load-error) the CLI would report for these inventory sources (and the play's hosts)."""
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
        members = {h for names in group_names.values() for h in names}
        found.extend(unmatched_vars.unmatched(paths, members, group_names))
    found.extend(pd_look.silent_pass(hosts, group_names, checked.texts, paths))
    return found

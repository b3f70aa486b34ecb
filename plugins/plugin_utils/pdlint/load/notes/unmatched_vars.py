"""group_vars/ and host_vars/ entries that name no group or host: Ansible ignores them without a word."""
from __future__ import annotations

import os
from collections.abc import Container, Iterable, Iterator, Sequence

from ...finding import Finding, Origin
from ...paths import display_path
from ..preflight.layout import YAML_EXT, ignored, is_host_list, source_dir

_EXTS = YAML_EXT  # ansible-core's YAML_FILENAME_EXTENSIONS: host_vars/NAME plus one of these
_IMPLICIT = ("all", "ungrouped")


def _directories(sources: Sequence[str]) -> list[str]:
    """Where Ansible looks for group_vars/ and host_vars/: beside each inventory source (its directory)."""
    found: list[str] = []
    for source in sources:
        if is_host_list(source):
            continue
        directory = source_dir(os.path.abspath(source))
        if os.path.realpath(directory) not in (os.path.realpath(d) for d in found):
            found.append(directory)
    return found


def entity(name: str, path: str, regular: Container[str] = ()) -> str:
    """The host or group an entry of a vars directory is for (a directory, or a file with or without extension).
    regular: paths known to be regular files (the preflight's walk stat'ed them), which need no second stat."""
    stem, ext = os.path.splitext(name)
    return stem if ext in _EXTS and (path in regular or not os.path.isdir(path)) else name


def unmatched(sources: Sequence[str], hosts: Iterable[str], groups: Iterable[str],
              regular: Container[str] = ()) -> Iterator[Finding]:
    """An error for each vars file or directory whose name matches no host (host_vars) or group (group_vars).
    regular: as entity()'s (a stat per entry was a tenth of the walk at 10k hosts)."""
    names = {"host_vars": sorted(set(map(str, hosts))), "group_vars": sorted({*map(str, groups), *_IMPLICIT})}
    for directory in _directories(sources):
        for kind, known in names.items():
            members = set(known)  # a lookup per entry: in the sorted list it was quadratic (2 s at 10k hosts)
            folder = os.path.join(directory, kind)
            try:
                entries = sorted(os.listdir(folder))
            except OSError:
                continue
            for entry in entries:
                path = os.path.join(folder, entry)
                if entry.startswith(".") or ignored(entry):
                    continue
                name = entity(entry, path, regular)
                if name in members:
                    continue
                what = "host" if kind == "host_vars" else "group"
                import difflib  # only to suggest a name: a run without a typo never imports it

                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                yield Finding(
                    Origin(display_path(path)), "inventory[unmatched-vars]", "error",
                    f"{kind}/{entry} matches no {what} of the inventory, so Ansible ignores it",
                    f"did you mean {' or '.join(f'{kind}/{c}{entry[len(name):]}' for c in close)}?" if close
                    else f"rename it after a {what} ({', '.join(known[:6])}{', ...' if len(known) > 6 else ''}), "
                         "or delete it")

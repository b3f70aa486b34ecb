"""Before Ansible reads anything: every file it could read, bounded and checked; dynamic sources refused.

Ansible's own errors lose the line of a YAML syntax error, follow symlink
loops, read FIFOs until they close and build alias bombs in memory, so every
inventory file and every group_vars/host_vars file is walked and checked here
first (see guard.py). Executable inventory scripts and inventory plugin
configurations are refused unless the user allows dynamic inventories.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ...finding import Finding, Origin
from ...paths import DisplayPaths
from . import guard
from .fingerprints import digest
from .gc_pause import gc_paused
from .guard import Limits, Refused, refuse
from .layout import YAML_EXT
from .walk import Walk, Walked, regular, walk_files

ALLOW_DYNAMIC = "pass --allow-inventory-plugins to run it (only for inventories you trust)"


@dataclasses.dataclass
class Preflight:
    """What the checks found short of refusing: warnings, the vault-encrypted files, and every checked text."""

    findings: list[Finding] = dataclasses.field(default_factory=list)
    encrypted: list[str] = dataclasses.field(default_factory=list)
    texts: dict[str, str] = dataclasses.field(default_factory=dict)  # path as walked -> UTF-8 text
    vars_files: list[str] = dataclasses.field(default_factory=list)  # group_vars/host_vars files, as walked
    inventory_files: list[str] = dataclasses.field(default_factory=list)  # the others, as walked
    # Inventory files that only ansible-core's INI plugin can read: not UTF-8 (the lines it reads), or not YAML
    # though named .yml (the YAML syntax error, reported if the INI plugin rejects the file too).
    ini_lines: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    yaml_errors: dict[str, Finding] = dataclasses.field(default_factory=dict)
    digests: dict[str, bytes] = dataclasses.field(default_factory=dict)  # path as walked -> its bytes' digest
    memo: Any = None  # the filememo.Memo this preflight used and the fast loader may use, if any
    # Vars files whose variables the scan built (load/fast/variables/vars_events.py): path as walked -> (file their origins name, variables)
    values: dict[str, tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    by_file: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)  # path as walked -> its findings
    # absolute path -> an editor's unsaved text, read instead of the file by every loader (ansible-core's too)
    overlay: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # names kept beside vllm_*/pdlint_* (hostvars.is_relevant): what the config file's `variables:` mapping reads
    keep_names: frozenset[str] = frozenset()
    limits: Limits | None = None  # what this check was bounded by (a second check of the same sources reuses them)
    allow_dynamic: bool = False
    # A vars file's text -> its clean scan's top keys, the file its variables' origins name, those variables:
    # group_vars of one role are often the same text in every deployment, scanned once.
    same: dict[str, tuple[list[str], str, Any]] = dataclasses.field(default_factory=dict)


def read_bounded(path: str, limits: Limits, overlay: Mapping[str, str] | None = None) -> bytes:
    """The file's bytes, or its text in overlay (an editor's unsaved buffer, keyed by absolute path)."""
    if overlay is not None and path in overlay:
        data = overlay[path].encode("utf-8")
        if len(data) > limits.max_file_bytes:
            raise guard.oversize(path, len(data), limits)
        return data
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limits.max_file_bytes:
                raise guard.oversize(path, size, limits)
            # read(n) allocates n bytes first: asking for the limit cost 8 MB per file, a tenth of a cold run at
            # 10k. A file longer than its stat said (growing, or /proc's size 0) is read on, up to the limit.
            data = fh.read(size + 1)
            if len(data) > size:
                data += fh.read(limits.max_file_bytes + 1 - len(data))
            return data
    except OSError as exc:
        raise refuse(path, f"cannot read file: {exc.strerror}") from None


def _script(path: str, data: bytes, allow_dynamic: bool) -> bool:
    """True for an executable inventory script (allowed), Refused unless dynamic inventories are allowed."""
    if data.startswith(b"#!") and os.access(path, os.X_OK):
        if not allow_dynamic:
            raise refuse(path, "executable inventory script: not run", ALLOW_DYNAMIC, 1, 1)
        return True
    return False


def _scan(path: str, text: str, found: Preflight, limits: Limits, shown: DisplayPaths | None = None) -> guard.Scan:
    """guard.scan_yaml, or the memo's result for this content (clean scans only are kept). For a vars file
    (shown: display paths for its origins), the same pass builds its variables into found.values (load/fast/variables/vars_events.py)."""
    memo, key = found.memo, found.digests.get(path)
    if memo is not None and key is not None:
        known = memo.scan(path, key, limits)
        if known is not None:
            return guard.Scan(list(known[0]), list(known[1]))
    if shown is None:
        scan = guard.scan_yaml(text, path, limits)
    else:
        scan = _scan_vars(path, text, found, limits, shown(path))
    if memo is not None and key is not None and scan.syntax_error is None:
        memo.put_scan(path, key, limits, (list(scan.duplicates), list(scan.top_keys)))
    return scan


def _scan_vars(path: str, text: str, found: Preflight, limits: Limits, file: str) -> guard.Scan:
    """events.scan_vars, or for a text scanned clean before in this check, that scan and its variables with
    file in their origins (a clean scan says nothing of the path; a refusal or a syntax error is not kept)."""
    same = found.same.get(text)
    if same is not None:
        keys, before, variables = same
        if variables is not None:
            found.values[path] = (file, _refiled(variables, before, file))
        return guard.Scan([], list(keys))
    from ..fast.variables import vars_events

    scan, values = vars_events.scan_vars(text, path, limits, file, found.keep_names)
    if values is not None:
        found.values[path] = (file, values)
    if scan.syntax_error is None and not scan.duplicates:
        found.same[text] = (list(scan.top_keys), file, values)
    return scan


def _refiled(variables: dict[str, Any], before: str, file: str) -> dict[str, Any]:
    """A copy of a vars file's variables ({name: (value, {path: Origin})}) whose origins in before name file.

    One copy per place, shared by the origins naming it, as before; keyed by (line, column), since all name before:
    hashing the frozen dataclass cost more than the rest of the copy (a role's group_vars text in every deployment).
    Built by __init__: an instance whose __dict__ is asked for before its first attribute keeps a full dict."""
    made: dict[tuple[int | None, int | None], Origin] = {}

    def moved(origin: Origin) -> Origin:
        if origin.file != before:
            return origin
        place = (origin.line, origin.column)
        found = made.get(place)
        if found is None:
            found = made[place] = Origin(file, origin.line, origin.column)
        return found

    return {name: (_copied(value), {path: moved(o) for path, o in origins.items()})
            for name, (value, origins) in variables.items()}


def _copied(value: Any) -> Any:
    """Lists and mappings made anew (a later step may hold or change them per file), scalars as they are."""
    if type(value) is dict:  # pylint: disable=unidiomatic-typecheck  # the scan builds plain dicts and lists only
        return {k: _copied(v) for k, v in value.items()}
    if type(value) is list:  # pylint: disable=unidiomatic-typecheck
        return [_copied(v) for v in value]
    return value


def _inventory(path: str, text: str, data: bytes, allow_dynamic: bool, found: Preflight, limits: Limits) -> None:
    if _script(path, data, allow_dynamic):
        return
    from ..notes import reserved_hosts  # imports yaml, which a run answered from the cache never needs

    ext = os.path.splitext(path)[1]
    if ext and ext not in YAML_EXT:
        reserved_hosts.check_ini(path, text)
        return  # INI, TOML: no aliases; Ansible's parser reports its own errors
    scan = _scan(path, text, found, limits)
    if scan.syntax_error is not None:  # Ansible tries its YAML plugin, then the INI one
        if ext:
            found.yaml_errors[path] = scan.syntax_error
        reserved_hosts.check_ini(path, text)
        return
    reserved_hosts.check_yaml(path, text)
    found.findings.extend(scan.duplicates)
    if "plugin" in scan.top_keys and not allow_dynamic:
        raise refuse(path, "inventory plugin configuration: dynamic inventory plugins are not loaded",
                     ALLOW_DYNAMIC, 1, 1)


def check(sources: Sequence[str], limits: Limits | None = None, allow_dynamic: bool = False,
          overlay: Mapping[str, str] | None = None, memo: Any = None,
          keep_names: frozenset[str] = frozenset(), walked: Walked | None = None) -> Preflight:
    """Check every file the sources would make Ansible read; raises guard.Refused for unusable ones.

    overlay maps absolute paths to text read instead of the file on disk (the fast loader reads checked texts);
    memo (a filememo.Memo) answers the scan of a file whose content it has seen; keep_names: the variables kept
    beside pdlint's (the fast loader reads them from here); walked: the walk of these sources with these limits,
    when the caller took it already (the language server's, for its fingerprints too)."""
    # The cyclic GC would rescan the growing heap of parser events on every collection (no cycles among them).
    with gc_paused():
        return _check(sources, limits, allow_dynamic, overlay, memo, keep_names, walked)


def _check(sources: Sequence[str], limits: Limits | None, allow_dynamic: bool,
           overlay: Mapping[str, str] | None, memo: Any, keep_names: frozenset[str] = frozenset(),
           walked: Walked | None = None) -> Preflight:
    limits = limits or Limits()
    found = Preflight(memo=memo, overlay=dict(overlay or {}), keep_names=keep_names, limits=limits,
                      allow_dynamic=allow_dynamic)
    if walked is None:
        walk = Walk(limits)
        inventory, vars_files = walk_files(sources, limits, walk)
    else:
        walk, inventory, vars_files = walked.walk, list(walked.inventory), list(walked.vars_files)
    found.vars_files, found.inventory_files = vars_files, inventory
    inventory_set = set(inventory)
    shown = DisplayPaths()
    for path in inventory + vars_files:
        st = walk.stats.get(path) if overlay is None or path not in overlay else None
        _file(path, path in inventory_set, st, found, limits, allow_dynamic, overlay, shown)
    return found


def check_files(paths: Sequence[str], limits: Limits | None = None,
                overlay: Mapping[str, str] | None = None) -> Preflight:
    """check() of some vars files only (those an edit changed, as incremental.py reloads them), overlay's texts
    read in place of those files as check() does; raises Refused."""
    limits = limits or Limits()
    found = Preflight(vars_files=list(paths))
    shown = DisplayPaths()
    with gc_paused():
        for path in paths:
            regular(path)
            _file(path, False, None, found, limits, False, overlay, shown)
    return found


def _file(path: str, is_inventory: bool, st: os.stat_result | None, found: Preflight, limits: Limits,
          allow_dynamic: bool, overlay: Mapping[str, str] | None, shown: DisplayPaths) -> None:
    """Read and check one file into found."""
    memo = found.memo
    before = len(found.findings)
    if memo is not None and not is_inventory:
        same = memo.unchanged(path, st, limits)
        if same is not None:  # the language server's memo: as read before, its scan and variables known
            found.digests[path] = same[0]
            found.findings.extend(same[1][0])
            if len(found.findings) > before:
                found.by_file[path] = found.findings[before:]
            return
    data = read_bounded(path, limits, overlay)
    if data.lstrip().startswith(guard.VAULT_HEADER):
        found.encrypted.append(path)
        return
    if is_inventory:
        lines = guard.ini_lines(data, path, limits)
        if lines is not None:  # not UTF-8, but ansible-core's INI plugin reads it
            found.ini_lines[path] = lines
            _script(path, data, allow_dynamic)
            return
    text = guard.text_of(data, path, limits)
    found.texts[path] = text
    if memo is not None:
        found.digests[path] = digest(data)
        memo.saw(path, st, found.digests[path])
    if is_inventory:
        _inventory(path, text, data, allow_dynamic, found, limits)
    else:
        scan = _scan(path, text, found, limits, shown)
        if scan.syntax_error is not None:
            raise Refused(scan.syntax_error)
        found.findings.extend(scan.duplicates)
    if len(found.findings) > before:
        found.by_file[path] = found.findings[before:]

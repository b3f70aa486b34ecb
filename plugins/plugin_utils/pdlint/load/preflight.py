"""Before Ansible reads anything: every file it could read, bounded and checked; dynamic sources refused.

Ansible's own errors lose the line of a YAML syntax error, follow symlink
loops, read FIFOs until they close and build alias bombs in memory, so every
inventory file and every group_vars/host_vars file is walked and checked here
first (see guard.py). Executable inventory scripts and inventory plugin
configurations are refused unless the user allows dynamic inventories.
"""
from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..finding import Finding, Origin
from . import guard
from .guard import Limits, Refused, refuse
from ..paths import DisplayPaths, display_path
from .fingerprints import digest, stat_key

_YAML_EXT = (".yml", ".yaml", ".json")
VARS_DIRS = ("group_vars", "host_vars")
# ansible-core's InventoryManager: IGNORED_ALWAYS and the INVENTORY_IGNORE_EXTS default.
_IGNORED_NAMES = re.compile(r"^\.|^host_vars$|^group_vars$|^vars_plugins$")
_IGNORED_EXTS = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry")
ALLOW_DYNAMIC = "pass --allow-inventory-plugins to run it (only for inventories you trust)"


class LoadError(Exception):
    """An inventory that cannot be used at all (exit 2)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


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
    # Vars files whose variables the scan built (events.py): path as walked -> (file their origins name, variables)
    values: dict[str, tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    by_file: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)  # path as walked -> its findings
    # absolute path -> an editor's unsaved text, read instead of the file by every loader (ansible-core's too)
    overlay: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Walk:
    limits: Limits
    seen: int = 0
    stats: dict[str, os.stat_result] = dataclasses.field(default_factory=dict)  # each regular file's, as walked
    bases: list[str] = dataclasses.field(default_factory=list)  # the directories beside the sources
    listed: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # each directory's names

    def entries(self, directory: str, chain: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, ...]]]:
        """(path, chain of real directories) of a directory's entries, sorted; symlink loops refused."""
        real = os.path.realpath(directory)
        if real in chain:
            raise refuse(directory, "symlink loop: this directory contains itself",
                         "remove the symlink that points back up the tree")
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            raise refuse(directory, f"cannot list directory: {exc.strerror}") from None
        self.listed[directory] = names
        self.seen += len(names)
        if self.seen > self.limits.max_files:
            raise refuse(directory, f"more than {self.limits.max_files:,} files under the inventory",
                         "point pdlint at the inventory itself, not a whole tree")
        for name in names:
            yield os.path.join(directory, name), (*chain, real)


def _regular(path: str, walk: _Walk | None = None) -> bool:
    """True for a regular file, False for a directory; anything else (FIFO, device, socket, dangling) refused.
    The walk keeps a regular file's stat, so fingerprints() does not ask again."""
    try:
        st = os.stat(path)
        mode = st.st_mode
    except OSError as exc:
        kind = "symlink loop" if exc.errno == 40 else exc.strerror
        raise refuse(path, f"cannot read: {kind}") from None
    if stat.S_ISDIR(mode):
        return False
    if not stat.S_ISREG(mode):
        raise refuse(path, "not a regular file (FIFO, device or socket): not read",
                     "remove it from the inventory directory")
    if walk is not None:
        walk.stats[path] = st
    return True


def _read(path: str, limits: Limits, overlay: Mapping[str, str] | None = None) -> bytes:
    """The file's bytes, or its text in overlay (an editor's unsaved buffer, keyed by absolute path)."""
    if overlay is not None and path in overlay:
        data = overlay[path].encode("utf-8")
        if len(data) > limits.max_file_bytes:
            raise refuse(path, f"file is {len(data):,} bytes, over the {limits.max_file_bytes:,}-byte limit",
                         "raise the limit with --max-file-size if this file is genuine")
        return data
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limits.max_file_bytes:
                raise refuse(path, f"file is {size:,} bytes, over the {limits.max_file_bytes:,}-byte limit",
                             "raise the limit with --max-file-size if this file is genuine")
            return fh.read(limits.max_file_bytes + 1)
    except OSError as exc:
        raise refuse(path, f"cannot read file: {exc.strerror}") from None


def _vars_files(base: str, walk: _Walk) -> Iterator[str]:
    """The files Ansible's host_group_vars plugin could read under base/group_vars and base/host_vars."""
    for name in VARS_DIRS:
        root = os.path.join(base, name)
        if os.path.isdir(root):
            yield from _vars_tree(root, (), walk)


def _vars_tree(directory: str, chain: tuple[str, ...], walk: _Walk) -> Iterator[str]:
    for path, inner in walk.entries(directory, chain):
        name = os.path.basename(path)
        if name.startswith(".") or name.endswith("~"):
            continue
        ext = os.path.splitext(name)[1]
        if not _regular(path, walk):
            if not ext:
                yield from _vars_tree(path, inner, walk)
        elif not ext or ext in _YAML_EXT:
            yield path


def ignored(name: str) -> bool:
    """An entry of an inventory directory that ansible-core's InventoryManager skips."""
    return bool(_IGNORED_NAMES.search(name)) or name.endswith(_IGNORED_EXTS)


def _inventory_files(directory: str, chain: tuple[str, ...], walk: _Walk) -> Iterator[str]:
    """Files of a directory source, as ansible-core's InventoryManager walks it."""
    for path, inner in walk.entries(directory, chain):
        name = os.path.basename(path)
        if ignored(name):
            continue
        if _regular(path, walk):
            yield path
        else:
            yield from _inventory_files(path, inner, walk)


def _script(path: str, data: bytes, allow_dynamic: bool) -> bool:
    """True for an executable inventory script (allowed), Refused unless dynamic inventories are allowed."""
    if data.startswith(b"#!") and os.access(path, os.X_OK):
        if not allow_dynamic:
            raise refuse(path, "executable inventory script: not run", ALLOW_DYNAMIC, 1, 1)
        return True
    return False


def _scan(path: str, text: str, found: Preflight, limits: Limits, shown: DisplayPaths | None = None) -> guard.Scan:
    """guard.scan_yaml, or the memo's result for this content (clean scans only are kept). For a vars file
    (shown: display paths for its origins), the same pass builds its variables into found.values (events.py)."""
    memo, key = found.memo, found.digests.get(path)
    if memo is not None and key is not None:
        known = memo.scan(path, key, limits)
        if known is not None:
            return guard.Scan(list(known[0]), list(known[1]))
    if shown is None:
        scan = guard.scan_yaml(text, path, limits)
    else:
        from .fast import vars_events as events

        file = shown(path)
        scan, values = events.scan_vars(text, path, limits, file)
        if values is not None:
            found.values[path] = (file, values)
    if memo is not None and key is not None and scan.syntax_error is None:
        memo.put_scan(path, key, limits, (list(scan.duplicates), list(scan.top_keys)))
    return scan


def _inventory(path: str, text: str, data: bytes, allow_dynamic: bool, found: Preflight, limits: Limits) -> None:
    if _script(path, data, allow_dynamic):
        return
    ext = os.path.splitext(path)[1]
    if ext and ext not in _YAML_EXT:
        return  # INI, TOML: no aliases; Ansible's parser reports its own errors
    scan = _scan(path, text, found, limits)
    if scan.syntax_error is not None:  # Ansible tries its YAML plugin, then the INI one
        if ext:
            found.yaml_errors[path] = scan.syntax_error
        return
    found.findings.extend(scan.duplicates)
    if "plugin" in scan.top_keys and not allow_dynamic:
        raise refuse(path, "inventory plugin configuration: dynamic inventory plugins are not loaded",
                     ALLOW_DYNAMIC, 1, 1)


def check(sources: Sequence[str], limits: Limits | None = None, allow_dynamic: bool = False,
          overlay: Mapping[str, str] | None = None, memo: Any = None) -> Preflight:
    """Check every file the sources would make Ansible read; raises guard.Refused for unusable ones.

    overlay maps absolute paths to text read instead of the file on disk (the fast loader reads checked texts);
    memo (a filememo.Memo) answers the scan of a file whose content it has seen."""
    # The cyclic GC would rescan the growing heap of parser events on every collection (no cycles among them).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _check(sources, limits, allow_dynamic, overlay, memo)
    finally:
        if enabled:
            gc.enable()


def _files(sources: Sequence[str], limits: Limits, walk: _Walk | None = None) -> tuple[list[str], list[str]]:
    """The inventory files and the vars files of the sources, as Ansible would find them; Refused as check()."""
    walk = walk or _Walk(limits)
    inventory: list[str] = []
    bases: list[str] = []
    for source in sources:
        if "," in source and not os.path.exists(source):
            continue  # a host list, not a path
        if _regular(source, walk):
            inventory.append(source)
            bases.append(os.path.dirname(source))
        else:
            inventory.extend(_inventory_files(source, (), walk))
            bases.append(source)
    walk.bases = list(dict.fromkeys(bases))
    return inventory, [f for base in walk.bases for f in _vars_files(base, walk)]


Stat = tuple[str, int, int, int, int, int, int]


def _stat(path: str, st: os.stat_result | None = None) -> Stat:
    """fingerprints()' entry for a file (its stat now unless given; mode -2 where it cannot be had)."""
    try:
        st = st or os.stat(path)
    except OSError:
        return (path, -2, 0, 0, 0, 0, 0)
    return (path, *stat_key(st))


def listing(path: str, listed: Mapping[str, list[str]] | None = None) -> Stat:
    """fingerprints()' entry for a group_vars/ or host_vars/ directory (its names, as the walk listed them)."""
    names = (listed or {}).get(path)
    if names is None:
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return (path, -1, -1, 0, 0, 0, 0)
    digest = hashlib.blake2b("\0".join(names).encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return (path, -1, len(names), int.from_bytes(digest, "big"), 0, 0, 0)


def fingerprints(sources: Sequence[str], limits: Limits | None = None,
                 known: Sequence[Stat] | None = None) -> list[Stat] | None:
    """(path, mode, size, mtime_ns, ctime_ns, inode, device) of every file check() reads, in its order: what
    a cached result of these sources depends on. None where check() would refuse something (it says why).

    Then, for each group_vars/ and host_vars/ directory, (path, -1, entries, hash of their names, 0, 0, 0): an
    entry no file is read from (an empty directory, one of .txt files) is still reported as matching no host or
    group (vars_files.unmatched). Names, not the directory's stat, which every editor's save-by-rename changes.

    known: the fingerprints of an earlier call; the same paths are asked again, without a walk (a file added
    since is not seen: it changes the next walk's list)."""
    if known is not None:
        return [listing(path) if mode == -1 else _stat(path) for path, mode, *_ in known]
    try:
        walk = _Walk(limits or Limits())
        inventory, vars_files = _files(sources, walk.limits, walk)
        found = [_stat(path, walk.stats.get(path) or os.stat(path)) for path in inventory + vars_files]
        found.extend(listing(os.path.join(base, name), walk.listed) for base in walk.bases for name in VARS_DIRS)
        return found
    except (Refused, OSError):
        return None


def _check(sources: Sequence[str], limits: Limits | None, allow_dynamic: bool,
           overlay: Mapping[str, str] | None, memo: Any) -> Preflight:
    limits = limits or Limits()
    found = Preflight(memo=memo, overlay=dict(overlay or {}))
    walk = _Walk(limits)
    inventory, vars_files = _files(sources, limits, walk)
    found.vars_files, found.inventory_files = vars_files, inventory
    inventory_set = set(inventory)
    shown = DisplayPaths()
    for path in inventory + vars_files:
        st = walk.stats.get(path) if overlay is None or path not in overlay else None
        _file(path, path in inventory_set, st, found, limits, allow_dynamic, overlay, shown)
    return found


def check_files(paths: Sequence[str], limits: Limits | None = None) -> Preflight:
    """check() of some vars files only (those an edit changed, as incremental.py reloads them); raises Refused."""
    limits = limits or Limits()
    found = Preflight(vars_files=list(paths))
    shown = DisplayPaths()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for path in paths:
            _regular(path)
            _file(path, False, None, found, limits, False, None, shown)
    finally:
        if enabled:
            gc.enable()
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
    data = _read(path, limits, overlay)
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


def yaml_files(checked: Preflight) -> Iterator[str]:
    """The YAML files a preflight read: inventory files with a YAML extension, and every vars file."""
    vars_files = set(checked.vars_files)
    for path in checked.texts:
        if path in vars_files or path.endswith(_YAML_EXT):
            yield path


def compose(path: str | os.PathLike[str], checked: Preflight | None = None, limits: Limits | None = None) -> tuple[str, list[Any]]:
    """The text and libyaml node trees (one per document) of a YAML file, read through the same guard as
    check() (its text reused when check() read it). Raises LoadError."""
    import yaml

    path = os.fspath(path)
    try:
        text = checked.texts.get(path) if checked is not None else None
        if text is None:
            limits = limits or Limits()
            if not _regular(path):
                raise refuse(path, "is a directory, not a file")
            text = guard.text_of(_read(path, limits), path, limits)
    except Refused as exc:
        raise LoadError(exc.finding) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return text, list(yaml.compose_all(text, Loader=loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        origin = Origin(display_path(path), mark.line + 1 if mark else None, mark.column + 1 if mark else None)
        problem = exc.problem or exc.context or "invalid YAML"
        raise LoadError(Finding(origin, "load-error", "error", f"YAML syntax error: {problem}",
                                "fix the YAML syntax at this position")) from None
    except yaml.YAMLError as exc:
        raise LoadError(Finding(Origin(display_path(path)), "load-error", "error", f"YAML error: {exc}")) from None


def vars_file_error(path: str, text: str, docs: list[Any]) -> Finding | None:
    """Why ansible-core's host_group_vars cannot use a vars file it loads, as a load-error naming the file and
    line: several YAML documents, or a value other than a mapping that is not empty (null, false, 0, '', []).
    Shared by both loaders so they report it alike (ansible-core's own error has no file or line)."""
    import json

    import yaml

    shown = display_path(path)
    try:
        data = json.loads(text)  # Ansible tries JSON first
    except ValueError:
        pass
    else:
        if not data or isinstance(data, dict):
            return None
        return Finding(Origin(shown, 1, 1), "load-error", "error",
                       f"vars file holds a {type(data).__name__}, not a mapping of variable names",
                       "make the file a mapping (name: value), or empty")
    if len(docs) > 1:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            yaml.compose(text, Loader=loader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            return Finding(Origin(shown, mark.line + 1 if mark else None, mark.column + 1 if mark else None),
                           "load-error", "error", f"vars file holds {len(docs)} YAML documents; Ansible reads one",
                           "remove the '---' line that starts the second document, or split the file")
    if not docs:
        return None
    node = docs[0]
    if isinstance(node, yaml.MappingNode):
        return None
    if isinstance(node, yaml.SequenceNode) and node.tag == "tag:yaml.org,2002:seq":
        empty, kind = not node.value, "list"
    elif isinstance(node, yaml.ScalarNode) and node.tag.startswith("tag:yaml.org,2002:"):
        try:
            value = yaml.SafeLoader("").construct_object(node)
        except yaml.YAMLError:
            return None
        empty, kind = not value, type(value).__name__
    else:
        return None  # other tags: the loaders decide
    if empty:
        return None
    mark = node.start_mark
    return Finding(Origin(shown, mark.line + 1, mark.column + 1), "load-error", "error",
                   f"vars file holds a {kind}, not a mapping of variable names",
                   "make the file a mapping (name: value), or empty")

"""The fast loader: static YAML/INI inventories with group_vars/ and host_vars/, read with libyaml.

It applies ansible-core's precedence itself (tests/test_fast_differential.py
proves it equal to the reference loader) and never imports ansible. What it
does not model raises Unsupported, and the caller uses the reference loader.
"""
from __future__ import annotations

import dataclasses
import gc
import json
import os
from collections.abc import Container, Iterator, Sequence
from typing import Any

import yaml

from ...finding import Finding, Origin
from ...hostvars import HostVars, is_relevant, is_template
from . import ansible_cfg as fast_config, yaml_file as fast_yaml
from .. import guard, preflight
from . import replay as inventory_ops
from .. import role_conflicts as roles, unmatched_vars as vars_files
from ..group_names import invalid_names
from .inventory import Host, Inventory
from .values import Unsupported, Var, check_tags, from_json, from_node, keyed_items, scalar
from ...paths import DisplayPaths, display_path

__all__ = ["Unsupported", "load"]

_YAML_EXT = (".yml", ".yaml", ".json")
_JSON_STARTS = frozenset('{["-0123456789tfnNI')  # object, array, string, number, true, false, null, NaN, Infinity


class _Files:
    """Every YAML file read once, as preflight checked it (the first syntax error wins, as in preflight)."""

    def __init__(self, sources: Sequence[str], checked: preflight.Preflight) -> None:
        self.checked = checked
        self.docs: dict[str, tuple[str, list[Any]]] = {}
        self.walked: dict[str, str] = {}  # key -> the path the preflight read it by
        # Keyed by the real path of the source's directory (as host_group_vars looks files up), resolved once.
        bases = {os.path.abspath(s if os.path.isdir(s) else os.path.dirname(s)) for s in sources}
        real = {b: os.path.realpath(b) for b in bases}
        memo = checked.memo
        for text in preflight.yaml_files(checked):
            if text in checked.yaml_errors:  # read as INI, if at all
                continue
            base = os.path.dirname(text)
            while base not in real and os.path.dirname(base) != base:
                base = os.path.dirname(base)
            key = real[base] + text[len(base):] if base in real else os.path.realpath(text)
            if key in self.walked:  # the same file by a second path: composed, as it always was, for its errors
                preflight.compose(text, checked)
                continue
            self.walked[key] = text
            # A vars file whose variables the memo holds for this content composed cleanly then (so did an inventory
            # file whose calls it holds), and one whose variables the preflight's scan built has no alias or anchor
            # composing could fail on: composing either could raise no error, so skipping it keeps the first error.
            if text in checked.values:
                continue
            digest = checked.digests.get(text)
            if memo is None or not (memo.known(key, digest) or memo.knows_inventory(key, digest)):
                self.docs[key] = preflight.compose(text, checked)

    def get(self, path: str) -> tuple[str, list[Any]]:
        if path not in self.docs:
            self.docs[path] = preflight.compose(self.walked.get(path, path), self.checked)
        return self.docs[path]

    def values(self, path: str, shown: str) -> tuple[str, dict[str, Var]] | None:
        """The text of a vars file and the variables the preflight's scan built from it, if it built them with
        shown as their origins' file."""
        walked = self.walked.get(path, path)
        found = self.checked.values.get(walked)
        if found is None or found[0] != shown:
            return None
        return self.checked.texts[walked], found[1]

    def digest(self, path: str) -> bytes | None:
        """The digest of the content read for path, when a memo is in use."""
        return self.checked.digests.get(self.walked.get(path, path))


def _json(text: str) -> tuple[bool, Any]:
    """Ansible tries JSON before YAML for every file."""
    if "__ansible_" in text:
        raise Unsupported("Ansible JSON markers")
    start = text.lstrip(" \t\n\r")[:1]  # json's whitespace; a JSON text's first character starts its value
    if not start or start not in _JSON_STARTS:
        return False, None  # json.loads would fail: spares raising and catching its error for every YAML file
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _inventory_file(inv: Inventory, path: str, files: _Files) -> None:
    """As ansible-core's plugins in pdlint's order (host_list, yaml, ini, toml): the first that reads it wins."""
    if os.access(path, os.X_OK):
        raise Unsupported(f"{path} is executable (inventory script)")
    ext = os.path.splitext(path)[1]
    if ext == ".toml":
        raise Unsupported(f"{path} is a TOML inventory")
    shown = display_path(path)
    checked = files.checked
    if path in checked.ini_lines:  # not UTF-8: only the INI plugin decodes it (line by line)
        _ini(inv, checked.ini_lines[path], shown)
        return
    if ext in _YAML_EXT:
        if path in checked.yaml_errors:  # not YAML: the INI plugin's turn; if it refuses too, the YAML error
            _ini(inv, checked.texts[path], shown, checked.yaml_errors[path])
            return
        memo, key = checked.memo, files.digest(path)
        ops = memo.inventory_ops(path, key, shown, inv.safe_group_names) if memo is not None else None
        if ops is not None:  # the language server's memo: this content's calls, made again
            inventory_ops.replay(inv, ops)
            return
        text, nodes = files.get(path)
        is_json, data = _json(text)
        if not is_json:
            data = nodes[0] if len(nodes) == 1 else None
        if len(nodes) > 1 or not fast_yaml.is_inventory(data, is_json):
            _ini(inv, text, shown)  # the yaml plugin fails on it (empty, not a mapping, several documents)
            return
        if memo is None:
            fast_yaml.parse(inv, data, shown, is_json)
            return
        recorder = inventory_ops.Recorder(inv)
        fast_yaml.parse(recorder, data, shown, is_json)  # type: ignore[arg-type]
        memo.put_inventory_ops(path, key, shown, inv.safe_group_names, recorder.ops())
        return
    text = checked.texts.get(path)
    if text is None:
        raise Unsupported(f"{path}: not read by the preflight")
    if not ext:  # Ansible tries the yaml plugin first on files without an extension
        is_json, data = _json(text)
        if is_json and isinstance(data, dict):
            raise Unsupported(f"{path}: YAML inventory without extension")
        try:  # through preflight.compose like every YAML read; a YAML error here only means "not YAML"
            docs = preflight.compose(path, files.checked)[1]
        except preflight.LoadError:
            docs = []
        if len(docs) == 1 and isinstance(docs[0], yaml.MappingNode):
            raise Unsupported(f"{path}: YAML inventory without extension")
    _ini(inv, text, shown)


def _ini(inv: Inventory, text: str | list[str], shown: str, yaml_error: Finding | None = None) -> None:
    # ast/shlex only for INI inventories: cold start matters in a pre-commit hook
    from . import ini as fast_ini

    try:
        fast_ini.parse(inv, text, shown)
    except fast_ini.Rejected as exc:
        if yaml_error is None:
            raise
        raise preflight.LoadError(yaml_error) from exc


def _source(inv: Inventory, source: str, files: _Files) -> None:
    if "," in source and not os.path.exists(source):
        raise Unsupported("host list source")
    if not os.path.isdir(source):
        _inventory_file(inv, source, files)
        return
    for name in sorted(os.listdir(source)):
        if preflight.ignored(name):
            continue
        full = os.path.join(source, name)
        if os.path.isdir(full):
            raise Unsupported(f"{full}: nested inventory directory")
        _inventory_file(inv, full, files)


def _dir_files(path: str) -> list[str]:
    """DataLoader._get_dir_vars_files."""
    found: list[str] = []
    for name in sorted(os.listdir(path)):
        if name.startswith(".") or name.endswith("~"):
            continue
        ext = os.path.splitext(name)[1]
        full = os.path.join(path, name)
        if os.path.isdir(full) and not ext:
            found.extend(_dir_files(full))
        elif os.path.isfile(full) and (not ext or ext in _YAML_EXT):
            found.append(full)
    return found


def _find_vars_files(path: str, name: str, listing: frozenset[str] | None = None,
                     regular: Container[str] = ()) -> list[str]:
    """DataLoader.find_vars_files: <name>, then <name>.yml/.yaml/.json; a directory means all files in it.

    listing: the directory's names, listed once instead of a stat per candidate; regular: paths known to be
    regular files (the preflight stat'ed them), which need no second stat."""
    base = os.path.join(path, name)
    names = listing if os.sep not in name else None
    for ext in ("", *_YAML_EXT):
        full = base + ext
        if (name + ext in names) if names is not None else os.path.exists(full):
            return [full] if full in regular or not os.path.isdir(full) else _dir_files(full)
    return []


class _VarsFiles:
    """host_group_vars: group_vars/<group> and host_vars/<host> beside each inventory source, cached."""

    def __init__(self, sources: Sequence[str], files: _Files) -> None:
        self.dirs = [os.path.realpath(s if os.path.isdir(s) else os.path.dirname(s)) for s in sources]
        self.files = files
        self.cache: dict[tuple[str, str], dict[str, Var]] = {}
        self.listings: dict[str, frozenset[str] | None] = {}
        self._shown = DisplayPaths()  # display_path of a normalized absolute path
        self._folders = {subdir: [os.path.join(base, subdir) for base in self.dirs] for subdir in preflight.VARS_DIRS}

    def of(self, subdir: str, names: Sequence[str]) -> dict[str, Var]:
        """Merged in Ansible's order: each inventory source in turn, the entities in precedence order within it."""
        data: dict[str, Var] = {}
        for folder in self._folders[subdir]:
            for name in names:
                if name.startswith(os.path.sep):
                    continue
                key = (folder, name)
                if key not in self.cache:
                    merged: dict[str, Var] = {}
                    if key[0] not in self.listings:  # one isdir and one listing per directory
                        self.listings[key[0]] = frozenset(os.listdir(key[0])) if os.path.isdir(key[0]) else None
                    listing = self.listings[key[0]]
                    if listing is not None:
                        for path in _find_vars_files(*key, listing, self.files.walked):
                            merged.update(self._load(path))
                    self.cache[key] = merged
                data.update(self.cache[key])
        return data

    def _load(self, path: str) -> dict[str, Var]:
        memo, key, shown = self.files.checked.memo, self.files.digest(path), self._shown(path)
        if memo is None or key is None:
            return self._read(path, shown)
        found = memo.variables(path, key, shown)
        if found is None:
            found = self._read(path, shown)
            memo.put_variables(path, key, shown, found)
        return found

    def _read(self, path: str, shown: str) -> dict[str, Var]:
        built = self.files.values(path, shown)
        if built is not None:
            is_json, data = _json(built[0])
            if not is_json:  # Ansible tries JSON first: a JSON file's variables come from json below
                return built[1]
        text, nodes = self.files.get(path)
        is_json, data = _json(text)
        if is_json and isinstance(data, dict):
            return {k: from_json(v, shown) for k, v in data.items() if isinstance(k, str) and is_relevant(k)}
        if not is_json and len(nodes) == 1 and isinstance(nodes[0], yaml.MappingNode):
            return self._mapping(nodes[0], shown)
        error = preflight.vars_file_error(path, text, nodes)
        if error is not None:
            raise preflight.LoadError(error)
        if is_json or not nodes:
            return {}
        node = nodes[0]
        if isinstance(node, yaml.ScalarNode) and not scalar(node):
            return {}
        if isinstance(node, yaml.SequenceNode) and not node.value:
            return {}
        raise Unsupported(f"{path}: vars file is not a mapping")

    @staticmethod
    def _mapping(node: Any, shown: str) -> dict[str, Var]:
        result: dict[str, Var] = {}
        for key, key_node, value_node in keyed_items(node):
            if isinstance(key, str) and is_relevant(key):
                result[key] = from_node(value_node, shown, key_node)
            else:
                check_tags(value_node)
        return result


def _templated(value: Any) -> bool:
    """Whether Ansible would render it: any Jinja start string, comments included (they render to nothing)."""
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


class _Prefixed:
    """Each variable's origins keyed by its full path, and whether it is a template: computed once per value,
    since a group's values are shared by all its hosts. before: the previous load's (the language server's file
    memo hands unchanged files' variables back, the same objects); entries hold their variable, so an id is never
    taken for another's."""

    def __init__(self, before: _Prefixed | None = None) -> None:
        self.cache: dict[tuple[str, int], tuple[Var, bool, dict[Any, Any]]] = {}
        self.before = before.cache if before is not None else {}

    def __call__(self, key: str, var: Var) -> tuple[bool, dict[Any, Any]]:
        found = self.cache.get((key, id(var)))
        if found is None:
            found = self.before.get((key, id(var)))
            if found is None or found[0] is not var:
                value, below = var
                found = (var, _templated(value), {(key, *path): origin for path, origin in below.items()})
            self.cache[(key, id(var))] = found
        return found[1], found[2]

    def done(self) -> None:
        self.before = {}  # one load's worth is kept


class _Resolved:
    """Values, full-path origins and templated names of a set of variables (a host's groups, merged)."""

    def __init__(self, data: dict[str, Var], prefixed: _Prefixed) -> None:
        self.data = data
        self.values: dict[str, Any] = {}
        self.origins: dict[Any, Any] = {}
        self.templated: set[str] = set()
        for key, var in data.items():
            templated, full = prefixed(key, var)
            if templated:
                self.templated.add(key)
            self.values[key] = var[0]
            self.origins.update(full)


def _host_vars(name: str, base: _Resolved, own: dict[str, Var], prefixed: _Prefixed) -> HostVars | None:
    """The group-level values overridden by the host's own; None when a value is a template (Ansible renders it)."""
    if base.templated - own.keys():
        return None
    values = dict(base.values)
    origins = dict(base.origins)
    for key, var in own.items():
        if key in base.data:  # the host's value replaces the group's whole, origins below it included
            for path in prefixed(key, base.data[key])[1]:
                del origins[path]
        templated, full = prefixed(key, var)
        if templated:
            return None
        values[key] = var[0]
        origins.update(full)
    return HostVars(host=name, values=values, origins=origins)


def load(sources: Sequence[str], *, allow_lookups: bool = False, checked: preflight.Preflight | None = None,
         notes: list[Finding] | None = None, keep: Kept | None = None) -> list[HostVars]:
    """Every host with its pdlint variables, as the reference loader returns them. Raises Unsupported, LoadError.

    `checked` is the preflight of these sources (run here when not given); group-name warnings go to notes.
    Hosts with a templated value are rendered by the reference loader (ansible-core imported only then).
    keep, when given with notes, receives what load_hosts() needs to load some hosts again (unless a template
    made the reference loader take part).
    """
    # The cyclic GC rescans the ever-growing heap of parsed nodes (no cycles among them): a third of the time at 10k.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(sources, allow_lookups, checked, notes, keep)
    finally:
        if enabled:
            gc.enable()


@dataclasses.dataclass
class Kept:
    """What a whole load leaves for loading some of its hosts again while its inventory files are unchanged: the
    parsed inventory, its notes that depend only on them and the file list, and each host's role conflicts."""

    inventory: Inventory | None = None
    structure: list[Finding] = dataclasses.field(default_factory=list)
    roles: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)
    by_file: dict[str, list[Finding]] = dataclasses.field(default_factory=dict)  # the preflight's, by file
    inventory_files: list[str] = dataclasses.field(default_factory=list)  # as the preflight walked them


def _load(sources: Sequence[str], allow_lookups: bool, checked: preflight.Preflight | None,
          notes: list[Finding] | None, keep: Kept | None) -> list[HostVars]:
    settings = fast_config.check()
    sources = [s if "," in s else os.path.abspath(s) for s in sources]
    if checked is None:
        try:
            checked = preflight.check(sources)
        except guard.Refused as exc:
            raise preflight.LoadError(exc.finding) from None
    if checked.encrypted:
        raise Unsupported("vault-encrypted files")
    files = _Files([s for s in sources if "," not in s], checked)
    inv = Inventory(safe_group_names=settings.safe_group_names)
    for source in sources:
        _source(inv, source, files)
    inv.reconcile()
    structure = [*invalid_names(inv.groups, [s for s in sources if "," not in s], inv.declared),
                 *vars_files.unmatched(sources, inv.hosts, inv.groups)]
    if notes is not None:
        notes.extend(structure)
    names = sorted(inv.hosts)
    by_name = _VarsFiles(sources, files)
    ancestors = {g: inv.ancestors(g) for g in inv.groups}
    result = _resolve(inv, names, by_name, ancestors, checked.memo)
    templated = {name for name, hv in zip(names, result) if hv is None}
    final = [hv for hv in result if hv is not None]
    if templated:
        from ..reference import loader as reference

        rendered = iter(reference.load(sources, allow_lookups=allow_lookups, only=templated, checked=checked))
        final = [hv if hv is not None else next(rendered) for hv in result]
    if notes is not None:
        conflicts = list(_role_conflicts(inv, by_name, ancestors, final))
        notes.extend(f for _, f in conflicts)
        if keep is not None and not templated:
            keep.inventory, keep.structure = inv, structure
            keep.by_file, keep.inventory_files = checked.by_file, checked.inventory_files
            for host, finding in conflicts:
                keep.roles.setdefault(host, []).append(finding)
    return final


def load_hosts(sources: Sequence[str], inv: Inventory, checked: preflight.Preflight,
               names: Sequence[str]) -> tuple[list[HostVars], dict[str, list[Finding]]]:
    """Some hosts of an inventory a whole load kept (its files unchanged), from a preflight of the vars files they
    read: their variables as load() gives them, and their role conflicts. Raises Unsupported (a template, which
    the reference loader renders), LoadError."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        sources = [s if "," in s else os.path.abspath(s) for s in sources]
        if checked.encrypted:
            raise Unsupported("vault-encrypted files")
        files = _Files([s for s in sources if "," not in s], checked)
        by_name = _VarsFiles(sources, files)
        ancestors = {g: inv.ancestors(g) for g in inv.groups}
        names = sorted(names)
        result = _resolve(inv, names, by_name, ancestors, None)
        if any(hv is None for hv in result):
            raise Unsupported("a templated value")
        final = [hv for hv in result if hv is not None]
        roles: dict[str, list[Finding]] = {}
        for host, finding in _role_conflicts(inv, by_name, ancestors, final, names):
            roles.setdefault(host, []).append(finding)
        return final, roles
    finally:
        if enabled:
            gc.enable()


def read_by(inv: Inventory, sources: Sequence[str], path: str) -> list[str] | None:
    """The hosts whose variables a group_vars/host_vars file is read into (None: a file of no entity, or all)."""
    path = os.path.abspath(path)
    for base in {os.path.realpath(s if os.path.isdir(s) else os.path.dirname(s)) for s in sources if "," not in s}:
        for subdir in preflight.VARS_DIRS:
            folder = os.path.join(base, subdir)
            if not path.startswith(folder + os.sep):
                continue
            entry = path[len(folder) + 1:].split(os.sep)[0]
            name = vars_files.entity(entry, os.path.join(folder, entry))
            found = _find_vars_files(folder, name)
            if path not in found:
                return None
            if subdir == "host_vars":
                return [name] if name in inv.hosts else []
            if name == "all" or name not in inv.groups:
                return None if name == "all" else []
            return sorted(h for h, host in inv.hosts.items() if name in inv.host_groups(host))
    return None


def _member(host: Host, ancestors: dict[str, set[str]]) -> set[str]:
    """The groups a host is in, directly or through a child group, `all` aside."""
    return set(host.groups).union(*(ancestors[g] for g in host.groups)) - {"all"}


def _resolve(inv: Inventory, names: Sequence[str], by_name: _VarsFiles, ancestors: dict[str, set[str]],
             memo: Any) -> list[HostVars | None]:
    """The named hosts' variables (None for a host with a templated value)."""
    depth = inv.depths()
    by_groups: dict[tuple[str, ...], _Resolved] = {}
    prefixed = _Prefixed(getattr(memo, "prefixed", None))
    if memo is not None:
        memo.prefixed = prefixed
    result: list[HostVars | None] = []
    for name in names:
        host = inv.hosts[name]
        groups = tuple(sorted(_member(host, ancestors), key=lambda g: (depth[g], inv.groups[g].priority, g)))
        if groups not in by_groups:
            # Ansible's default VARIABLE_PRECEDENCE: inventory-file vars of all, then of the host's groups, then
            # the group_vars/ files of all, then of the groups; groups in (depth, priority, name) order.
            data = dict(inv.groups["all"].vars)
            for g in groups:
                data.update(inv.groups[g].vars)
            data.update(by_name.of("group_vars", ["all"]))
            data.update(by_name.of("group_vars", groups))
            by_groups[groups] = _Resolved(data, prefixed)
        own = dict(host.vars)
        own.update(by_name.of("host_vars", [name]))
        result.append(_host_vars(name, by_groups[groups], own, prefixed))
    prefixed.done()
    return result


def _role_conflicts(inv: Inventory, by_name: _VarsFiles, ancestors: dict[str, set[str]],
                    result: list[HostVars], only: Sequence[str] | None = None) -> Iterator[tuple[str, Finding]]:
    """roles.by_host() over the fast loader's groups (templated hosts are the reference loader's to judge), for
    every host or only those named."""
    hosts = inv.hosts if only is None else {name: inv.hosts[name] for name in only}
    members = {name: _member(host, ancestors) for name, host in hosts.items()}
    found: dict[str, roles.GroupRole] = {}
    for name in inv.groups if only is None else sorted(set().union(*members.values())):
        group = inv.groups[name]
        for layer in (group.vars, by_name.of("group_vars", [name])):
            var = layer.get(roles.ROLE)
            if name != "all" and var is not None:
                found[name] = (var[0], var[1].get((), Origin()))
    own = [name for name, host in hosts.items()
           if roles.ROLE in host.vars or roles.ROLE in by_name.of("host_vars", [name])]
    winner = {hv.host: hv.values.get(roles.ROLE) for hv in result}
    return roles.by_host(members, found, ancestors, own, winner)

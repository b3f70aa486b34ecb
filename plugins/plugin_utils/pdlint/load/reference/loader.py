"""The reference loader: ansible-core's InventoryManager + VariableManager.

Exact by construction (it is Ansible), with every value's origin from
ansible-core 2.19's data tags. Only static inventory plugins are enabled and
Jinja lookups are disabled unless the caller allows them.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ...finding import Finding, Origin
from ...hostvars import HostVars, Unresolved
from ...paths import display_path
from .. import compose, preflight, tagged, vault
from ..errors import LoadError, load_error
from ..notes import group_names, pd_look, role_conflicts
from ..notes import unmatched_vars as vars_files
from ..preflight import guard, safety
from ..preflight.layout import absolute_sources, is_host_list, source_dir
from .errors import as_load_error, error_origin, failure, message_of
from .patches import sandbox, winning_keys

_LOOKUPS = ("lookup", "query", "q")


def _renderer(loader: Any, variables: Any, allow_lookups: bool) -> tagged.Render:
    from ansible.errors import AnsibleError
    from ansible.template import Templar

    templar = Templar(loader=loader, variables=variables)
    if not allow_lookups:
        engine = getattr(templar, "_engine", None)
        env = getattr(engine, "environment", None)
        if env is None:  # pragma: no cover - guards against a changed ansible-core
            raise RuntimeError("cannot disable Jinja lookups on this ansible-core")

        def refused(*_args: Any, **_kwargs: Any) -> Any:
            raise AnsibleError("lookups are disabled (pass --allow-lookups to render them)")

        for name in _LOOKUPS:
            env.globals[name] = refused

    def render(value: Any) -> Any:
        try:
            return templar.template(value)
        except Exception as exc:  # noqa: BLE001 - any template failure is data, never a crash
            return Unresolved(message_of(exc))

    return render


def _loader(skip: set[str], checked: preflight.Preflight) -> Any:
    """ansible-core's DataLoader, reading vault-encrypted files in skip as empty (no password was given), and
    naming the vars file (and line) that host_group_vars cannot use, as the fast loader does."""
    from ansible.parsing.dataloader import DataLoader

    vars_files = {os.path.realpath(p): p for p in checked.vars_files}
    # An editor's unsaved buffers: the hosts ansible-core renders (templates) see the text the fast loader sees.
    buffers = {os.path.realpath(path): text for path, text in checked.overlay.items()}

    class Loader(DataLoader):
        def _get_file_contents(self, file_name: str) -> tuple[bytes, bool]:
            if buffers and isinstance(file_name, str) and file_name:
                path = self.path_dwim(file_name)
                text = buffers.get(os.path.realpath(path))
                if text is not None:
                    return self._decrypt_if_vault_data(_tagged(text.encode("utf-8"), path))
            return super()._get_file_contents(file_name)

        def load_from_file(self, file_name: str, *args: Any, **kwargs: Any) -> Any:
            real = os.path.realpath(self.path_dwim(file_name))
            if real in skip:
                return {}
            try:
                data = super().load_from_file(file_name, *args, **kwargs)
            except Exception as exc:
                _check_vars_file(real, vars_files)
                if real in vars_files:  # ansible-core's own error names no file (`!!int abc`): name it here
                    origin = error_origin(exc)
                    where = origin if origin.file else Origin(display_path(vars_files[real]))
                    raise LoadError(load_error(where, f"cannot load vars file: {message_of(exc)}",
                                               "fix the value the error names")) from None
                raise
            if data and not isinstance(data, Mapping):
                _check_vars_file(real, vars_files)
            return data

    return Loader()


def _tagged(data: bytes, path: str) -> Any:
    """data tagged with its file, as DataLoader._get_file_contents tags what it reads (origins come from it)."""
    try:
        from ansible._internal._datatag._tags import Origin as Tag
    except ImportError:  # an ansible-core without data tagging: plain bytes
        return data
    return Tag(path=path).tag(data)


def _check_vars_file(real: str, vars_files: dict[str, str]) -> None:
    """Raise the shared load-error of a vars file ansible-core could not use."""
    if real not in vars_files:
        return
    text, docs = compose.compose(real)
    error = compose.vars_file_error(real, text, docs)
    if error is not None:
        raise LoadError(error)


def load(sources: Sequence[str], *, allow_lookups: bool = False, allow_plugins: bool = False,
         limits: guard.Limits | None = None, vault_password_file: str | None = None,
         notes: list[Finding] | None = None, only: Collection[str] | None = None,
         checked: preflight.Preflight | None = None, keep_names: frozenset[str] = frozenset()) -> list[HostVars]:
    """Every host of the inventory (or only these) with its pdlint variables. Raises LoadError.

    Warnings found on the way (duplicate keys, files left encrypted, group names) are appended to notes;
    `checked` is the preflight a caller already ran over the same sources (its notes already taken).
    keep_names: variables kept beside vllm_*/pdlint_* (what the config file's `variables:` mapping reads).
    """
    # Absolute paths: ansible-core caches some path lookups across calls in one process.
    sources = absolute_sources(sources)
    notes = notes if notes is not None else []
    if checked is None:
        try:
            checked = preflight.check(sources, limits, allow_dynamic=allow_plugins)
        except guard.Refused as exc:
            raise LoadError(exc.finding) from None
        notes.extend(checked.findings)
    safety.configure(allow_plugins)
    from ansible import constants as C
    from ansible._internal._display_utils import DeferredWarningContext  # 2.19+: warnings as data, not stderr
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.vars.manager import VariableManager

    # Set on every call too: ansible.constants may have been imported before configure() ran.
    C.INVENTORY_ANY_UNPARSED_IS_FAILED = True
    C.INVENTORY_UNPARSED_WARNING = False
    if not allow_plugins:
        C.INVENTORY_ENABLED = os.environ["ANSIBLE_INVENTORY_ENABLED"].split(",")
        sandbox()
        late = safety.pinned_too_late()
        if late:  # an embedding program imported ansible-core first: its ansible.cfg may add plugins
            raise LoadError(load_error(Origin(), "ansible-core was configured before pdlint could pin "
                                       f"{', '.join(late)}", "call pdlint.load.preflight.safety.configure() before importing "
                                       "ansible"))
    password = vault.password_file(vault_password_file)
    skip = set() if password else {os.path.realpath(p) for p in checked.encrypted}
    notes.extend(vault.locked(p) for p in checked.encrypted if password is None)
    captured = DeferredWarningContext(variables={})
    try:
        with captured, winning_keys():
            loader = _loader(skip, checked)
            vault.secrets(password, loader)
            # Ansible also reads group_vars beside the "playbook directory", the loader's basedir ('.' by
            # default, cached by that relative name across calls): make it the inventory's own directory.
            first = sources[0] if sources and not is_host_list(sources[0]) else os.getcwd()
            loader.set_basedir(source_dir(first))
            inventory = InventoryManager(loader=loader, sources=list(sources))
            variables = VariableManager(loader=loader, inventory=inventory)
            notes.extend(group_names.invalid_names([g.name for g in inventory.groups.values()], sources))
            notes.extend(vars_files.unmatched(sources, inventory.hosts, inventory.groups))
            encrypted = {display_path(p) for p in checked.encrypted}
            locked = [] if password else _locked_entities(checked.encrypted)
            result = []
            for host in sorted(inventory.get_hosts(), key=lambda h: h.name):
                if only is not None and host.name not in only:
                    continue
                host_variables = variables.get_vars(host=host, include_hostvars=False)
                render = _renderer(loader, host_variables, allow_lookups)
                hv = tagged.host_vars(host.name, host_variables, render, keep_names)
                # group_names as VariableManager sets it for a play (get_vars without a play leaves it out)
                names = tuple(sorted(g.name for g in host.get_groups() if g.name != "all"))
                hidden = tuple(path for kind, name, path in locked
                               if (kind == "host_vars" and name == host.name)
                               or (kind == "group_vars" and name in {"all", *names}))
                result.append(_sealed(dataclasses.replace(hv, groups=names, hidden=hidden), encrypted))
            if only is None:
                notes.extend(pd_look.silent_pass(result, [g.name for g in inventory.groups.values()],
                                                 checked.texts, list(sources)))
                winner = {hv.host: hv.values.get(role_conflicts.ROLE) for hv in result}
                notes.extend(role_conflicts.from_ansible(inventory, loader, list(sources), winner))
            return result
    except AnsibleError as exc:
        inner = as_load_error(exc)
        if inner is not None:
            raise inner from None
        raise LoadError(failure(exc, captured.get_warnings(), checked.yaml_errors)) from exc


def _locked_entities(paths: list[str]) -> list[tuple[str, str, str]]:
    """(group_vars or host_vars, the group or host it is for, display path) of each vault-encrypted vars file."""
    found = []
    for path in paths:
        parts = os.path.normpath(path).split(os.sep)
        at = max((i for i, part in enumerate(parts[:-1]) if part in ("group_vars", "host_vars")), default=None)
        if at is not None:
            entry = os.sep.join(parts[:at + 2])
            found.append((parts[at], vars_files.entity(parts[at + 1], entry), display_path(path)))
    return found


def _sealed(hv: HostVars, encrypted: set[str]) -> HostVars:
    """Values read from a vault-encrypted file are secrets too."""
    paths = {path for path, origin in hv.origins.items() if origin.file in encrypted}
    return hv if not paths else dataclasses.replace(hv, secrets=hv.secrets | paths)


def renderer(variables: Mapping[str, Any], allow_lookups: bool = False) -> tagged.Render:
    """Render over plain variables as a host's templates are rendered (ansible-core's templar, its sandbox, lookups
    refused): the config file's `variables:` mapping (launch/mapping.py). Imports ansible-core."""
    from ansible.parsing.dataloader import DataLoader

    return _renderer(DataLoader(), dict(variables), allow_lookups)

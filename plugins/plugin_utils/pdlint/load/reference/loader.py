"""The reference loader: ansible-core's InventoryManager + VariableManager.

Exact by construction (it is Ansible), with every value's origin from
ansible-core 2.19's data tags. Only static inventory plugins are enabled and
Jinja lookups are disabled unless the caller allows them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from ...finding import Finding, Origin
from ...hostvars import HostVars, Unresolved
from .. import (
    group_names as groups,
    guard,
    preflight,
    role_conflicts as roles,
    safety,
    tagged,
    unmatched_vars as vars_files,
    vault,
)
from ...paths import display_path
from ..preflight import LoadError  # noqa: F401 - one class for both loaders, re-exported

_LOOKUPS = ("lookup", "query", "q")




def _error_origin(exc: BaseException) -> Origin:
    """Best-effort file:line:col of an Ansible error."""
    candidates: list[Any] = [getattr(exc, "obj", None), exc]
    cause: BaseException | None = exc
    while cause is not None:
        candidates.append(getattr(cause, "obj", None))
        candidates.append(cause)
        cause = cause.__cause__ or cause.__context__
    for item in candidates:
        found = tagged.origin_of(item)
        if found:
            return found
        mark = getattr(item, "problem_mark", None)
        name = getattr(item, "source", None) or getattr(mark, "name", None)
        if mark is not None and isinstance(name, str):
            return Origin(display_path(name), mark.line + 1, mark.column + 1)
    text = str(exc)
    match = re.search(r"(?:Origin|source): ([^\s:]+):(\d+):(\d+)", text)
    if match:
        return Origin(display_path(match.group(1)), int(match.group(2)), int(match.group(3)))
    return Origin()


def _message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    first = str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__
    return first


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
            return Unresolved(_message(exc))

    return render


def _sandbox() -> None:
    """No Jinja extensions (they are Python imports) and Jinja's sandbox, whatever ansible.cfg says."""
    from ansible._internal._templating import _jinja_common

    _jinja_common._TemplateConfig.jinja_extensions = []
    _jinja_common._TemplateConfig.sandbox_mode = _jinja_common._SandboxMode.DEFAULT


_LAYERING = ("ansible.vars.manager", "ansible.vars.plugins", "ansible.inventory.helpers",
             "ansible.plugins.vars.host_group_vars", "ansible.inventory.host", "ansible.inventory.group")


@contextlib.contextmanager
def _winning_keys() -> Iterator[None]:
    """Variables layered so the key object of the layer that wins is kept.

    ansible-core cannot tag null or a boolean with its origin, so pdlint points at the value's key; but
    `a | b` keeps a's key object, which names the layer the value was overridden in, not the one it came from.
    """
    import importlib

    from ansible import constants as C
    from ansible.utils import vars as ansible_vars

    original = ansible_vars.combine_vars

    def combine(a: Any, b: Any, merge: Any = None) -> Any:
        result = original(a, b, merge)
        if not (merge or merge is None and C.DEFAULT_HASH_BEHAVIOUR == "merge"):
            for key in b:  # re-insert under b's key object (dict assignment keeps the old key object)
                value = result.pop(key)
                result[key] = value
        return result

    from ansible.inventory.group import Group
    from ansible.inventory.host import Host

    def rekeyed(set_variable: Any) -> Any:
        def set_it(self: Any, key: Any, value: Any) -> None:
            old = self.vars.get(key)
            if not (isinstance(old, Mapping) and isinstance(value, Mapping)):  # a repeated host or group line
                self.vars.pop(key, None)
            set_variable(self, key, value)
        return set_it

    modules = [importlib.import_module(name) for name in _LAYERING]
    setters = {cls: cls.set_variable for cls in (Host, Group)}
    for module in modules:
        module.combine_vars = combine  # type: ignore[attr-defined]
    for cls, setter in setters.items():
        cls.set_variable = rekeyed(setter)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for module in modules:
            module.combine_vars = original  # type: ignore[attr-defined]
        for cls, setter in setters.items():
            cls.set_variable = setter  # type: ignore[method-assign]


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
                    origin = _error_origin(exc)
                    raise LoadError(Finding(
                        origin if origin.file else Origin(display_path(vars_files[real])), "load-error", "error",
                        f"cannot load vars file: {_message(exc)}", "fix the value the error names")) from None
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
    text, docs = preflight.compose(real)
    error = preflight.vars_file_error(real, text, docs)
    if error is not None:
        raise LoadError(error)


def _load_error(exc: BaseException) -> LoadError | None:
    """A LoadError raised inside ansible-core (from the DataLoader above), wrapped by whatever called it."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, LoadError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def _failure(exc: BaseException, warnings: list[Any], yaml_errors: Mapping[str, Finding]) -> Finding:
    """The load-error for a failed load: the parser's own complaint rather than 'Completely failed'."""
    origin = _error_origin(exc)
    message = _message(exc)
    if message.startswith("Completely failed to parse inventory source"):
        failed = message.rsplit(" ", 1)[-1]
        if failed in yaml_errors:  # named .yml but not YAML, and the INI plugin refused it too: the YAML error
            return yaml_errors[failed]
        causes = [w.event for w in warnings if "Failed to parse inventory with" in w.event.msg]
        # The INI parser's complaint is the useful one for files without a YAML extension, else the YAML one.
        source = message.rsplit(" ", 1)[-1]
        want = "'yaml'" if source.endswith((".yml", ".yaml", ".json")) else "'ini'"
        causes.sort(key=lambda event: want not in event.msg)
        if causes:
            chain, event = [], causes[0]
            while event is not None:
                chain.append(event.msg.strip().splitlines()[0] if event.msg.strip() else "")
                event = event.chain.event if event.chain is not None else None
            specific = [m for m in chain if m and not m.startswith(("Failed to parse inventory", "Failed to parse"))]
            reason = specific[0] if specific else chain[-1]
            message = f"cannot parse inventory: {reason}"
            origin = _line_of(source, reason) or Origin(display_path(source))
    return Finding(origin=origin, rule="load-error", severity="error", message=message)


# What each of the INI plugin's errors quotes from the offending line.
_QUOTED = (r"(?:got: |definition ')(.+?)'?(?::|$)", r"^Invalid host pattern '(.+?)' supplied",
           r"includes undefined group '(.+)'\.$", r"^(Section \[[^\]]+\]) not valid", r"^(Section \[[^\]]+\]) has",
           r"^Invalid section entry: '(.+?)'\.")


def _line_of(source: str, message: str) -> Origin | None:
    """The line an INI parse error quotes (ansible-core 2.19 drops the line number)."""
    quoted = next((m for m in (re.search(p, message) for p in _QUOTED) if m), None)
    if not quoted or not os.path.isfile(source):
        return None
    fragment = quoted.group(1).strip()
    if fragment.startswith("Section ["):
        fragment = fragment[len("Section "):]
    exact = "undefined group" in message and "Section [" in message and "includes" in message
    try:
        with open(source, encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                if exact and text.split("#")[0].strip() != fragment:  # the child line, not its section
                    continue
                if fragment and fragment in text:
                    return Origin(display_path(source), number, text.index(fragment) + 1)
    except OSError:
        return None
    return None


def load(sources: Sequence[str], *, allow_lookups: bool = False, allow_plugins: bool = False,
         limits: guard.Limits | None = None, vault_password_file: str | None = None,
         notes: list[Finding] | None = None, only: Collection[str] | None = None,
         checked: preflight.Preflight | None = None) -> list[HostVars]:
    """Every host of the inventory (or only these) with its pdlint variables. Raises LoadError.

    Warnings found on the way (duplicate keys, files left encrypted, group names) are appended to notes;
    `checked` is the preflight a caller already ran over the same sources (its notes already taken).
    """
    # Absolute paths: ansible-core caches some path lookups across calls in one process.
    sources = [s if "," in s else os.path.abspath(s) for s in sources]
    notes = notes if notes is not None else []
    if checked is None:
        try:
            checked = preflight.check(sources, limits, allow_dynamic=allow_plugins)
        except guard.Refused as exc:
            raise LoadError(exc.finding) from None
        notes.extend(checked.findings)
    safety.configure(allow_plugins)
    from ansible import constants as C
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible._internal._display_utils import DeferredWarningContext  # 2.19+: warnings as data, not stderr
    from ansible.vars.manager import VariableManager

    # Set on every call too: ansible.constants may have been imported before configure() ran.
    C.INVENTORY_ANY_UNPARSED_IS_FAILED = True
    C.INVENTORY_UNPARSED_WARNING = False
    if not allow_plugins:
        C.INVENTORY_ENABLED = os.environ["ANSIBLE_INVENTORY_ENABLED"].split(",")
        _sandbox()
        late = safety.pinned_too_late()
        if late:  # an embedding program imported ansible-core first: its ansible.cfg may add plugins
            raise LoadError(Finding(Origin(), "load-error", "error",
                                    f"ansible-core was configured before pdlint could pin {', '.join(late)}",
                                    "call pdlint.load.safety.configure() before importing ansible"))
    password = vault.password_file(vault_password_file)
    skip = set() if password else {os.path.realpath(p) for p in checked.encrypted}
    notes.extend(vault.locked(p) for p in checked.encrypted if password is None)
    captured = DeferredWarningContext(variables={})
    try:
        with captured, _winning_keys():
            loader = _loader(skip, checked)
            vault.secrets(password, loader)
            # Ansible also reads group_vars beside the "playbook directory", the loader's basedir ('.' by
            # default, cached by that relative name across calls): make it the inventory's own directory.
            first = sources[0] if sources and "," not in sources[0] else os.getcwd()
            loader.set_basedir(first if os.path.isdir(first) else os.path.dirname(first))
            inventory = InventoryManager(loader=loader, sources=list(sources))
            variables = VariableManager(loader=loader, inventory=inventory)
            notes.extend(groups.invalid_names([g.name for g in inventory.groups.values()], sources))
            notes.extend(vars_files.unmatched(sources, inventory.hosts, inventory.groups))
            encrypted = {display_path(p) for p in checked.encrypted}
            result = []
            for host in sorted(inventory.get_hosts(), key=lambda h: h.name):
                if only is not None and host.name not in only:
                    continue
                host_variables = variables.get_vars(host=host, include_hostvars=False)
                render = _renderer(loader, host_variables, allow_lookups)
                result.append(_sealed(tagged.host_vars(host.name, host_variables, render), encrypted))
            if only is None:
                winner = {hv.host: hv.values.get(roles.ROLE) for hv in result}
                notes.extend(roles.from_ansible(inventory, loader, list(sources), winner))
            return result
    except AnsibleError as exc:
        inner = _load_error(exc)
        if inner is not None:
            raise inner from None
        raise LoadError(_failure(exc, captured.get_warnings(), checked.yaml_errors)) from exc


def _sealed(hv: HostVars, encrypted: set[str]) -> HostVars:
    """Values read from a vault-encrypted file are secrets too."""
    paths = {path for path, origin in hv.origins.items() if origin.file in encrypted}
    return hv if not paths else dataclasses.replace(hv, secrets=hv.secrets | paths)

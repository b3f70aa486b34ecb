"""The reference loader: ansible-core's InventoryManager + VariableManager.

Exact by construction (it is Ansible), with every value's origin from
ansible-core 2.19's data tags. Only static inventory plugins are enabled and
Jinja lookups are disabled unless the caller allows them.
"""
from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from typing import Any

from ..finding import Finding, Origin
from ..hostvars import HostVars, Unresolved
from . import preflight, tagged
from .paths import display_path
from .preflight import LoadError

_SAFE_DEFAULTS = {
    # Static sources only: no scripts, no dynamic plugins (which may run code).
    "ANSIBLE_INVENTORY_ENABLED": "host_list,yaml,ini,toml",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
    "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
    "ANSIBLE_DEPRECATION_WARNINGS": "False",
    "ANSIBLE_LOCALHOST_WARNING": "False",
    "ANSIBLE_NOCOLOR": "True",
}
_LOOKUPS = ("lookup", "query", "q")


def configure(allow_plugins: bool = False) -> None:
    """Set Ansible's configuration before it is first imported."""
    for key, value in _SAFE_DEFAULTS.items():
        if allow_plugins and key == "ANSIBLE_INVENTORY_ENABLED":
            continue
        os.environ.setdefault(key, value)


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


def load(sources: Sequence[str], *, allow_lookups: bool = False, allow_plugins: bool = False,
         only: Collection[str] | None = None) -> list[HostVars]:
    """Every host of the inventory (or only these) with its pdlint variables. Raises LoadError."""
    # Absolute paths: ansible-core caches some path lookups across calls in one process.
    sources = [s if "," in s else os.path.abspath(s) for s in sources]
    problem = preflight.check(sources)
    if problem is not None:
        raise LoadError(problem)
    configure(allow_plugins)
    from ansible import constants as C
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    # Set on every call too: ansible.constants may have been imported before configure() ran.
    C.INVENTORY_ANY_UNPARSED_IS_FAILED = True
    C.INVENTORY_UNPARSED_WARNING = False
    if not allow_plugins:
        C.INVENTORY_ENABLED = _SAFE_DEFAULTS["ANSIBLE_INVENTORY_ENABLED"].split(",")
    try:
        loader = DataLoader()
        # Ansible also reads group_vars beside the "playbook directory", the loader's basedir ('.' by
        # default, cached by that relative name across calls): make it the inventory's own directory.
        first = sources[0] if sources and "," not in sources[0] else os.getcwd()
        loader.set_basedir(first if os.path.isdir(first) else os.path.dirname(first))
        inventory = InventoryManager(loader=loader, sources=list(sources))
        variables = VariableManager(loader=loader, inventory=inventory)
        result = []
        for host in sorted(inventory.get_hosts(), key=lambda h: h.name):
            if only is not None and host.name not in only:
                continue
            host_variables = variables.get_vars(host=host, include_hostvars=False)
            render = _renderer(loader, host_variables, allow_lookups)
            result.append(tagged.host_vars(host.name, host_variables, render))
        return result
    except AnsibleError as exc:
        origin = _error_origin(exc)
        raise LoadError(Finding(origin=origin, rule="load-error", severity="error", message=_message(exc))) from exc

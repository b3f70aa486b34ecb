"""What pdlint changes in ansible-core while it loads: no code run from the inventory, and the winning key's origin."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any


def sandbox() -> None:
    """No Jinja extensions (they are Python imports) and Jinja's sandbox, whatever ansible.cfg says."""
    from ansible._internal._templating import _jinja_common

    _jinja_common._TemplateConfig.jinja_extensions = []
    _jinja_common._TemplateConfig.sandbox_mode = _jinja_common._SandboxMode.DEFAULT


_LAYERING = ("ansible.vars.manager", "ansible.vars.plugins", "ansible.inventory.helpers",
             "ansible.plugins.vars.host_group_vars", "ansible.inventory.host", "ansible.inventory.group")


@contextlib.contextmanager
def winning_keys() -> Iterator[None]:
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
        cls.set_variable = rekeyed(setter)
    try:
        yield
    finally:
        for module in modules:
            module.combine_vars = original  # type: ignore[attr-defined]
        for cls, setter in setters.items():
            cls.set_variable = setter

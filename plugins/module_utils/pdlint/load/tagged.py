"""ansible-core 2.19+ values (tagged with their Origin) -> plain values + origins.

Shared by the reference loader and the `check` action plugin, so both see the
same values and origins.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..finding import Origin
from ..hostvars import HostVars, Path, Unresolved, is_relevant
from .paths import display_path

try:  # internal API of ansible-core 2.19+: origins are best effort
    from ansible._internal._datatag._tags import Origin as _AnsibleOrigin
except ImportError:  # pragma: no cover - older ansible-core
    _AnsibleOrigin = None

try:
    from ansible.parsing.vault import EncryptedString
except ImportError:  # pragma: no cover
    EncryptedString = ()  # type: ignore[assignment,misc]

Render = Callable[[Any], Any]


def origin_of(value: Any, base: str | None = None) -> Origin | None:
    """The Origin ansible-core tagged on value, with the path relative to base."""
    if _AnsibleOrigin is None:
        return None
    tag = _AnsibleOrigin.get_tag(value)
    if tag is None or not tag.path:
        return None
    return Origin(display_path(tag.path, base), tag.line_num, tag.col_num)


def plain(value: Any, path: Path, origins: dict[Path, Origin], render: Render | None) -> Any:
    """A copy of value with native types; origins recorded by path; templates rendered."""
    if isinstance(value, EncryptedString):  # never decrypted here, never printed
        origin = origin_of(value)
        if origin:
            origins[path] = origin
        return Unresolved("vault-encrypted value")
    origin = origin_of(value)
    if origin is not None:
        origins[path] = origin
    if render is not None and isinstance(value, str) and ("{{" in value or "{%" in value):
        rendered = render(value)
        if isinstance(rendered, Unresolved):
            return rendered
        result = plain(rendered, path, origins, None)
        if origin is not None:  # the template is what the user edits, not what it referenced
            origins[path] = origin
        return result
    if isinstance(value, Mapping):
        return {str(k): plain(v, (*path, str(k)), origins, render) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, (*path, i), origins, render) for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None:
        return value
    for native in (int, float, str):
        if isinstance(value, native):
            return native(value)
    return value


def host_vars(host: str, variables: Mapping[str, Any], render: Render | None = None) -> HostVars:
    """The pdlint-relevant part of one host's variables."""
    origins: dict[Path, Origin] = {}
    values = {
        name: plain(value, (name,), origins, render)
        for name, value in variables.items()
        if isinstance(name, str) and is_relevant(name)
    }
    return HostVars(host=host, values=values, origins=origins)


def from_play(hostvars: Mapping[str, Any], names: list[str]) -> list[HostVars]:
    """The play's hostvars (templated by Ansible) for these hosts: the action plugin's and filter's loader."""
    return [host_vars(name, {k: hostvars[name][k] for k in hostvars[name] if isinstance(k, str) and is_relevant(k)})
            for name in names]

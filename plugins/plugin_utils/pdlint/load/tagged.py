"""ansible-core 2.19+ values (tagged with their Origin) -> plain values + origins.

Shared by the reference loader and the `check` action plugin, so both see the
same values and origins.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..finding import Origin
from ..hostvars import KEY, HostVars, Path, Unresolved, is_relevant, is_template, leaves
from ..paths import display_path
from . import item_origins

try:  # internal API of ansible-core 2.19+: origins are best effort
    from ansible._internal._datatag._tags import Origin as _AnsibleOrigin
    from ansible._internal._datatag._tags import VaultedValue as _VaultedValue
except ImportError:  # pragma: no cover - older ansible-core
    _AnsibleOrigin = _VaultedValue = None

try:  # ansible-core 2.19+: a failed lazy template is a Marker value, raised when used
    from ansible._internal._templating._jinja_common import Marker as _Marker
except ImportError:  # pragma: no cover
    _Marker = None

try:
    from ansible.parsing.vault import EncryptedString
except ImportError:  # pragma: no cover
    EncryptedString = ()

Render = Callable[[Any], Any]


def origin_of(value: Any, base: str | None = None) -> Origin | None:
    """The Origin ansible-core tagged on value, with the path relative to base."""
    if _AnsibleOrigin is None:
        return None
    tag = _AnsibleOrigin.get_tag(value)
    if tag is None or not tag.path:
        return None
    return Origin(display_path(tag.path, base), tag.line_num, tag.col_num)


def _decrypted(value: Any) -> Any:
    """The plaintext of a `!vault` value when the user gave a vault password, else Unresolved."""
    from ansible.parsing.vault import VaultSecretsContext

    context = VaultSecretsContext.current(optional=True)
    if context is None or not context.secrets:
        return Unresolved("vault-encrypted value, no vault password given")
    try:
        return value._decrypt()
    except Exception as exc:  # noqa: BLE001 - a wrong password is data, never a crash
        return Unresolved(f"vault-encrypted value cannot be decrypted ({type(exc).__name__})")


def plain(value: Any, path: Path, origins: dict[Path, Origin], render: Render | None,
          secrets: set[Path] | None = None) -> Any:
    """A copy of value with native types; origins recorded by path; templates rendered; vaulted paths in secrets."""
    if isinstance(value, _Leafwise):  # a play value Ansible could not template whole: its leaves one by one
        return plain(value.raw, path, origins, value.render, secrets)
    if _Marker is not None and isinstance(value, _Marker):  # the play's lazy template error, e.g. a nested !vault
        try:
            value.trip()
        except Exception as exc:  # noqa: BLE001
            vault = "vault" in str(exc) or "decrypt" in str(exc)
            return Unresolved("vault-encrypted value, no vault password given" if vault else _reason(exc))
    if isinstance(value, EncryptedString):  # decrypted only with the user's password, never printed
        origin = origin_of(value)
        if origin:
            origins[path] = origin
        value = _decrypted(value)
        if isinstance(value, Unresolved):
            return value
    if secrets is not None and _VaultedValue is not None and _VaultedValue.is_tagged_on(value):
        secrets.add(path)
    origin = origin_of(value)
    if origin is not None:
        origins[path] = origin
    if render is not None and isinstance(value, str) and is_template(value):
        rendered = render(value)
        if isinstance(rendered, Unresolved):
            return rendered
        result = plain(rendered, path, origins, None, secrets)
        if origin is not None:  # the template is what the user edits, not what it referenced
            origins[path] = origin
        return result
    if isinstance(value, Mapping):
        return {str(k): _item(k, v, (*path, str(k)), origins, render, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [plain(v, (*path, i), origins, render, secrets) for i, v in enumerate(value)]
        if origin is not None and origin.line is not None and any(i is None or isinstance(i, bool) for i in items):
            _untagged_items(value, origin, path, items, origins)
        return items
    if isinstance(value, bool) or value is None:
        return value
    for native in (int, float, str):
        if isinstance(value, native):
            return native(value)
    return value


def _untagged_items(value: Any, origin: Origin, path: Path, items: list[Any], origins: dict[Path, Origin]) -> None:
    """Null and boolean list items carry no tag: their place from the file, as the fast loader has it."""
    tag = _AnsibleOrigin.get_tag(value)
    marks = item_origins.items(tag.path, tag.line_num, tag.col_num) if tag is not None and tag.path else None
    if marks is None or len(marks) != len(items):
        return
    for i, (line, column) in enumerate(marks):
        origins.setdefault((*path, i), Origin(origin.file, line, column))


def _item(key: Any, value: Any, path: Path, origins: dict[Path, Origin], render: Render | None,
          secrets: set[Path] | None) -> Any:
    """A mapping's value; null and booleans carry no origin in ansible-core, so they get their key's."""
    result = plain(value, path, origins, render, secrets)
    if path not in origins and (result is None or isinstance(result, bool)):
        found = origin_of(key)
        if found is not None:
            origins[path] = found
    return result


def host_vars(host: str, variables: Mapping[str, Any], render: Render | None = None,
              keep: frozenset[str] = frozenset(), groups: tuple[str, ...] = ()) -> HostVars:
    """The pdlint-relevant part of one host's variables (keep: names kept beside pdlint's, hostvars.is_relevant)."""
    origins: dict[Path, Origin] = {}
    secrets: set[Path] = set()
    values: dict[str, Any] = {}
    for name, value in variables.items():
        if isinstance(name, str) and is_relevant(name, keep):
            values[name] = _item(name, value, (name,), origins, render, secrets)
            found = origin_of(name)  # the key object: where the name is written
            if found is not None:
                origins[(str(name), KEY)] = found
    return HostVars(host=host, values=values, origins=origins, secrets=frozenset(secrets), groups=groups)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _holds_vault(value: Any) -> bool:
    return any(isinstance(item, EncryptedString) for _at, item in leaves(value))


class _Leafwise:
    """A play variable whose templating failed: its raw value (tagged with Ansible's origins), for plain() to
    template leaf by leaf with the host's templar, so only what fails is Unresolved, and at its own file:line."""

    def __init__(self, raw: Any, render: Render) -> None:
        self.raw, self.render = raw, render


def _host_render(view: Any) -> Render | None:
    """One value templated in the host's context (HostVarsVars keeps its TemplateEngine); Unresolved on failure."""
    templar = getattr(view, "_templar", None)
    if templar is None:
        return None

    def render(value: Any) -> Any:
        try:
            out = templar.template(value)
            if _Marker is not None and isinstance(out, _Marker):
                out.trip()
            return out
        except Exception as exc:  # noqa: BLE001 - a value Ansible cannot template is data, as in the CLI
            return Unresolved(_reason(exc))
    return render


def _play_value(view: Any, raw: Mapping[str, Any], key: str) -> Any:
    """One play variable, templated by Ansible; raw when it holds a !vault value (decrypted, or left
    unresolved, by plain() as in the CLI); leaf by leaf when Ansible cannot template it whole (a mapping with one
    undefined variable fails as a whole in hostvars: the CLI reports that value alone, and so does the play)."""
    if _holds_vault(raw.get(key)):  # templating it inside a filter fails the whole template: read it raw
        render = _host_render(view)  # and its other templates one by one, never left as literal text
        return raw[key] if render is None else _Leafwise(raw[key], render)
    try:
        value = view[key]
        if _Marker is None or not isinstance(value, _Marker):
            return value
        value.trip()  # a marker stands for a template error: raise it here
    except Exception as exc:  # noqa: BLE001 - a value Ansible cannot template is data, as in the CLI
        render = _host_render(view)
        # the raw value keeps Ansible's origin tags, which the failed template's result has not
        return Unresolved(_reason(exc)) if render is None or key not in raw else _Leafwise(raw[key], render)


def _play_host(hostvars: Any, name: str, keep: frozenset[str]) -> HostVars:
    # Each hostvars[name] / raw_get(name) runs the VariableManager for the host: once per host, not per key.
    view = hostvars[name]
    raw_get = getattr(hostvars, "raw_get", None)
    raw = raw_get(name) if raw_get is not None else {}
    raw = raw if isinstance(raw, Mapping) else {}
    groups = raw.get("group_names")  # the play's magic variable: sorted, `all` aside
    return host_vars(name, {k: _play_value(view, raw, k) for k in view if isinstance(k, str) and is_relevant(k, keep)},
                     keep=keep, groups=tuple(str(g) for g in groups) if isinstance(groups, list) else ())


def from_play(hostvars: Mapping[str, Any], names: list[str],
              keep_names: frozenset[str] = frozenset()) -> list[HostVars]:
    """The play's hostvars (templated by Ansible) for these hosts: the action plugin's and filter's loader;
    keep_names: variables kept beside pdlint's (what the config file's `variables:` mapping reads)."""
    return [_play_host(hostvars, name, keep_names) for name in names]

"""The config file's `variables:` mapping applied to one host: a role's own names rendered into the contract's.

Each expression is rendered as Ansible renders a host's templates (ansible-core's templar and sandbox, lookups
refused: load/reference/loader.py renderer()) over the host's kept variables plus `group_names` and
`inventory_hostname`, with ansible-core 2.19's native types (`{{ tp }}` with tp: 4 is 4). ansible-core is
imported only when a mapping is configured.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..config.variables import Mapped
from ..finding import Finding, Origin
from ..hostvars import KEY, HostVars, IdentityMemo, Path, Unresolved, is_relevant, is_template, leaves

# Rendering costs ~1 ms per expression and host; the hosts of a group share their value objects (the loaders give
# every host the group's), so a rendering is memoized (Memo, one per launch stage run) by the expression and the
# identity of what it reads.
Memo = IdentityMemo[Any]
MEMO_SIZE = 50_000
MAGIC = frozenset(("group_names", "inventory_hostname", "groups"))  # given by Ansible, never kept from files
# the templar's own globals (ansible-core 2.19's JinjaPluginIntercept/globals, Jinja's defaults): never a host's
_GLOBALS = frozenset(("lookup", "query", "q", "now", "undef", "omit", "range", "dict", "lipsum", "cycler", "joiner",
                      "namespace"))
_UNSET = object()


def _templates(value: Any) -> Iterator[str]:
    """Each string inside value that Ansible would render."""
    return (text for _at, text in leaves(value) if isinstance(text, str) and is_template(text))


def _parsed(expression: Any) -> frozenset[str]:
    """Every name the expression's templates read, Ansible's magic variables included."""
    import jinja2
    import jinja2.nodes

    env = jinja2.Environment()  # noqa: S701 - parsed only, never rendered
    found: set[str] = set()
    for text in _templates(expression):
        try:
            tree = env.parse(text)
        except jinja2.TemplateError:
            continue
        # The names loaded, from the syntax tree: jinja2.meta.find_undeclared_variables compiles the template,
        # and plain Jinja fails on Ansible's filters and tests (regex_replace) before it names a variable. A name
        # the template sets itself ({% set %}, a loop's) is kept too: one variable more, never one less.
        found |= {node.name for node in tree.find_all(jinja2.nodes.Name) if node.ctx == "load"}
    return frozenset(found - _GLOBALS)


def names_read(expression: Any) -> frozenset[str]:
    """The variables an expression reads (the names its Jinja syntax tree loads), Ansible's magic ones aside;
    a template that does not parse reads none (rendering it reports the error)."""
    return _parsed(expression) - MAGIC


def reads_host(variables: Iterable[Mapped]) -> bool:
    """Whether an expression reads inventory_hostname: then hosts that share their variables map differently."""
    return any("inventory_hostname" in _parsed(m.expression) for m in variables)


def keep_names(variables: Iterable[Mapped]) -> frozenset[str]:
    """What every loader must keep beside pdlint's own names for this mapping (select.load's keep_names)."""
    return frozenset(name for m in variables for name in names_read(m.expression))


def _trusted(value: Any) -> Any:
    """The config file's expressions are templates the user wrote: trusted as ansible-core 2.19 trusts a
    file's (an untrusted string is never rendered)."""
    from ansible.template import trust_as_template

    if isinstance(value, str):
        return trust_as_template(value) if is_template(value) else value
    if isinstance(value, Mapping):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


class _Render:
    """One templar per host, made when its first template needs it (none for literal values)."""

    def __init__(self, hv: HostVars) -> None:
        self.hv = hv
        self.render: Any = None

    def __call__(self, expression: Any) -> Any:
        """The rendered value, _UNSET (omit, Undefined, none), or Unresolved."""
        if next(_templates(expression), None) is None:
            return expression  # not a template: the value itself
        if self.render is None:
            self.render = self._templar()
        # rendered inside a mapping: ansible-core drops an omitted value there instead of failing
        out = self.render({"value": _trusted(expression)})
        if isinstance(out, Unresolved) or not isinstance(out, Mapping):
            return out
        value = out.get("value", _UNSET)
        return _UNSET if value is None or type(value).__name__.endswith("Undefined") else value

    def _templar(self) -> Any:
        if "ansible" not in sys.modules:  # the CLI pinned ansible-core's settings already; the play imported it
            from ..load.preflight import safety

            safety.configure()
        from ..load.reference.loader import renderer

        hv = self.hv
        plain = {k: v for k, v in hv.values.items() if not isinstance(v, Unresolved)}
        return renderer({**plain, "group_names": list(hv.groups), "inventory_hostname": hv.host})


def _lacking(hv: HostVars, read: frozenset[str], reason: str) -> str:
    """Why a mapped value cannot be rendered, naming the host variables it lacked."""
    missing = sorted(n for n in read if n not in hv.values)
    broken = sorted(n for n in read if isinstance(hv.values.get(n), Unresolved))
    parts = [f"the host has no {', '.join(missing)}"] if missing else []
    parts += [f"{n} cannot be rendered: {hv.values[n].reason}" for n in broken]
    return "; ".join(parts) or reason


def _sub_origins(hv: HostVars, source: str, target: str) -> dict[Path, Origin]:
    return {(target, *path[1:]): origin for path, origin in hv.origins.items()
            if path[:1] == (source,) and len(path) > 1 and KEY not in path}


@dataclasses.dataclass
class _Out:
    values: dict[str, Any]
    origins: dict[Path, Origin]
    secrets: set[Path]
    notes: dict[Path, str]


def _rendered(hv: HostVars, m: Mapped, render: _Render, memo: Memo) -> tuple[frozenset[str], Any]:
    """(the host variables m reads, its value for hv), from the memo when the same inputs were rendered."""
    parsed = memo.get((m,), "names")
    names: frozenset[str] = parsed[0] if parsed is not None else memo.put((m,), _parsed(m.expression), "names")
    inputs = tuple(hv.values.get(n) for n in sorted(names - MAGIC))
    plain = (hv.groups if "group_names" in names else None, hv.host if "inventory_hostname" in names else None)
    found = memo.get((m, *inputs), plain)
    value = found[0] if found is not None else memo.put((m, *inputs), render(m.expression), plain)
    return names - MAGIC, value


def _one(hv: HostVars, m: Mapped, out: _Out, render: _Render, memo: Memo) -> None:
    read, value = _rendered(hv, m, render, memo)
    if value is _UNSET:
        return
    if isinstance(value, Unresolved):
        if read - hv.values.keys() or any(isinstance(hv.values.get(n), Unresolved) for n in read):
            value = Unresolved(_lacking(hv, read, value.reason))
        out.values[m.name], out.origins[(m.name,)] = value, m.origin
        return
    out.values[m.name] = value
    out.origins[(m.name, KEY)] = m.origin
    source = next(iter(read)) if len(read) == 1 else None
    if source is not None and (source,) in hv.origins:
        came = hv.origins[(source,)]
        out.origins[(m.name,)] = came
        if value == hv.values.get(source):  # the value itself, not a part of it: its parts keep their lines
            out.origins.update(_sub_origins(hv, source, m.name))
        out.notes[(m.name,)] = f"{m.name} mapped by {m.origin} from {source} ({came})"
    else:
        out.origins[(m.name,)] = m.origin
        out.notes[(m.name,)] = f"{m.name} mapped by {m.origin}" + (f" from {', '.join(sorted(read))}" if read else "")
    if any(p[:1] == (n,) for p in hv.secrets for n in read):
        out.secrets.add((m.name,))  # a vaulted input makes the mapped value a secret (engine/redact.py)


def apply(hv: HostVars, variables: Sequence[Mapped], memo: Memo | None = None) -> tuple[HostVars, list[Finding]]:
    """hv with the mapped contract variables set (its own contract variables win) and the names only the mapping
    read dropped; the findings are the unresolved values the topology does not report itself. memo: shared by
    the hosts of one run (renderings of the same expression over the same value objects are made once)."""
    memo = memo if memo is not None else Memo(MEMO_SIZE)
    if not variables:
        return hv, []
    out = _Out({k: v for k, v in hv.values.items() if is_relevant(k)},
               {p: o for p, o in hv.origins.items() if isinstance(p[0], str) and is_relevant(p[0])},
               {p for p in hv.secrets if isinstance(p[0], str) and is_relevant(p[0])}, dict(hv.notes))
    render = _Render(hv)
    for m in variables:
        if m.name not in hv.values:
            _one(hv, m, out, render, memo)
    found = [_unresolved(hv, name, value, out.origins[(name,)]) for name, value in out.values.items()
             if name == "vllm_instances" and isinstance(value, Unresolved)]
    return dataclasses.replace(hv, values=out.values, origins=out.origins, secrets=frozenset(out.secrets),
                               notes=out.notes), found


def _unresolved(hv: HostVars, name: str, value: Unresolved, origin: Origin) -> Finding:
    return Finding(origin, "unresolved", "warning",
                   f"{name} cannot be rendered statically ({value.reason}); rules that need it are skipped",
                   "define the variables the mapping reads in the inventory, or fix the expression", (hv.host,))

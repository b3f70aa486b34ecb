"""Ansible's variable precedence, applied: each host's variables from its groups and its own files, with origins."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ....finding import Finding, Origin
from ....hostvars import HostVars, IdentityMemo, is_template, leaves
from ...notes import role_conflicts as roles
from ..inventory import Host, Inventory
from .render import HandOver, Scope, Unkept, render_leaves
from .values import Var
from .vars_dirs import VarsFiles


def _templated(value: Any) -> bool:
    """Whether Ansible would render it: any Jinja start string, comments included (they render to nothing)."""
    return any(isinstance(item, str) and is_template(item) for _at, item in leaves(value))


class _Prefixed:
    """Each variable's origins keyed by its full path, and whether it is a template: computed once per value,
    since a group's values are shared by all its hosts. before: the previous load's (the language server's file
    memo hands unchanged files' variables back, the same objects); entries hold their variable, so an id is never
    taken for another's."""

    def __init__(self, before: _Prefixed | None = None) -> None:
        self.cache: IdentityMemo[tuple[bool, dict[Any, Any]]] = IdentityMemo()
        self.before: IdentityMemo[tuple[bool, dict[Any, Any]]] | None = before.cache if before is not None else None

    def __call__(self, key: str, var: Var) -> tuple[bool, dict[Any, Any]]:
        found = self.cache.get((var,), key)
        if found is None:
            found = self.before.get((var,), key) if self.before is not None else None
            if found is None:
                value, below = var
                found = ((_templated(value), {(key, *path): origin for path, origin in below.items()}),)
            self.cache.put((var,), found[0], key)
        return found[0]

    def done(self) -> None:
        self.before = None  # one load's worth is kept


class _Resolved:
    """Values, full-path origins and templated names of a set of variables (a host's groups, merged), and the
    group_names of the hosts that read them. Hosts of one group chain without variables of their own are handed
    these very dicts (a profile is resolved once, not per host): nothing downstream writes to a HostVars' dicts."""

    def __init__(self, data: dict[str, Var], prefixed: _Prefixed, names: tuple[str, ...] = ()) -> None:
        self.data = data
        self.names = names
        self.values: dict[str, Any] = {}
        self.origins: dict[Any, Any] = {}
        self.templated: set[str] = set()
        for key, var in data.items():
            templated, full = prefixed(key, var)
            if templated:
                self.templated.add(key)
            self.values[key] = var[0]
            self.origins.update(full)


def _host_vars(name: str, base: _Resolved, own: dict[str, Var], prefixed: _Prefixed,
               keep: frozenset[str], wants: set[str]) -> HostVars | None:
    """The group-level values overridden by the host's own, templates rendered (load/fast/variables/render.py); None when a
    template needs ansible-core (the reference loader renders that host).

    Nothing but its name depends on the host when it has no variables of its own and no template: such hosts
    share the profile's dicts."""
    if not own:
        if not base.templated:
            return HostVars(host=name, values=base.values, origins=base.origins, groups=base.names)
        return _rendered(name, base.values, base.origins, base.templated, base.names, keep, wants)
    values = dict(base.values)
    origins = dict(base.origins)
    templated = base.templated - own.keys()
    for key, var in own.items():
        if key in base.data:  # the host's value replaces the group's whole, origins below it included
            for path in prefixed(key, base.data[key])[1]:
                del origins[path]
        is_templated, full = prefixed(key, var)
        if is_templated:
            templated = templated | {key}
        values[key] = var[0]
        origins.update(full)
    if templated:
        return _rendered(name, values, origins, templated, base.names, keep, wants)
    return HostVars(host=name, values=values, origins=origins, groups=base.names)


def _rendered(name: str, values: dict[str, Any], origins: dict[Any, Any], templated: set[str],
              groups: tuple[str, ...], keep: frozenset[str], wants: set[str]) -> HostVars | None:
    """The host's values with their templates rendered as ansible-core renders them (each keeps the template's own
    origin, as the reference loader's does); None when one needs ansible-core, or a variable not kept (into
    wants)."""
    scope = Scope(name, values, groups, keep)
    out = dict(values)
    try:
        for key in sorted(templated):
            out[key] = render_leaves(values[key], scope)
    except Unkept as exc:
        wants.add(exc.name)
        return None
    except HandOver:
        return None
    return HostVars(host=name, values=out, origins=origins, groups=groups)


def _member(host: Host, ancestors: dict[str, set[str]]) -> set[str]:
    """The groups a host is in, directly or through a child group, `all` aside."""
    return set(host.groups).union(*(ancestors[g] for g in host.groups)) - {"all"}


def _layered(inv: Inventory, groups: tuple[str, ...], by_name: VarsFiles) -> dict[str, Var]:
    """Ansible's default VARIABLE_PRECEDENCE: inventory-file vars of all, then of the host's groups, then the
    group_vars/ files of all, then of the groups; groups in (depth, priority, name) order."""
    data = dict(inv.groups["all"].vars)
    for g in groups:
        data.update(inv.groups[g].vars)
    data.update(by_name.of("group_vars", ["all"]))
    data.update(by_name.of("group_vars", groups))
    return data


def resolve(inv: Inventory, names: Sequence[str], by_name: VarsFiles, ancestors: dict[str, set[str]],
            memo: Any, wants: set[str] | None = None) -> list[HostVars | None]:
    """The named hosts' variables (None for a host with a template the fast path cannot render); wants receives
    the variables templates read that the inventory was not read keeping."""
    wants = wants if wants is not None else set()
    depth = inv.depths()
    by_groups: dict[tuple[str, ...], _Resolved] = {}
    prefixed = _Prefixed(getattr(memo, "prefixed", None))
    if memo is not None:
        memo.prefixed = prefixed
    chains: dict[tuple[str, ...], tuple[str, ...]] = {}  # a host's direct groups -> all its groups, in order
    result: list[HostVars | None] = []
    for name in names:
        host = inv.hosts[name]
        direct = tuple(host.groups)
        groups = chains.get(direct)
        if groups is None:
            groups = chains[direct] = tuple(sorted(_member(host, ancestors),
                                                   key=lambda g: (depth[g], inv.groups[g].priority, g)))
        base = by_groups.get(groups)
        if base is None:
            # Ansible's group_names: sorted, `all` aside (_member leaves it out already)
            base = by_groups[groups] = _Resolved(_layered(inv, groups, by_name), prefixed, tuple(sorted(groups)))
        own = by_name.of("host_vars", [name])
        if host.vars:
            own = {**host.vars, **own}
        result.append(_host_vars(name, base, own, prefixed, inv.keep, wants))
    prefixed.done()
    return result


def role_conflicts(inv: Inventory, by_name: VarsFiles, ancestors: dict[str, set[str]],
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

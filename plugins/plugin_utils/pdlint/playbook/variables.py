"""A host's variables in one role's task of one play, with Ansible's precedence and where each was set.

The layers, lowest first, as ansible-core's VariableManager.get_vars stacks them for a task of role R:
the defaults of the play's roles in order, then R's own defaults again; the inventory (the loader's values, already
merged by Ansible's group and host precedence); the play's `vars:`; its `vars_files` in order; the vars/main.yml of
the play's roles in order (their exported vars); R's vars/main.yml, then the `vars:` of R's entry; R's params (the
entry's own keys). tests/playbook/test_playbook_precedence.py runs ansible-playbook on generated projects and holds every
host's value equal to this.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..finding import Origin
from ..hostvars import HostVars, Unresolved
from ..load.tagged import origin_of
from .project import Play, Role


@dataclasses.dataclass(frozen=True)
class Scope:
    """A host's variables for one task: raw values (templates unrendered, ansible-core's tags kept) and origins."""

    values: Mapping[str, Any]
    origins: Mapping[str, Origin]
    unresolved: Mapping[str, Unresolved]  # inventory values the loader could not render


def _layers(play: Play, role: Role) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(below the inventory, above it), each lowest first."""
    mine = next((i for i, r in enumerate(play.roles) if r is role), len(play.roles))
    shared = [r for i, r in enumerate(play.roles) if r.exported or (r.after and i < mine)]
    # Role.get_default_vars: its dependencies' defaults, its parents', its own; Role.get_vars: its parents' vars,
    # its dependencies', its own, then the entry's vars; params: the parents', then its own
    below = [*(r.defaults for r in shared), *(d.defaults for d in role.dependencies),
             *(p.defaults for p in role.parents), role.defaults]
    above = [play.vars, *play.vars_files, *(r.vars for r in shared), *(p.vars for p in role.parents),
             *(d.vars for d in role.dependencies), role.vars, role.entry_vars, *(p.params for p in role.parents),
             role.params]
    return below, above


def scope(hv: HostVars, play: Play, role: Role) -> Scope:
    """hv's variables in a task of role in play."""
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    unresolved: dict[str, Unresolved] = {}
    below, above = _layers(play, role)

    def put(layer: Mapping[str, Any]) -> None:
        for name, value in layer.items():
            values[name] = value
            origins[name] = origin_of(value) or origin_of(layer) or play.origin
            unresolved.pop(name, None)

    for layer in below:
        put(layer)
    for name, value in hv.values.items():
        if isinstance(value, Unresolved):
            unresolved[name] = value
            values.pop(name, None)
        else:
            values[name] = value
        origins[name] = hv.origin(name)
    for layer in above:
        put(layer)
    return Scope(values, origins, unresolved)


def magic(hv: HostVars, play: Play, role: Role, groups: Mapping[str, list[str]]) -> dict[str, Any]:
    """The variables ansible-core sets itself that a launch template may read (VariableManager._get_magic_variables):
    the others (facts, hostvars, ansible_play_hosts) are undefined here, so what reads them is unresolved."""
    return {"inventory_hostname": hv.host, "inventory_hostname_short": hv.host.split(".")[0],
            "group_names": list(hv.groups), "groups": {k: list(v) for k, v in groups.items()},
            "playbook_dir": play.directory, "role_name": role.name, "role_path": role.path}

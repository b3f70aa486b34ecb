"""`NAME=value` before the program of a `vllm_args` line: the engine's environment, beside vllm_env. A
name vllm_env also sets to another value is a conflict (which one the engine gets depends on the
role's template); a name it lacks is added, at the assignment's own line and column."""
from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from ..finding import Origin
from ..hostvars import KEY, Unresolved
from ..vllm.arguments import cmdline
from ..yaml_text import yaml_text

if TYPE_CHECKING:
    from .command import _Host


def assign(host: _Host, assignments: Sequence[cmdline.Token], where: Mapping[cmdline.Token, Origin],
           target: MutableMapping[str, Any], prefix: tuple[Any, ...], key: str, shown: str) -> None:
    """Each assignment into target[key] (vllm_env, or an item's env); a different value already there: conflict."""
    if not assignments:
        return
    env = target.get(key)
    if env is not None and not isinstance(env, dict):
        return  # a template or another type: the schema rule and the build say so
    merged = dict(env or {})
    for token in assignments:
        name, value = token.text.split("=", 1)
        origin = where.get(token, host.hv.origin(*prefix, key))
        if name in merged:
            own = merged[name]
            if not isinstance(own, Unresolved) and str(own).strip() != value.strip():
                host.finding(origin, "vllm-args[conflict]",
                             f"{key}.{name} is {yaml_text(own)} ({host.hv.origin(*prefix, key, name)}), but {shown} "
                             f"gives {name}={value}: which one the engine gets depends on the role's template",
                             f"set {name} in one place: {key} or the command line")
            continue
        merged[name] = value
        host.origins[(*prefix, key, name)] = origin
        host.origins[(*prefix, key, name, KEY)] = origin
    if (*prefix, key) not in host.origins:
        host.origins[(*prefix, key)] = where.get(assignments[0], Origin())
    target[key] = merged

"""What each instance will be launched with: a host's variables turned into vLLM's arguments, before the schema
and the topology see them.

The inventory may say it three ways: the contract's names (`vllm_tensor_parallel_size`), vLLM's own argument names
(`vllm_max_model_len`), or a command line (`vllm_args`); a role's own names reach the contract through the config
file's `variables:` mapping. This stage turns each into the contract form, every value keeping its origin (the
flag's own line and column inside a command line), so no rule knows how a value was spelled.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..config.configuration import Config
from ..finding import Finding, rehosted
from ..hostvars import HostVars, Profiles
from . import given
from .positions import Texts

if TYPE_CHECKING:
    from ..vllm.arguments.cmdline import Parsed


@dataclasses.dataclass(frozen=True)
class Launched:
    """The hosts as the schema and the topology read them, what stood in the way, and the files read for them."""

    hosts: list[HostVars]
    findings: list[Finding]
    files: tuple[str, ...] = ()  # absolute: the --config FILEs of command lines


def prepare(hosts: Sequence[HostVars], config: Config, overlay: Mapping[str, str] | None = None) -> Launched:
    """Each host's variables in the contract's form: the config file's `variables:` first (a role's own names
    become the contract's), then the command line in vllm_args.

    overlay ({absolute path: text}, an editor's unsaved buffers) is where a command line's words are looked up
    before the files on disk."""
    texts = Texts(overlay)
    out: list[HostVars] = []
    found: list[Finding] = []
    files: set[str] = set()
    profiles: Profiles[tuple[HostVars, list[Finding]]] = Profiles(_key(config))
    parsed: dict[Any, Parsed] = {}  # command lines by words, release and folder
    rendered = _memo(config)
    for hv in hosts:
        known = profiles.get(hv)
        if known is None:  # a shared profile is launched once: its hosts keep sharing one set of dicts
            done, mapped = _mapped(hv, config, rendered)
            more: list[Finding] = []
            if given.command_line(done.values):
                # vLLM's argument parser (its tables, regexes and argparse) costs milliseconds to import: only a
                # host with a command line pays for it
                from . import command

                done, more, read = command.apply(done, texts, parsed)
                files |= read
            known = (hv, profiles.put(hv, (done, mapped + more)))
        first, (done, more) = known
        out.append(done if first is hv else hv if done is first else dataclasses.replace(
            hv, values=done.values, origins=done.origins, secrets=done.secrets, notes=done.notes))
        found.extend(more if first is hv else rehosted(more, first.host, hv.host))
    return Launched(out, found, tuple(sorted(files)))


def _memo(config: Config) -> Any:
    """The `variables:` mapping's memo for one run (mapping.Memo), or None without a mapping."""
    if not config.variables:
        return None
    from . import mapping

    return mapping.Memo(mapping.MEMO_SIZE)


def _mapped(hv: HostVars, config: Config, memo: Any) -> tuple[HostVars, list[Finding]]:
    """mapping.apply, imported only for a config with a `variables:` mapping (without one it returns hv)."""
    if not config.variables:
        return hv, []
    from . import mapping

    return mapping.apply(hv, config.variables, memo)


def _key(config: Config) -> Callable[[HostVars], Hashable]:
    """What a host's launch depends on beside its two dicts: notes, secrets, groups (group_names), and its name when
    the mapping reads inventory_hostname (the command line never does: its findings are re-issued per host)."""
    named = False
    if config.variables:
        from . import mapping

        named = mapping.reads_host(config.variables)
    return lambda hv: (tuple(hv.notes.items()), hv.secrets, hv.groups, hv.hidden, hv.host if named else None)

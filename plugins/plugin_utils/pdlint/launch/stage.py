"""What each instance will be launched with: a host's variables turned into vLLM's arguments, before the schema
and the topology see them.

The inventory may say it three ways: the contract's names (`vllm_tensor_parallel_size`), vLLM's own argument names
(`vllm_max_model_len`), or a command line (`vllm_args`); a role's own names reach the contract through the config
file's `variables:` mapping. This stage turns each into the contract form, every value keeping its origin (the
flag's own line and column inside a command line), so no rule knows how a value was spelled.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ..config.value import Config
from ..finding import Finding
from ..hostvars import HostVars
from . import command, mapping
from .positions import Texts


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
    for hv in hosts:
        hv, mapped = mapping.apply(hv, config.variables)
        hv, more, read = command.apply(hv, texts)
        out.append(hv)
        found.extend(mapped)
        found.extend(more)
        files |= read
    return Launched(out, found, tuple(sorted(files)))

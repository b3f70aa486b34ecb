"""What each instance will be launched with: a host's variables turned into vLLM's arguments, before the schema
and the topology see them.

The inventory may say it three ways: the contract's names (`vllm_tensor_parallel_size`), vLLM's own argument names
(`vllm_max_model_len`), or a command line (`vllm_args`); a role's own names reach the contract through the config
file's `variables:` mapping. This stage turns each into the contract form, every value keeping its origin (the
flag's own line and column inside a command line), so no rule knows how a value was spelled.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..config.value import Config
from ..finding import Finding
from ..hostvars import HostVars
from . import mapping


def prepare(hosts: Sequence[HostVars], config: Config) -> tuple[list[HostVars], list[Finding]]:
    """The hosts as the schema and the topology read them, and what stood in the way."""
    # the config file's `variables:` first: a role's own names become the contract's
    applied = [mapping.apply(hv, config.variables) for hv in hosts]
    return [hv for hv, _unused in applied], [f for _unused, found in applied for f in found]

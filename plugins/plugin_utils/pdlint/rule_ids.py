"""Every rule id, for what must know the names without loading the rules.

The config file and --select/--ignore are checked before pdlint looks up a cached result of the same run, so
a run whose result is cached never imports the rules, the vllm layer or the schema (a third of a warm run's
time). tests/cli/test_config.py holds this list equal to rules.REGISTRY.
"""
from __future__ import annotations

from collections.abc import Iterable

IDS = frozenset((
    "connector[config]", "connector[extra-key]", "connector[out-of-tree]", "connector[unknown]", "deployment[connector]",
    "deployment[incomplete]", "deployment[role-conflict]", "engine-id[duplicate]", "env[ignored]", "env[invalid]",
    "gpu[count]",
    "gpu[overlap]", "gpu[oversubscribed]", "gpu[unused]", "inventory[group-name]", "inventory[no-pd-hosts]", "inventory[unmatched-vars]",
    "kv-heads[moriio-replicated]", "kv-heads[nixl-prefill-replicated]", "kv-role[invalid]", "kv-role[missing]",
    "kv-role[moriio-explicit]", "kv-role[side]", "load-error", "memory[gpu-type]", "memory[kv-cache]",
    "memory[kv-capacity]", "memory[margin]", "memory[max-model-len]", "memory[weights]", "model-facts", "multinode[dp-ranks]",
    "multinode[nodes]", "multinode[shape]", "nixl[side-channel-host]", "parallel[dp-local]", "parallel[dp-rank]",
    "parallel[nnodes]", "parallel[node-rank]",
    "pd-mismatch[block-size]", "pd-mismatch[dtype]", "pd-mismatch[hma]", "pd-mismatch[kv-cache-dtype]",
    "pd-mismatch[kv-cache-layout]", "pd-mismatch[model]", "pd-mismatch[vllm-version]", "port[collision]", "port[http-mismatch]", "schema",
    "skip[unknown]", "skip[unused]", "tp-ratio[mooncake]", "tp-ratio[moriio-write]", "tp-ratio[moriio]",
    "tp-ratio[nixl]", "tp-ratio[p2p-nccl]", "tp[heads]", "tp[kv-heads]", "unresolved", "vllm-version[pre-release]",
    "vllm-version[unknown]",
    "vllm-args[conflict]", "vllm-args[invalid]",
    "yaml[key-duplicates]",
))


def family(rule_id: str) -> str:
    """A rule id's family: `tp` for `tp[heads]`; an id without a detail is its own family."""
    return rule_id.split("[", 1)[0]


def named(rule_id: str, names: Iterable[str]) -> bool:
    """Whether names (a select, ignore or pdlint_skip list) name rule_id itself or its family (`gpu`: `gpu[count]`)."""
    names = set(names)
    return rule_id in names or family(rule_id) in names

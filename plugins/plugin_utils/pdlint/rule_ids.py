"""Every rule id, for what must know the names without loading the rules.

The config file and --select/--ignore are checked before pdlint looks up a cached result of the same run, so
a run whose result is cached never imports the rules, the vllm layer or the schema (a third of a warm run's
time). tests/test_config.py holds this list equal to rules.REGISTRY.
"""
from __future__ import annotations

IDS = frozenset((
    "connector[config]", "connector[out-of-tree]", "connector[unknown]", "deployment[connector]",
    "deployment[incomplete]", "deployment[role-conflict]", "engine-id[duplicate]", "env[ignored]", "env[invalid]", "gpu[count]",
    "gpu[overlap]", "gpu[oversubscribed]", "inventory[group-name]", "inventory[unmatched-vars]",
    "kv-heads[moriio-replicated]", "kv-heads[nixl-prefill-replicated]", "kv-role[invalid]", "kv-role[missing]",
    "kv-role[moriio-explicit]", "kv-role[side]", "load-error", "model-facts", "nixl[side-channel-host]",
    "pd-mismatch[block-size]", "pd-mismatch[dtype]", "pd-mismatch[hma]", "pd-mismatch[kv-cache-dtype]",
    "pd-mismatch[model]", "pd-mismatch[vllm-version]", "port[collision]", "port[http-mismatch]", "schema",
    "skip[unknown]", "skip[unused]", "tp-ratio[mooncake]", "tp-ratio[moriio-write]", "tp-ratio[moriio]",
    "tp-ratio[nixl]", "tp-ratio[p2p-nccl]", "tp[heads]", "tp[kv-heads]", "unresolved", "vllm-version[pre-release]",
    "vllm-version[unknown]",
    "yaml[key-duplicates]",
))

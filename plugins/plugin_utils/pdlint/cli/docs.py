"""User documentation generated from the rules' docstrings (README table, `pdlint rules`)."""
from __future__ import annotations

from ..rules import REGISTRY
from ..vllm import history
from ..vllm.connectors import registry
from ..vllm.releases import KNOWN

# Rules that do not depend on the vLLM release (pdlint's own input checks, or facts of the inventory itself).
SAME_IN_EVERY_RELEASE = frozenset((
    "schema", "load-error", "unresolved", "yaml[key-duplicates]", "inventory[group-name]", "skip[unused]",
    "skip[unknown]", "model-facts", "vllm-version[unknown]", "vllm-version[pre-release]", "inventory[unmatched-vars]",
    "inventory[no-pd-hosts]",
    "deployment[role-conflict]", "deployment[incomplete]", "tp[heads]", "tp[kv-heads]",
    "engine-id[duplicate]", "gpu[oversubscribed]", "gpu[overlap]", "gpu[count]", "gpu[unused]", "multinode[shape]",
    "multinode[nodes]", "multinode[dp-ranks]", "vllm-args[conflict]", "memory[gpu-type]",
    "memory[max-model-len]",
))
# Rules bound to connectors whose behaviour did not change while the connector existed (read in every release).
SAME_WHILE_REGISTERED = {
    "kv-role[side]": ("MooncakeConnector", "MoRIIOConnector", "P2pNcclConnector", "LMCacheConnectorV1"),
    "kv-role[moriio-explicit]": ("MoRIIOConnector",),
    "port[http-mismatch]": ("MoRIIOConnector", "P2pNcclConnector"),
    "nixl[side-channel-host]": ("NixlConnector",),
}

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def rule_table() -> str:
    """The README's rule table, one row per registered rule."""
    rows = ["| rule | severity | what it catches |", "|---|---|---|"]
    for r in REGISTRY.values():
        rows.append(f"| `{r.id}` | {r.severity} | {r.summary.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def splice(readme: str) -> str:
    """readme with the table between the markers replaced by the generated one."""
    head, _unused, rest = readme.partition(START)
    _unused, _unused, tail = rest.partition(END)
    return f"{head}{START}\n{rule_table()}{END}{tail}"


def release_table(rule_id: str) -> str:
    """How rule_id behaves across the releases pdlint knows: one row per span of each deciding timeline."""
    every = f"{KNOWN[0]} - {KNOWN[-1]}"
    if rule_id == "connector[unknown]":
        return f"Across vLLM releases: the registered names differ by release ({every}); `pdlint versions` lists them.\n"
    if rule_id == "vllm-args[invalid]":
        return (f"Across vLLM releases: each release's own parser decides ({every}): its arguments, aliases and "
                "switches (vllm/data/args.json, read from each wheel), and how FlexibleArgumentParser rewrites the "
                "line (underscores, dotted keys from 0.9.2, -O, --config, the model's slot); "
                "tests/vllm/arguments/test_vllm_cmdline_differential.py holds pdlint's reading to each release's own.\n")
    if rule_id == "connector[extra-key]":
        return (f"Across vLLM releases: each release's own kv_connector/v1/ source decides ({every}): the keys each "
                "connector reads (vllm/data/extra_keys.json, read from each wheel; NIXL reads none before 0.11.0, "
                "kv_lease_duration from 0.22.0; MoRIIO read_mode from 0.23.0); tests/vllm/connectors/test_vllm_extra_keys.py holds "
                "the table to each release's source.\n")
    timelines = history.timelines(rule_id)
    if not timelines and rule_id in SAME_WHILE_REGISTERED:
        spans = "; ".join(f"{name} {span}" for name in SAME_WHILE_REGISTERED[rule_id]
                          for span, there in registry.history(name) if there)
        return f"Across vLLM releases: the same in every release that registers the connector ({spans}).\n"
    if not timelines:
        if rule_id in SAME_IN_EVERY_RELEASE:
            return f"Across vLLM releases: the same in every release pdlint knows ({every}).\n"
        return ""
    rows = ["Across vLLM releases:", "", "| releases | what vLLM does | source |", "|---|---|---|"]
    for timeline in timelines:
        for span, step in timeline.spans():
            rows.append(f"| {span} | {timeline.what}: {step.text} | {step.source} |".replace("\n", " "))
    return "\n".join(rows) + "\n"

"""Rules reported by the loader, the builder and the schema, documented like the others."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Topology
from ..base import Hit, rule


@rule("schema")
def schema(_topo: Topology) -> Iterator[Hit]:
    """A value breaks the JSON Schema of pdlint's variables (type, enum, range, unknown key).

    Reported by the schema stage at the line of the offending value, every
    error of every host; schemas/pdlint-vars.schema.json is the same schema
    editors use.

    A `vllm_*` name outside pdlint's contract is one of three things:
    an argument of the host's vLLM release as `vllm_<name>`
    (`vllm_max_model_len`, `vllm_enable_prefix_caching`; null = unset), its
    value checked as that release's parser takes it (type, choices, switches
    as true/false); a role's own name (`vllm_image`, `vllm_container_name`,
    or any listed in `own_variables:` of .pdlint.yaml): no finding; or a
    likely typo, an error with "did you mean". They are told apart by
    spelling alone: a name one edit from a contract name or an argument of
    the release (a letter dropped, added or changed, when the name after
    `vllm_` has 8 letters or more; two neighbouring letters swapped, 4 or
    more) is a typo, anything farther is the role's. The editor schema flags
    the typos of contract names; the CLI also those of vLLM's arguments.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: "4",
                 vllm_max_model_len: 32768, vllm_image: "vllm/vllm-openai"}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: four}
            d1: {vllm_pd_role: decode, vllm_port: 70000, vllm_tensor_paralel_size: 4,
                 vllm_gpu_memory_utilization: most}
    """
    return iter(())


@rule("load-error")
def load_error(_topo: Topology) -> Iterator[Hit]:
    """An inventory file cannot be read or parsed; pdlint exits 2.

    Reported by the loader with the parser's file:line:col.

    PASS:

        all:
          hosts:
            p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat}
            d1: {vllm_pd_role: decode, vllm_pd_deployment: chat}

    FAIL:

        all:
          hosts:
            p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat
            d1: {vllm_pd_role: decode}
    """
    return iter(())


@rule("unresolved", "warning")
def unresolved(_topo: Topology) -> Iterator[Hit]:
    """A value pdlint needs is a template or vault value it cannot render statically.

    Templates are rendered with the host's variables and lookups disabled;
    what cannot be rendered is never guessed, and the rules that need it are
    skipped for that instance. Vaulted values are never printed.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, tp: 4}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: "{{ tp }}"}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: "{{ lookup('env', 'TP') }}"}
            d1: {vllm_pd_role: decode}
    """
    return iter(())


@rule("yaml[key-duplicates]", "warning")
def key_duplicates(_topo: Topology) -> Iterator[Hit]:
    """A YAML mapping repeats a key; Ansible keeps the later value without saying so.

    Reported by the loader's first pass over every inventory and vars file, at
    the line of the repeated key (the message names the line of the first).

    PASS:

        all:
          hosts:
            p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_pd_deployment: chat}

    FAIL:

        all:
          hosts:
            p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat, vllm_tensor_parallel_size: 4,
                 vllm_tensor_parallel_size: 8}
            d1: {vllm_pd_role: decode, vllm_pd_deployment: chat}
    """
    return iter(())


@rule("inventory[no-pd-hosts]", "warning")
def no_pd_hosts(_topo: Topology) -> Iterator[Hit]:
    """No host takes part (none sets vllm_pd_role), yet the inventory looks like P/D: nothing would be checked.

    Reported by the loader when groups or hosts are named prefill or decode, or
    a --kv-transfer-config or kv_connector appears in any value; the hint holds
    the `variables:` lines of .pdlint.yaml that map the role's own names.

    PASS:

        all:
          children:
            prefill:
              hosts:
                p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat}
            decode:
              hosts:
                d1: {vllm_pd_role: decode, vllm_pd_deployment: chat}

    FAIL:

        all:
          children:
            prefill:
              hosts:
                p1: {tp: 4}
            decode:
              hosts:
                d1: {tp: 6}
    """
    return iter(())


@rule("inventory[group-name]", "warning")
def group_name(_topo: Topology) -> Iterator[Hit]:
    """A group name has characters other than letters, digits and _ (Ansible accepts it with a warning).

    Such names cannot be used as identifiers in templates and are rejected by
    some tools; the hint gives the name Ansible would transform it to.

    PASS:

        all:
          children:
            gpu_prefill:
              hosts:
                p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat}
          hosts:
            d1: {vllm_pd_role: decode, vllm_pd_deployment: chat}

    FAIL:

        all:
          children:
            gpu-prefill:
              hosts:
                p1: {vllm_pd_role: prefill, vllm_pd_deployment: chat}
          hosts:
            d1: {vllm_pd_role: decode, vllm_pd_deployment: chat}
    """
    return iter(())


@rule("inventory[unmatched-vars]")
def unmatched_vars(_topo: Topology) -> Iterator[Hit]:
    """A group_vars/ or host_vars/ file or directory matches no group or host of the inventory.

    Ansible reads host_vars/NAME(.yml|.yaml|.json) only for a host called NAME, and
    ignores every other file there without a word: a typo in the file name drops
    all its settings (decode falls back to TP 1). The hint names the closest real
    host or group. Examples after a `--- path` line are the files beside hosts.yml.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            node-p1: {vllm_pd_role: prefill}
            node-d1: {vllm_pd_role: decode}
        --- host_vars/node-d1.yml
        vllm_tensor_parallel_size: 4

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            node-p1: {vllm_pd_role: prefill}
            node-d1: {vllm_pd_role: decode}
        --- host_vars/node-dl.yml
        vllm_tensor_parallel_size: 4
    """
    return iter(())


@rule("deployment[role-conflict]")
def role_conflict(_topo: Topology) -> Iterator[Hit]:
    """A host is in two groups that set different vllm_pd_role values.

    Ansible keeps one of them (the group applied last) without a word, so the
    host silently serves one side and the deployment may have no instance of
    the other. The message names each group, the role it gives and where. A
    child group that overrides its parent's role is deliberate and not reported,
    nor is a host that sets vllm_pd_role itself.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          children:
            chat_prefill: {hosts: {p1: {}}}
            chat_decode: {hosts: {d1: {}}}
        --- group_vars/chat_prefill.yml
        vllm_pd_role: prefill
        --- group_vars/chat_decode.yml
        vllm_pd_role: decode

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          children:
            chat_prefill: {hosts: {p1: {}, node-x: {}}}
            chat_decode: {hosts: {d1: {}, node-x: {}}}
        --- group_vars/chat_prefill.yml
        vllm_pd_role: prefill
        --- group_vars/chat_decode.yml
        vllm_pd_role: decode
    """
    return iter(())

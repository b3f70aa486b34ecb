"""Vault-decrypted values never reach any output: their text is masked in every finding (and explain model)."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..contract import ROLES
from ..finding import Finding
from ..hostvars import HostVars, leaves

MASK = "<vaulted>"


def secret_texts(hosts: Iterable[HostVars]) -> set[str]:
    """The text of every vault-decrypted value of these hosts, and the Hugging Face cache folder a vaulted model id
    names (models--ORG--NAME: the model-facts messages name the places looked in).

    Not secrets, though vaulted: a side's role word (prefill, decode: every message names the side it is about,
    "decode TP <vaulted>"), and a deployment name that a host of these sets in clear."""
    hosts = list(hosts)
    clear = {text for hv in hosts for path, text in _leaves(hv.values, ()) if _name(path) == "pd_deployment"
             and not _secret(hv, path)}
    found = {text for hv in hosts for path in hv.secrets for leaf, text in _leaves(hv.get(*path), path)
             if text and not stated(_name(leaf), text, clear)}
    return found | {"models--" + text.strip("/").replace("/", "--") for text in found if "/" in text.strip("/")}


def stated(name: str | None, text: str, clear: set[str]) -> bool:
    """Whether the vaulted text of contract variable name is said anyway: a role word, or a deployment in clear."""
    return (name == "pd_role" and text in ROLES) or (name == "pd_deployment" and text in clear)


def _leaves(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(path, text) of each scalar in value (at path) that prints as text: not None, not a bool."""
    return ((at, str(item)) for at, item in leaves(value, path) if item is not None and not isinstance(item, bool))


def _name(path: tuple[Any, ...]) -> str | None:
    """The contract name a value's path sets (vllm_pd_role, vllm_instances[i].pd_role: pd_role), else None."""
    if len(path) == 3 and path[0] == "vllm_instances":
        return str(path[2])
    if len(path) == 1 and isinstance(path[0], str) and path[0].startswith("vllm_"):
        return path[0][len("vllm_"):]
    return None


def _secret(hv: HostVars, path: tuple[Any, ...]) -> bool:
    return any(path[:n] in hv.secrets for n in range(1, len(path) + 1)) if hv.secrets else False


def apply(findings: Sequence[Finding], secrets: set[str]) -> list[Finding]:
    """findings with every secret text in message, hint and deployment replaced by <vaulted> (whole tokens only)."""
    if not secrets:
        return list(findings)
    pattern = _pattern(secrets)

    def mask(text: str | None) -> str | None:
        return None if text is None else pattern.sub(MASK, text)

    # the deployment too: a vaulted vllm_pd_deployment names it (JSON, SARIF and explain print it)
    return [dataclasses.replace(f, message=mask(f.message) or "", hint=mask(f.hint), deployment=mask(f.deployment))
            for f in findings]


def vaulted_fields(hv: HostVars, index: int | None) -> frozenset[str]:
    """The contract names of one instance (a vllm_instances item, or the host's own values) whose value holds
    vault-decrypted text, dotted into mappings (`env.CUDA_VISIBLE_DEVICES`, `kv_transfer_config.kv_port`); `*` when
    vllm_args does (any launch argument may come from it). An item inherits its host's values, so their secrets."""
    out: set[str] = set()
    for path in hv.secrets:
        head, rest = path[0], path[1:]
        if head == "vllm_instances":
            if len(path) < 3 or path[1] != index:
                continue
            head, rest = path[2], path[3:]
        elif isinstance(head, str) and head.startswith("vllm_"):
            head = head[len("vllm_"):]
        else:
            continue
        out.add("*" if head == "args" else ".".join(str(p) for p in (head, *rest)))
    return frozenset(out)


def vaulted(fields: frozenset[str], name: str) -> bool:
    """Whether the value of name (dotted), what holds it, or anything in it is vault-decrypted."""
    return "*" in fields or any(f == name or name.startswith(f + ".") or f.startswith(name + ".") for f in fields)


def mask_text(text: str, secrets: set[str]) -> str:
    """text with every secret text replaced by <vaulted> (whole tokens only, as in findings)."""
    return _pattern(secrets).sub(MASK, text) if secrets else text


def _pattern(secrets: set[str]) -> re.Pattern[str]:
    return re.compile("|".join(rf"(?<![\w.]){re.escape(s)}(?![\w.])" for s in sorted(secrets, key=len, reverse=True)))

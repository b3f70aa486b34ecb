"""`vllm_*` names outside pdlint's contract: vLLM's arguments (checked as the host's release parses them), a
role's own names (no finding), and likely typos of either (an error: the value would silently be the default).

A typo is told from a role's own name by spelling alone, the same test in the CLI and the editor schema: the
name is one edit from a name pdlint reads or an argument of the release (one letter dropped, added or changed,
for names of 8 letters or more; two neighbouring letters swapped, for 4 or more), and is none of them itself.
"""
from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..contract import VARIABLES, host_var
from ..finding import Finding
from ..hostvars import HostVars, Unresolved, is_template
from ..vllm import releases
from ..vllm.arguments import args, variables
from .kv import finding

# The names the contract defines: every other vllm_* name is vLLM's argument, the role's own, or a typo.
CONTRACT = frozenset({host_var(v.name) for v in VARIABLES} | {"vllm_instances"})
LONG = 8  # (letters after vllm_) shorter names are too often a role's own (vllm_gpus, vllm_image) one letter from an argument
SWAP = 4


def one_edit(name: str, target: str) -> bool:
    """name is target with one letter dropped, added or changed (target >= LONG), or two neighbours swapped."""
    if name == target:
        return False
    if len(name) == len(target):
        diff = [i for i, (a, b) in enumerate(zip(name, target)) if a != b]
        if len(diff) == 2 and diff[1] == diff[0] + 1 and len(target) >= SWAP:
            return name[diff[0]] == target[diff[1]] and name[diff[1]] == target[diff[0]]
        return len(diff) == 1 and len(target) >= LONG
    if abs(len(name) - len(target)) != 1 or len(target) < LONG:
        return False
    short, long_ = sorted((name, target), key=len)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def typo_of(name: str, targets: Iterable[str]) -> str | None:
    """The vllm_* name name is likely a typo of (targets: vllm_* names), judged on the letters after vllm_."""
    close = sorted(t for t in targets if one_edit(name[5:], t[5:]))
    return close[0] if close else None


@functools.lru_cache(maxsize=4096)
def _typo(name: str, contract: frozenset[str], release: releases.Release) -> str | None:
    """typo_of over the names the release and the contract read: one answer per name and release, not per host
    (a role's own names sit in group_vars that thousands of hosts read)."""
    return typo_of(name, {*(c for c in contract if c.startswith("vllm_")), *("vllm_" + a for a in args.arguments(release))})


def typo_pattern(targets: Iterable[str]) -> str:
    """A regex for the vllm_* names one_edit calls no typo of targets (the editor schema allows those)."""
    alternatives: set[str] = set()
    for target in sorted(targets):
        word = target[5:]
        for i in range(len(word)):
            if len(word) >= LONG:
                alternatives.add(re.escape(word[:i]) + "[^" + re.escape(word[i]) + "]" + re.escape(word[i + 1:]))
                alternatives.add(re.escape(word[:i] + word[i + 1:]))
            if i + 1 < len(word) and len(word) >= SWAP and word[i] != word[i + 1]:
                alternatives.add(re.escape(word[:i] + word[i + 1] + word[i] + word[i + 2:]))
        if len(word) >= LONG:
            alternatives.update(re.escape(word[:i]) + "." + re.escape(word[i:]) for i in range(len(word) + 1))
    return "^vllm_(?!(?:" + "|".join(sorted(alternatives)) + ")$)"


def release_of(hv: HostVars) -> releases.Release:
    return releases.of_version(hv.values.get("vllm_version"))


def own(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _skipped(value: Any) -> bool:
    """Unset, or not known until Ansible renders it (a list with such an item too)."""
    if isinstance(value, list):
        return any(_skipped(v) and v is not None for v in value)
    return value is None or isinstance(value, Unresolved) or (isinstance(value, str) and is_template(value))


def check(hv: HostVars, contract: frozenset[str], patterns: tuple[str, ...]) -> Iterator[Finding]:
    """Findings for the host's vllm_* names that are not contract names."""
    release = release_of(hv)
    table = args.arguments(release)
    for name, value in hv.values.items():
        if not isinstance(name, str) or not name.startswith("vllm_") or name in contract:
            continue
        arg = table.get(name[5:])
        if arg is not None:
            wrong = None if _skipped(value) else variables.problem(arg, value, release)
            if wrong:
                yield finding(hv, (name,), f"{name}: {wrong} (vLLM {release} refuses to start)", None)
            continue
        if own(name, patterns):
            continue
        close = _typo(name, contract, release)
        if close:
            reader = "pdlint" if close in contract else f"vLLM {release}"
            yield finding(hv, (name,), f"unknown variable {name!r}: one letter from {close!r}, which {reader} "
                          "reads; as written nothing reads it (a role's own name: list it in own_variables of "
                          ".pdlint.yaml)", f"did you mean {close}?",
                          origin=hv.key_origin(name))

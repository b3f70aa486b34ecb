"""Findings on manifests in a manifest's words: the rules' messages and hints name the inventory's variables
(`vllm_env.NAME`, `vllm_disable_hybrid_kv_cache_manager`, a `vllm_args:` prefix), which a manifest spells as a
container's env entry and as the flag on its command line."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from ..finding import Finding
from ..vllm import releases
from ..vllm.arguments.args import arguments

_ENV = re.compile(r"\bvllm_env\.([A-Za-z_][A-Za-z0-9_]*)")
_VARIABLE = re.compile(r"\bvllm_([a-z][a-z0-9_]*)\b")
_LINE = "vllm_args: "
# what the rules say of a host that a pod says otherwise: its address comes from the downward API
_PHRASES = {"the host's routable IP address": "the pod's IP (valueFrom: fieldRef: fieldPath: status.podIP)"}


def worded(findings: Iterable[Finding]) -> list[Finding]:
    """Each finding with the inventory's variable names in its message and hint as a manifest writes them."""
    return [_worded(f) for f in findings]


def _worded(finding: Finding) -> Finding:
    message = _text(finding.message.removeprefix(_LINE))
    hint = _text(finding.hint) if finding.hint else finding.hint
    if (message, hint) == (finding.message, finding.hint):
        return finding
    return dataclasses.replace(finding, message=message, hint=hint)


def _text(text: str) -> str:
    for inventory, manifest in _PHRASES.items():
        text = text.replace(inventory, manifest)
    text = _ENV.sub(r"the container's env \1", text)
    flags = arguments(releases.NEWEST)
    return _VARIABLE.sub(lambda m: f"--{m.group(1).replace('_', '-')}" if m.group(1) in flags else m.group(0), text)

"""`pdlint versions`: the vLLM releases whose rules pdlint applies, and what changed in each for P/D."""
from __future__ import annotations

from ..vllm.connectors import registry
from ..vllm.releases import DEFAULT, KNOWN


def listing() -> str:
    """One line per covered release: connectors added and removed, the default marked."""
    lines = [f"pdlint applies the rules of these {len(KNOWN)} vLLM releases (vllm_version; default {DEFAULT}).",
             "A .postN or +local build selects its release; a series (0.25) its newest release.", ""]
    before: frozenset[str] = frozenset()
    for release in KNOWN:
        names = registry.NAMES.at(release)
        changes = [f"+{n}" for n in sorted(names - before)] + [f"-{n}" for n in sorted(before - names)]
        mark = " (default)" if release == DEFAULT else ""
        text = ", ".join(changes) if release != KNOWN[0] else f"{len(names)} connectors: {', '.join(sorted(names))}"
        lines.append(f"{release.text:10}{mark:10} {text}".rstrip())
        before = names
    return "\n".join(lines) + "\n"

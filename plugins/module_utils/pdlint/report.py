"""Reporters, chosen by name: findings -> text."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from .finding import Finding


def line(f: Finding) -> str:
    """`path:line:col: rule-id message`, the form editors and CI logs link."""
    tag = "" if f.severity == "error" else f" [{f.severity}]"
    return f"{f.origin}: {f.rule}{tag} {f.message}"


def text(findings: Sequence[Finding]) -> str:
    out = []
    for f in findings:
        out.append(line(f))
        extra = [f"hint: {f.hint}"] if f.hint else []
        if f.hosts:
            extra.append("hosts: " + ", ".join(f.hosts))
        if f.deployment:
            extra.append(f"deployment: {f.deployment}")
        if extra:
            out.append("  " + "; ".join(extra))
    return "\n".join(out) + ("\n" if out else "")


def as_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.as_dict() for f in findings], indent=2) + "\n"


REPORTERS: dict[str, Callable[[Sequence[Finding]], str]] = {"text": text, "json": as_json}


def summary(findings: Sequence[Finding], hosts: int, deployments: int, seconds: float) -> str:
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
    parts = [f"{n} {s}{'' if n == 1 else 's'}" for s, n in counts.items() if n or s == "error"]
    return f"pdlint: {', '.join(parts)} in {hosts} hosts, {deployments} deployments ({seconds:.2f} s)\n"

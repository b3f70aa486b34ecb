"""Reporters, chosen by name: findings (and, when asked, the suppressed ones) -> text."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ..finding import Finding
from .github import github


def line(f: Finding, suppressed: bool = False) -> str:
    """`path:line:col: rule-id message`, the form editors and CI logs link."""
    marks = ([] if f.severity == "error" else [f.severity]) + (["suppressed"] if suppressed else [])
    tag = f" [{', '.join(marks)}]" if marks else ""
    return f"{f.origin}: {f.rule}{tag} {f.message}"


def _entry(f: Finding, suppressed: bool) -> list[str]:
    extra = [f"hint: {f.hint}"] if f.hint else []
    if f.hosts:
        extra.append("hosts: " + ", ".join(f.hosts))
    if f.deployment:
        extra.append(f"deployment: {f.deployment}")
    return [line(f, suppressed)] + (["  " + "; ".join(extra)] if extra else [])


def text(findings: Sequence[Finding], suppressed: Sequence[Finding] | None = None) -> str:
    """Findings, then the suppressed ones marked as such when they are asked for."""
    out = [row for f in findings for row in _entry(f, False)]
    out += [row for f in suppressed or () for row in _entry(f, True)]
    return "\n".join(out) + ("\n" if out else "")


def as_json(findings: Sequence[Finding], suppressed: Sequence[Finding] | None = None) -> str:
    """The JSON contract; with --show-suppressed every object also has `suppressed` (true/false)."""
    if suppressed is None:
        return json.dumps([f.as_dict() for f in findings], indent=2) + "\n"
    rows = [{**f.as_dict(), "suppressed": False} for f in findings]
    rows += [{**f.as_dict(), "suppressed": True} for f in suppressed]
    return json.dumps(rows, indent=2) + "\n"


def _sarif(findings: Sequence[Finding], suppressed: Sequence[Finding] | None = None) -> str:
    # it describes every rule: the rules are imported only for SARIF output
    from .sarif import as_sarif

    return as_sarif(findings, suppressed or ())


def _github(findings: Sequence[Finding], suppressed: Sequence[Finding] | None = None) -> str:
    return github(findings)  # suppressed findings are never annotated; the summary counts them


# Every reporter: (findings, suppressed or None when not asked for) -> output.
Reporter = Callable[[Sequence[Finding], Sequence[Finding] | None], str]
REPORTERS: dict[str, Reporter] = {"text": text, "json": as_json, "sarif": _sarif, "github": _github}


def summary(findings: Sequence[Finding], hosts: int, deployments: int, seconds: float, suppressed: int = 0,
            assumed: str | None = None) -> str:
    """`pdlint: 2 errors, 1 warning (3 suppressed) in 6 hosts, 3 deployments (0.31 s)`.

    assumed: the vLLM release applied to instances that set no vllm_version, if any did not.
    """
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "info")}
    parts = [f"{n} {s}{'' if n == 1 else 's'}" for s, n in counts.items() if n or s == "error"]
    quiet = f" ({suppressed} suppressed)" if suppressed else ""
    release = f"; vLLM {assumed} assumed where vllm_version is unset" if assumed else ""
    return (f"pdlint: {', '.join(parts)}{quiet} in {_count(hosts, 'host')}, {_count(deployments, 'deployment')}"
            f"{release} ({seconds:.2f} s)\n")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"

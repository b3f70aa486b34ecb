"""The one rules core entry point: host variables in, sorted findings out (no I/O)."""
from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from . import redact, schema
from .build import build
from .finding import Finding
from .hostvars import HostVars
from .model import Topology
from .rules import CHECKS


def _schema(hosts: Sequence[HostVars]) -> list[Finding]:
    return [f for hv in hosts for f in schema.check(hv)]


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (origin, rule, message): the same group_vars line seen from many hosts is one problem."""
    merged: dict[tuple[object, ...], Finding] = {}
    for f in findings:
        key = (f.origin, f.rule, f.severity, f.message, f.hint, f.deployment)
        old = merged.get(key)
        merged[key] = f if old is None else Finding(
            f.origin, f.rule, f.severity, f.message, f.hint, tuple(sorted({*old.hosts, *f.hosts})), f.deployment)
    return sorted(merged.values())


def named(rule_id: str, names: Collection[str]) -> bool:
    """True when names lists the rule id or its family (`gpu` names `gpu[count]`)."""
    return rule_id in names or rule_id.split("[")[0] in names


def _skipped(finding: Finding, skips: dict[str, frozenset[str]]) -> bool:
    """pdlint_skip suppresses a rule for the hosts it is set on: drop it when every host skips it."""
    if not finding.hosts:
        return False
    return all(named(finding.rule, skips.get(h, frozenset())) for h in finding.hosts)


def check(hosts: Sequence[HostVars]) -> list[Finding]:
    """Every finding for these hosts: schema, build problems, then every registered rule."""
    return run(hosts)[0]


def run(hosts: Sequence[HostVars]) -> tuple[list[Finding], Topology]:
    """check(), and the topology it checked."""
    topology, problems = build(hosts)
    found = _schema(hosts) + problems
    for rule in CHECKS:
        found.extend(rule.check(topology))
    skips = {hv.host: frozenset(s for s in hv.values.get("pdlint_skip") or () if isinstance(s, str))
             for hv in hosts if isinstance(hv.values.get("pdlint_skip"), list)}
    kept = [f for f in merge(found) if not _skipped(f, skips)]
    return redact.apply(kept, redact.secret_texts(hosts)), topology

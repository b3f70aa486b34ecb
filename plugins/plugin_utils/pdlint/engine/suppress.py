"""pdlint_skip as data: which findings it suppresses, and which of its entries suppress nothing."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from ..config.configuration import families, is_rule_name
from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..rule_ids import family, named
from ..rules import REGISTRY

UNUSED, UNKNOWN = "skip[unused]", "skip[unknown]"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One item of one host's resolved pdlint_skip, with where it was written."""

    host: str
    name: str
    origin: Origin


def entries(hosts: Sequence[HostVars]) -> list[Entry]:
    """Every string item of every host's pdlint_skip (Ansible precedence already chose the list)."""
    out: list[Entry] = []
    for hv in hosts:
        skip = hv.values.get("pdlint_skip")
        if isinstance(skip, list):
            out.extend(Entry(hv.host, name, hv.origin("pdlint_skip", i)) for i, name in enumerate(skip)
                       if isinstance(name, str))
    return out


def split(findings: Iterable[Finding], marks: Sequence[Entry]) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed): a finding is suppressed when every host it concerns skips its rule."""
    skips: dict[str, set[str]] = {}
    for e in marks:
        skips.setdefault(e.host, set()).add(e.name)
    kept: list[Finding] = []
    suppressed: list[Finding] = []
    for f in findings:
        quiet = bool(f.hosts) and all(named(f.rule, skips.get(h, ())) for h in f.hosts)
        (suppressed if quiet else kept).append(f)
    return kept, suppressed


def _near(name: str) -> str | None:
    import difflib  # only to suggest a name: a run without a typo never imports it

    close = difflib.get_close_matches(name, [*REGISTRY, *families()], n=1)
    return f"did you mean {close[0]}? (`pdlint rules` lists them)" if close else "`pdlint rules` lists the rule ids"


def problems(findings: Sequence[Finding], marks: Sequence[Entry]) -> list[Finding]:
    """skip[unknown] for entries naming no rule; skip[unused] for entries that match no finding on any host."""
    concerns: dict[str, set[str]] = {}
    for f in findings:
        for h in f.hosts:
            concerns.setdefault(h, set()).add(f.rule)
    used: dict[tuple[Origin, str], bool] = {}
    hosts: dict[tuple[Origin, str], list[str]] = {}
    for e in marks:
        key = (e.origin, e.name)
        hosts.setdefault(key, []).append(e.host)
        used[key] = used.get(key, False) or any(named(r, [e.name]) for r in concerns.get(e.host, ()))
    out: list[Finding] = []
    for (origin, name), on in hosts.items():
        where = tuple(sorted(set(on)))
        if not is_rule_name(name):
            out.append(Finding(origin, UNKNOWN, REGISTRY[UNKNOWN].severity,
                               f"pdlint_skip names {name!r}, which is no pdlint rule or rule family",
                               _near(name), where))
        elif not used[(origin, name)] and family(name) != "skip":
            out.append(Finding(origin, UNUSED, REGISTRY[UNUSED].severity,
                               f"pdlint_skip entry {name!r} suppresses nothing: no {name} finding on "
                               f"{'this host' if len(where) == 1 else 'these hosts'}",
                               "remove the entry; it would silently hide a future problem", where))
    return out

"""The SARIF 2.1.0 reporter, shaped for GitHub code scanning (rules with help, repo-relative locations)."""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..finding import Finding
from ..paths import relative_uri, source_root
from ..rule_ids import family
from ..rules import REGISTRY
from ..rules.base import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
HOME = "https://github.com/pdlint/pdlint"
RULES_HELP = f"{HOME}#what-pdlint-checks"  # the README section whose table lists every rule
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
SRCROOT = "%SRCROOT%"


def _name(rule_id: str) -> str:
    """`tp-ratio[moriio]` -> `TpRatioMoriio`: SARIF names are identifiers, ids keep pdlint's spelling."""
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", rule_id) if part)


def _description(rule: Rule) -> str:
    """The prose of the rule's documentation, without its PASS/FAIL examples."""
    prose = re.split(r"^(?:PASS|FAIL):$", rule.doc, maxsplit=1, flags=re.M)[0]
    return " ".join(prose.split())


def descriptor(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": _name(rule.id),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _description(rule)},
        "help": {"text": rule.doc},
        "helpUri": RULES_HELP,
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": ["pdlint", family(rule.id)]},
    }


def _location(f: Finding, root: Path) -> list[dict[str, Any]]:
    if not f.origin.file:
        return []
    uri = relative_uri(f.origin.file, root)
    # outside the repository: an absolute file URI (code scanning cannot place it, other viewers can)
    artifact = ({"uri": uri, "uriBaseId": SRCROOT} if uri is not None
                else {"uri": Path(f.origin.file).resolve().as_uri()})
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if f.origin.line is not None:
        physical["region"] = {"startLine": f.origin.line,
                              **({"startColumn": f.origin.column} if f.origin.column is not None else {})}
    return [{"physicalLocation": physical}]


def _fingerprint(f: Finding, uri: str) -> str:
    """Stable across runs and line moves: rule, file, message and hosts, not the line."""
    key = "\0".join([f.rule, uri, f.message, ",".join(f.hosts), f.deployment or ""])
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def result(f: Finding, index: dict[str, int], root: Path, suppressed: bool = False) -> dict[str, Any]:
    text = f.message + (f"\nhint: {f.hint}" if f.hint else "")
    locations = _location(f, root)
    uri = locations[0]["physicalLocation"]["artifactLocation"]["uri"] if locations else ""
    out: dict[str, Any] = {
        "ruleId": f.rule,
        "level": LEVELS[f.severity],
        "message": {"text": text},
        "locations": locations,
        "partialFingerprints": {"pdlintFinding/v1": _fingerprint(f, uri)},
        "properties": {"hosts": list(f.hosts), **({"deployment": f.deployment} if f.deployment else {})},
    }
    if f.rule in index:
        out["ruleIndex"] = index[f.rule]
    if suppressed:
        out["suppressions"] = [{"kind": "inSource", "justification": "pdlint_skip in the inventory"}]
    return out


def as_sarif(findings: Sequence[Finding], suppressed: Sequence[Finding] = ()) -> str:
    """One run of pdlint: every registered rule in the driver, every finding as a result."""
    root = source_root()
    rules = list(REGISTRY.values())
    index = {r.id: i for i, r in enumerate(rules)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "pdlint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": HOME, "rules": [descriptor(r) for r in rules]}},
            "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [result(f, index, root) for f in findings]
            + [result(f, index, root, suppressed=True) for f in suppressed],
        }],
    }
    return json.dumps(log, indent=2) + "\n"

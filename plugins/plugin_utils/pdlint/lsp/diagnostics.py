"""Findings as LSP diagnostics: one list per file of the inventory, with rule id, docs link, hint and related places."""
from __future__ import annotations

import os
from collections.abc import Callable

from lsprotocol import types as t

from ..finding import Finding, Origin
from . import related
from . import text as tx
from .inventory import Outcome

DOCS = "https://github.com/pdlint/pdlint#what-pdlint-checks"
SEVERITY = {"error": t.DiagnosticSeverity.Error, "warning": t.DiagnosticSeverity.Warning,
            "info": t.DiagnosticSeverity.Information}
Read = Callable[[str], "str | None"]


def uri(path: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


def span(origin: Origin, read: Read) -> t.Range:
    """The value at origin: from its column to the end of its scalar (the whole line without a column)."""
    if origin.line is None:
        return t.Range(t.Position(0, 0), t.Position(0, 0))
    line = tx.line_of(read(os.path.abspath(origin.file)) or "", origin.line)
    found = tx.token(line, origin.column) if origin.column else None
    start, end = found if found else ((origin.column or 1) - 1, len(line))
    end = max(end, start)
    return t.Range(t.Position(origin.line - 1, tx.utf16(line, start)), t.Position(origin.line - 1, tx.utf16(line, end)))


def diagnostic(finding: Finding, outcome: Outcome, read: Read, origin: Origin | None = None) -> t.Diagnostic:
    message = finding.message + (f"\nhint: {finding.hint}" if finding.hint else "")
    info = [t.DiagnosticRelatedInformation(t.Location(uri(o.file), span(o, read)), label)
            for o, label in related.related(finding, outcome.topology)]
    return t.Diagnostic(
        range=span(origin or finding.origin, read), message=message, severity=SEVERITY.get(finding.severity),
        code=finding.rule, code_description=t.CodeDescription(href=DOCS), source="pdlint",
        related_information=info or None,
        data=finding.as_dict())  # the CLI's JSON object: where pdlint put it, before the editor's range


def by_file(outcome: Outcome, read: Read, anchor: str) -> dict[str, list[t.Diagnostic]]:
    """Diagnostics keyed by absolute path; findings without a file go on anchor (the file that was edited)."""
    out: dict[str, list[t.Diagnostic]] = {}
    found = [outcome.failed] if outcome.failed is not None else list(outcome.findings)
    for f in found:
        if f.origin.file and os.path.lexists(os.path.abspath(f.origin.file)):
            out.setdefault(os.path.abspath(f.origin.file), []).append(diagnostic(f, outcome, read))
        else:
            out.setdefault(anchor, []).append(diagnostic(f, outcome, read, Origin(anchor, 1, 1)))
    return out

"""The GitHub Actions reporter: one workflow command per finding, so findings show inline on the pull request."""
from __future__ import annotations

from collections.abc import Sequence

from ..finding import Finding
from ..paths import relative_uri, source_root

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """The message part of a workflow command (GitHub's escapeData)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file, title): also `:` and `,`, which delimit properties (escapeProperty)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(f: Finding, file: str | None) -> str:
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
        if f.origin.line is not None:
            props.append(f"line={f.origin.line}")
            if f.origin.column is not None:
                props.append(f"col={f.origin.column}")
    props.append(f"title={escape_property(f.rule)}")
    text = f.message + (f"\nhint: {f.hint}" if f.hint else "")
    if f.hosts:
        text += "\nhosts: " + ", ".join(f.hosts)
    return f"::{COMMANDS[f.severity]} {','.join(props)}::{escape_data(text)}"


def github(findings: Sequence[Finding]) -> str:
    """One workflow command per finding, paths relative to the repository root."""
    root = source_root()
    lines = [command(f, relative_uri(f.origin.file, root) or f.origin.file if f.origin.file else None)
             for f in findings]
    return "".join(line + "\n" for line in lines)

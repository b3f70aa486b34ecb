"""ansible-core's errors as pdlint's findings: the file, line and message of what it could not load."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ...finding import Finding, Origin
from ...paths import display_path
from .. import tagged
from ..errors import LoadError
from ..preflight.layout import YAML_EXT


def error_origin(exc: BaseException) -> Origin:
    """Best-effort file:line:col of an Ansible error."""
    candidates: list[Any] = [getattr(exc, "obj", None), exc]
    cause: BaseException | None = exc
    while cause is not None:
        candidates.append(getattr(cause, "obj", None))
        candidates.append(cause)
        cause = cause.__cause__ or cause.__context__
    for item in candidates:
        found = tagged.origin_of(item)
        if found:
            return found
        mark = getattr(item, "problem_mark", None)
        name = getattr(item, "source", None) or getattr(mark, "name", None)
        if mark is not None and isinstance(name, str):
            return Origin(display_path(name), mark.line + 1, mark.column + 1)
    text = str(exc)
    match = re.search(r"(?:Origin|source): ([^\s:]+):(\d+):(\d+)", text)
    if match:
        return Origin(display_path(match.group(1)), int(match.group(2)), int(match.group(3)))
    return Origin()


def message_of(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    first = str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__
    return first


def as_load_error(exc: BaseException) -> LoadError | None:
    """A LoadError raised inside ansible-core (from the DataLoader above), wrapped by whatever called it."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, LoadError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def failure(exc: BaseException, warnings: list[Any], yaml_errors: Mapping[str, Finding]) -> Finding:
    """The load-error for a failed load: the parser's own complaint rather than 'Completely failed'."""
    origin = error_origin(exc)
    message = message_of(exc)
    if message.startswith("Completely failed to parse inventory source"):
        failed = message.rsplit(" ", 1)[-1]
        if failed in yaml_errors:  # named .yml but not YAML, and the INI plugin refused it too: the YAML error
            return yaml_errors[failed]
        causes = [w.event for w in warnings if "Failed to parse inventory with" in w.event.msg]
        # The INI parser's complaint is the useful one for files without a YAML extension, else the YAML one.
        source = message.rsplit(" ", 1)[-1]
        want = "'yaml'" if source.endswith(YAML_EXT) else "'ini'"
        causes.sort(key=lambda event: want not in event.msg)
        if causes:
            chain, event = [], causes[0]
            while event is not None:
                chain.append(event.msg.strip().splitlines()[0] if event.msg.strip() else "")
                event = event.chain.event if event.chain is not None else None
            specific = [m for m in chain if m and not m.startswith(("Failed to parse inventory", "Failed to parse"))]
            reason = specific[0] if specific else chain[-1]
            message = f"cannot parse inventory: {reason}"
            origin = _line_of(source, reason) or Origin(display_path(source))
    return Finding(origin=origin, rule="load-error", severity="error", message=message)


# What each of the INI plugin's errors quotes from the offending line.
_QUOTED = (r"(?:got: |definition ')(.+?)'?(?::|$)", r"^Invalid host pattern '(.+?)' supplied",
           r"includes undefined group '(.+)'\.$", r"^(Section \[[^\]]+\]) not valid", r"^(Section \[[^\]]+\]) has",
           r"^Invalid section entry: '(.+?)'\.")


def _line_of(source: str, message: str) -> Origin | None:
    """The line an INI parse error quotes (ansible-core 2.19 drops the line number)."""
    quoted = next((m for m in (re.search(p, message) for p in _QUOTED) if m), None)
    if not quoted or not os.path.isfile(source):
        return None
    fragment = quoted.group(1).strip()
    if fragment.startswith("Section ["):
        fragment = fragment[len("Section "):]
    exact = "undefined group" in message and "Section [" in message and "includes" in message
    try:
        with open(source, encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                if exact and text.split("#")[0].strip() != fragment:  # the child line, not its section
                    continue
                if fragment and fragment in text:
                    return Origin(display_path(source), number, text.index(fragment) + 1)
    except OSError:
        return None
    return None

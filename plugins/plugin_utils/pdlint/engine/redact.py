"""Vault-decrypted values never reach any output: their text is masked in every finding."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..finding import Finding
from ..hostvars import HostVars

MASK = "<vaulted>"


def _scalars(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def secret_texts(hosts: Iterable[HostVars]) -> set[str]:
    """The text of every vault-decrypted value of these hosts."""
    return {text for hv in hosts for path in hv.secrets for text in _scalars(hv.get(*path)) if text}


def apply(findings: Sequence[Finding], secrets: set[str]) -> list[Finding]:
    """findings with every secret text in message and hint replaced by <vaulted> (whole tokens only)."""
    if not secrets:
        return list(findings)
    pattern = re.compile("|".join(rf"(?<![\w.]){re.escape(s)}(?![\w.])" for s in sorted(secrets, key=len, reverse=True)))

    def mask(text: str | None) -> str | None:
        return None if text is None else pattern.sub(MASK, text)

    return [dataclasses.replace(f, message=mask(f.message) or "", hint=mask(f.hint)) for f in findings]

"""Which kv_connector_extra_config keys each connector family reads, per release (data/extra_keys.json, generated
by tools/vllm_extra_keys.py from each release's kv_connector/v1/ source; tests/vllm/connectors/test_vllm_extra_keys.py holds it
equal to the wheels).

vLLM types kv_connector_extra_config `dict[str, Any]` (config/kv_transfer.py KVTransferConfig) and never checks its
keys: a connector reads those it asks for (get_from_extra_config / .get / [...]); any other key has no effect.
"""
from __future__ import annotations

import difflib
import functools
import json
import os
from typing import Any

from ..releases import R, Release

# registry.kind_of families whose keys the table holds; MultiConnector reads `connectors` and hands each item on
FAMILIES = {"nixl": "NIXL", "moriio": "MoRIIO", "mooncake": "Mooncake", "p2p-nccl": "P2pNccl", "multi": "MultiConnector"}


@functools.cache
def _table() -> dict[str, Any]:
    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "extra_keys.json"), encoding="utf-8") as fh:
        data: dict[str, Any] = json.loads(fh.read())
    return data


def _runs(family: str) -> list[tuple[int, int, frozenset[str]]]:
    return [(a, b, frozenset(k)) for a, b, k in _table()["families"].get(family, [])]


def _index(release: Release) -> int:
    releases: list[str] = _table()["releases"]
    if release.text in releases:
        return releases.index(release.text)
    return sum(1 for r in releases if R(r) <= release) - 1  # an unknown release: the nearest older known one


@functools.cache
def reads(family: str, release: Release) -> frozenset[str] | None:
    """The keys family reads in release; None where pdlint does not know (another family, no such connector)."""
    at = _index(release)
    return next((keys for first, last, keys in _runs(family) if first <= at <= last), None)


def no_effect(family: str, key: str, release: Release) -> tuple[str, str] | None:
    """(message, hint) for a key family ignores in release, None for a key it reads (or a family pdlint lacks)."""
    known = reads(family, release)
    if known is None or key in known:
        return None
    label = FAMILIES[family]
    message = f"kv_connector_extra_config key {key!r} has no effect: {label} in vLLM {release} never reads it"
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    if close:
        return message, f"did you mean {close[0]}?"
    releases: list[str] = _table()["releases"]
    having = [releases[i] for first, last, keys in _runs(family) if key in keys for i in range(first, last + 1)]
    if having:
        span = f"{having[0]}+" if having[-1] == releases[-1] else f"{having[0]}-{having[-1]}"
        return message, f"{label} reads it in vLLM {span}; remove it, or pin that release"
    others = [FAMILIES[f] for f in FAMILIES if f != family and key in (reads(f, release) or ())]
    if others:
        return message, f"it is {' and '.join(others)}'s key (left from another connector?): remove it"
    return message, "remove it"

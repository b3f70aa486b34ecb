"""The explain model as JSON (schemas/pdlint-explain.schema.json describes it)."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..finding import Finding
from .model import DeploymentView, Explanation, PairView

VERSION = 1  # of the JSON shape; bump when a key changes meaning
_CLASS_ONLY = frozenset(("prefill_engines", "decode_engines"))


def as_dict(expl: Explanation) -> dict[str, Any]:
    """Plain values: findings in the CLI's JSON finding contract, each deployment with its port table."""
    return {"version": VERSION, "deployments": [_deployment(d) for d in expl.deployments],
            "findings": [f.as_dict() for f in expl.findings], "mapped": list(expl.mapped)}


def _deployment(dep: DeploymentView) -> dict[str, Any]:
    out = _plain(dep)
    out["ports"] = [_plain(p) for p in dep.ports]
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Finding):
        return value.as_dict()
    if isinstance(value, PairView):  # one pair: no engine lists (a class of pairs names its engines)
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in _CLASS_ONLY or getattr(value, f.name)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # an engine's memory only where it is known: the shape of every other engine stays as it was
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not (f.name == "memory" and getattr(value, f.name) is None)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def render(expl: Explanation, colour: bool = False) -> str:
    return json.dumps(as_dict(expl), indent=2) + "\n"

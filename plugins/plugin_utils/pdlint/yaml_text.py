"""Values in messages as the user wrote them in YAML: null, true, 4.0, 'four', not Python's None/True."""
from __future__ import annotations

import math
from typing import Any


def yaml_text(value: Any) -> str:
    """A value in YAML flow style (strings single-quoted, so '8' and 8 stay apart)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        return (".inf" if value > 0 else "-.inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**30 else f"{str(value)[:12]}... ({len(str(abs(value)))} digits)"
    if isinstance(value, str):
        text = value if len(value) <= 60 else value[:57] + "..."
        return "'" + text.replace("'", "''") + "'"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_text(k) if not isinstance(k, str) else k}: {yaml_text(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_text(v) for v in value) + "]"
    return yaml_text(str(value))

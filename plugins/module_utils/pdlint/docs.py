"""User documentation generated from the rules' docstrings (README table, `pdlint rules`)."""
from __future__ import annotations

from .rules import REGISTRY

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def rule_table() -> str:
    """The README's rule table, one row per registered rule."""
    rows = ["| rule | severity | what it catches |", "|---|---|---|"]
    for r in REGISTRY.values():
        rows.append(f"| `{r.id}` | {r.severity} | {r.summary.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def splice(readme: str) -> str:
    """readme with the table between the markers replaced by the generated one."""
    head, _, rest = readme.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{rule_table()}{END}{tail}"

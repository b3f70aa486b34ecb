"""What a rule is: an id, a severity, and a check whose docstring is its user documentation."""
from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from ..finding import Finding, Origin
from ..topology.types import Engine, Instance, Topology


@dataclasses.dataclass(frozen=True)
class Hit:
    """A violation as a check sees it; the Rule adds its id and severity."""

    origin: Origin
    message: str
    hint: str | None = None
    hosts: tuple[str, ...] = ()
    deployment: str | None = None


Check = Callable[[Topology], Iterator[Hit]]
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    check_hits: Check

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.check_hits.__doc__ or "")

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0] if self.doc else ""

    def examples(self) -> dict[str, str]:
        """The PASS and FAIL inventory snippets of the docstring (indented blocks)."""
        import textwrap  # docs and tests read the examples, a run does not

        found: dict[str, str] = {}
        for label, block in re.findall(r"^(PASS|FAIL):\n\n((?:(?: {4}.*)?\n)+)", self.doc + "\n", re.M):
            found[label] = textwrap.dedent(block).strip("\n") + "\n"
        return found

    def check(self, topology: Topology) -> Iterator[Finding]:
        for hit in self.check_hits(topology):
            yield Finding(origin=hit.origin, rule=self.id, severity=self.severity, message=hit.message,
                          hint=hit.hint, hosts=tuple(sorted(set(hit.hosts))), deployment=hit.deployment)


def rule(rule_id: str, severity: str = "error") -> Callable[[Check], Rule]:
    """Declare a check as the rule rule_id (the registry in rules/__init__.py lists it)."""
    def wrap(check: Check) -> Rule:
        return Rule(rule_id, severity, check)
    return wrap


def hit(where: Instance | Engine, fields: Iterable[str], message: str, hint: str | None = None,
        also: Iterable[Instance | Engine] = (), deployment: str | None = None) -> Hit:
    """A hit at the first of fields set on where's lead instance, naming where's hosts and also's."""
    lead = where.lead if isinstance(where, Engine) else where
    hosts = list(_hosts(where))
    for other in also:
        hosts.extend(_hosts(other))
    return Hit(lead.at(*fields), message, hint, tuple(hosts), deployment or lead.deployment)


def each_body(topo: Topology, decide: Callable[[Instance], Iterable[T]]) -> Iterator[tuple[Instance, T]]:
    """(instance, item) for each item decide(instance) gives, in topo.instances order, asking decide once per engine
    body (Topology.bodies): decide must read only what per_body allows; the hit goes to each instance's own lines."""
    decided: list[tuple[int, tuple[T, ...]]] = []
    firsts, more = topo.bodies
    for first in firsts:
        items = tuple(decide(topo.instances[first]))
        if items:
            decided.extend((position, items) for position in more.get(first, (first,)))
    decided.sort(key=_first)  # hits are rare: the order of instances is restored for the few that have them
    for position, items in decided:
        inst = topo.instances[position]
        for item in items:
            yield inst, item


def _first(pair: tuple[int, object]) -> int:
    return pair[0]


def _hosts(item: Instance | Engine) -> tuple[str, ...]:
    return item.hosts if isinstance(item, Engine) else (item.host,)


def words(items: Sequence[object]) -> str:
    """[4, 8] -> '4 or 8' (numbers or names)."""
    text = [str(n) for n in items]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " or " + text[-1]

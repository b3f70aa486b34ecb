"""A launch template rendered for one host as the template module renders it, each output character traced back.

ansible-core's Templar renders the file (its sandbox, lookups refused without --allow-lookups, trim_blocks on as the template action sets
it). Before rendering, every `{{ ... }}` in the source is wrapped in marks naming it; after, the marks say which
output came from which expression, and are removed. An expression that reads one variable stands for where that
variable was set (a role default, a play var, an inventory line); any other output stands for the template's own
line and column.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..finding import Origin
from ..hostvars import Unresolved
from ..paths import display_path

_EXPRESSION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_OPEN, _MID, _CLOSE = "\x01", "\x02", "\x03"
_MARK = re.compile("\x01(\\d+)\x02|\x03")
_LOOKUPS = ("lookup", "query", "q")
_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("pdlint_playbook_lookups", default=False)
# the templar's own globals: never a variable of the host's
_GLOBALS = frozenset(("lookup", "query", "q", "now", "undef", "omit", "range", "dict", "lipsum", "cycler", "joiner",
                      "namespace", "true", "false", "none", "True", "False", "None"))


@dataclasses.dataclass(frozen=True)
class Expression:
    origin: Origin  # where the `{{` is written in the template
    names: frozenset[str]  # the variables it reads


@dataclasses.dataclass(frozen=True)
class Rendered:
    """The output text, and per character the expression it came from (-1: the template's own text)."""

    text: str
    source: tuple[int, ...]
    expressions: tuple[Expression, ...]
    template: str  # display path


def _at(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _names(expression: str) -> frozenset[str]:
    import jinja2
    import jinja2.nodes

    try:
        tree = jinja2.Environment().parse(expression)  # noqa: S701 - parsed only, never rendered
    except jinja2.TemplateError:
        return frozenset()
    return frozenset(n.name for n in tree.find_all(jinja2.nodes.Name) if n.ctx == "load") - _GLOBALS


def marked(source: str, path: str) -> tuple[str, tuple[Expression, ...]]:
    """source with each expression wrapped in marks, and the expressions by index."""
    shown = display_path(path)
    expressions: list[Expression] = []
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(source):
        parts += [source[last:match.start()], f"{_OPEN}{len(expressions)}{_MID}", match.group(0), _CLOSE]
        expressions.append(Expression(Origin(shown, *_at(source, match.start())), _names(match.group(0))))
        last = match.end()
    parts.append(source[last:])
    return "".join(parts), tuple(expressions)


def names_read(source: str) -> frozenset[str]:
    """Every variable a template's expressions and statements read (what the loaders must keep)."""
    return _names(source)


@contextlib.contextmanager
def lookups(allowed: bool) -> Iterator[None]:
    """Within: lookups rendered (--allow-lookups, as the inventory loaders render them), else refused."""
    token = _ALLOWED.set(allowed)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def templar(variables: Mapping[str, Any]) -> Any:
    """ansible-core's Templar over variables with lookups refused unless lookups(True) allows them (as the loaders
    render inventories)."""
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    made = Templar(loader=DataLoader(), variables=dict(variables))
    if _ALLOWED.get():
        return made
    env = getattr(getattr(made, "_engine", None), "environment", None)
    if env is None:  # pragma: no cover - guards against a changed ansible-core
        raise RuntimeError("cannot disable Jinja lookups on this ansible-core")

    def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise AnsibleError("lookups are disabled (pass --allow-lookups to render them)")

    for name in _LOOKUPS:
        env.globals[name] = refused
    return made


def render(path: str, source: str, variables: Mapping[str, Any]) -> Rendered | Unresolved:
    """The template at path (its text: source) rendered over variables, or why it cannot be."""
    from ansible.template import trust_as_template

    from ..load.reference.errors import message_of

    text, expressions = marked(source, path)
    try:
        out = templar(variables).template(trust_as_template(text), escape_backslashes=False,
                                          overrides={"trim_blocks": True})
    except Exception as exc:  # noqa: BLE001 - a template that fails to render is data, never a crash
        return Unresolved(message_of(exc))
    if not isinstance(out, str):
        return Unresolved(f"renders to a {type(out).__name__}, not text")
    return _traced(str(out), expressions, display_path(path))


def render_value(text: str, origin: Origin, variables: Mapping[str, Any]) -> Rendered | Unresolved:
    """A task argument's string rendered over variables, traced as render() traces a file; its expressions are at
    the scalar's origin (YAML gives no column inside a folded scalar)."""
    from ansible.template import trust_as_template

    from ..load.reference.errors import message_of

    marked_text, expressions = marked(text, origin.file)
    try:
        out = templar(variables).template(trust_as_template(marked_text), escape_backslashes=False)
    except Exception as exc:  # noqa: BLE001 - a value that fails to render is data, never a crash
        return Unresolved(message_of(exc))
    if not isinstance(out, str):
        return Unresolved(f"renders to a {type(out).__name__}, not text")
    at = tuple(dataclasses.replace(e, origin=origin) for e in expressions)
    return _traced(str(out), at, origin.file)


def _traced(out: str, expressions: Sequence[Expression], template: str) -> Rendered:
    chars: list[str] = []
    source: list[int] = []
    stack: list[int] = []
    last = 0
    for match in _MARK.finditer(out):
        chunk = out[last:match.start()]
        chars.append(chunk)
        source += [stack[-1] if stack else -1] * len(chunk)
        if match.group(1) is not None:
            stack.append(int(match.group(1)))
        elif stack:
            stack.pop()
        last = match.end()
    chunk = out[last:]
    chars.append(chunk)
    source += [stack[-1] if stack else -1] * len(chunk)
    return Rendered("".join(chars), tuple(source), tuple(expressions), template)

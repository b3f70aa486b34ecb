"""The templates people write in inventories, rendered as ansible-core 2.19 renders a host's variables, without it.

`{{ inventory_hostname }}`, a variable of the host (a pdlint one, or `ansible_host` and the like: the fast loader
then reads the inventory again keeping those names too), literals, `~`, `+` and the filters int, string, lower,
upper, trim, default (d) and to_json: what a side channel host, a port offset or a served model name is written
with. Each template text is parsed once (jinja2's parser: no code runs) into a plan, and evaluated per host over
the names it reads. Whatever this module cannot render exactly as ansible-core would (another name, filter or
node, an undefined variable, an error, a list or mapping result, a newline whose handling Ansible decides) raises
HandOver, and the caller gives that host to ansible-core (load/reference/). tests/load/test_fast_templates.py holds
every result equal to ansible-core's templar.

ansible-core 2.19's rules followed here (ansible/_internal/_templating/_jinja_bits.py AnsibleEnvironment.concat):
None parts are dropped; one part left keeps its native type (no literal_eval of strings), more join as text; `~`
joins str() of each side (None is 'None'); the host's magic variables win over inventory variables."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ....hostvars import is_relevant, is_template

_SCALARS = (str, int, float, bool, type(None))


class HandOver(Exception):
    """This template needs ansible-core."""


class Unkept(HandOver):
    """The template reads an inventory variable the fast loader did not keep (not a pdlint name): loaded again
    with it kept (load/fast/loader.py), the template renders."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


# The names ansible-core's VariableManager.get_vars(host) sets over the inventory's (as the reference loader renders
# a host): the three a template of an inventory reads are modelled, the others hand over (tests/load/test_fast_templates.py
# holds this set equal to ansible-core's).
MAGIC = frozenset(("inventory_hostname", "inventory_hostname_short", "group_names", "ansible_config_file",
                   "ansible_facts", "ansible_playbook_python", "ansible_version", "groups", "inventory_dir",
                   "inventory_file", "playbook_dir"))


class _Undefined:
    """A pdlint variable the host does not define (what default() replaces; anything else hands over)."""


UNDEFINED = _Undefined()

Plan = Callable[["Scope"], Any]
_PLANS: dict[str, Plan | None] = {}  # template text -> plan (None: hand over); texts repeat across hosts
_PLANS_MAX = 4096


class Scope:
    """One host's names as a template sees them: magic variables, then the host's pdlint variables (which may be
    templates themselves, rendered on first read)."""

    def __init__(self, host: str, values: Mapping[str, Any], groups: Sequence[str],
                 keep: frozenset[str] = frozenset()) -> None:
        self.host, self.values, self.groups, self.keep = host, values, groups, keep
        self._done: dict[str, Any] = {}
        self._busy: set[str] = set()

    def lookup(self, name: str) -> Any:
        if name == "inventory_hostname":
            return self.host
        if name == "inventory_hostname_short":
            return self.host.split(".", 1)[0]
        if name == "group_names":
            return list(self.groups)
        if name in MAGIC:
            raise HandOver(name)  # set by ansible-core (groups, playbook_dir ...), not by the inventory
        if not is_relevant(name, self.keep):
            raise Unkept(name)  # a variable the fast loader does not keep: loaded again with it kept
        if name in self._done:
            return self._done[name]
        if name not in self.values:
            if not is_relevant(name):
                raise HandOver(name)  # not a pdlint name: whether ansible-core defines it is its own to say
            return UNDEFINED
        if name in self._busy:
            raise HandOver(name)  # a loop: ansible-core's error
        value = self.values[name]
        if isinstance(value, str) and is_template(value):
            self._busy.add(name)
            try:
                value = render(value, self)
            finally:
                self._busy.discard(name)
        elif not _plain(value):
            raise HandOver(name)  # a mapping or list holding templates: ansible-core renders it lazily
        self._done[name] = value
        return value


def _plain(value: Any) -> bool:
    if isinstance(value, str):
        return not is_template(value)
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return True


def render(text: str, scope: Scope) -> Any:
    """text rendered for the scope's host, a scalar as ansible-core would give it. Raises HandOver."""
    plan = _PLANS.get(text, _PLANS)
    if plan is _PLANS:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[text] = _compile(text)
    if plan is None:
        raise HandOver(text)
    result = plan(scope)  # type: ignore[operator]
    if not isinstance(result, _SCALARS):
        raise HandOver(text)  # a list or mapping: its items' origins are ansible-core's to say
    return result


def render_leaves(value: Any, scope: Scope) -> Any:
    """value with each template string in it rendered (a copy where anything changed). Raises HandOver."""
    if isinstance(value, str):
        return render(value, scope) if is_template(value) else value
    if isinstance(value, dict):
        return {k: render_leaves(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render_leaves(v, scope) for v in value]
    return value


def _compile(text: str) -> Plan | None:
    if "\n" in text or "\r" in text or "\\" in text:
        return None  # a newline's place, and backslashes (escape_backslashes), are ansible-core's environment's
    from jinja2 import Environment, TemplateSyntaxError, nodes

    try:
        tree = Environment().parse(text)  # noqa: S701 - parsed only, never rendered: no output to escape
    except TemplateSyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], nodes.Output) or not tree.body[0].nodes:
        return None  # a statement, or nothing but comments
    try:
        parts = [_expr(n, nodes) for n in tree.body[0].nodes]
    except HandOver:
        return None
    if len(parts) == 1:
        return parts[0]

    def joined(scope: Scope) -> Any:
        return _concat([p(scope) for p in parts])
    return joined


def _concat(values: list[Any]) -> Any:
    """ansible-core's AnsibleEnvironment.concat: None parts dropped; none left is None, one is itself (native),
    more are joined as text."""
    kept = [v for v in values if v is not None]
    if any(v is UNDEFINED or not isinstance(v, _SCALARS) for v in kept):
        raise HandOver("a part that is not a scalar")
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else "".join(str(v) for v in kept)


def _expr(node: Any, nodes: Any) -> Plan:
    if isinstance(node, nodes.TemplateData):
        data = node.data
        return lambda _scope: data
    if isinstance(node, nodes.Const):
        const = node.value
        if not isinstance(const, _SCALARS) or (isinstance(const, str) and is_template(const)):
            raise HandOver("constant")  # a template inside a string constant: ansible-core defers it
        return lambda _scope: const
    if isinstance(node, nodes.Name) and node.ctx == "load":
        if node.name in ("true", "false", "none", "True", "False", "None"):
            raise HandOver(node.name)  # jinja2 folds these to Const; a Name of that spelling is not expected
        name = node.name
        return lambda scope: scope.lookup(name)
    if isinstance(node, nodes.Concat):
        items = [_expr(n, nodes) for n in node.nodes]
        return lambda scope: "".join(_str(p(scope)) for p in items)
    if isinstance(node, nodes.Add):
        left, right = _expr(node.left, nodes), _expr(node.right, nodes)
        return lambda scope: _add(left(scope), right(scope))
    if isinstance(node, nodes.Filter) and node.node is not None and not node.dyn_args and not node.dyn_kwargs:
        return _filter(node, nodes)
    raise HandOver(type(node).__name__)


def _str(value: Any) -> str:
    """`~`: str() of each side (None is 'None')."""
    if value is UNDEFINED or not isinstance(value, _SCALARS):
        raise HandOver("~ of a value that is not a scalar")
    return str(value)


def _add(left: Any, right: Any) -> Any:
    numbers = (int, float)
    if isinstance(left, numbers) and isinstance(right, numbers):
        return left + right
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    raise HandOver("+")  # ansible-core's error message


def _filter(node: Any, nodes: Any) -> Plan:
    subject = _expr(node.node, nodes)
    args = [_expr(a, nodes) for a in node.args]
    kwargs = {k.key: _expr(k.value, nodes) for k in node.kwargs}
    apply = _FILTERS.get(node.name)
    if apply is None:
        raise HandOver(node.name)

    def filtered(scope: Scope) -> Any:
        value = subject(scope)
        if value is UNDEFINED and node.name not in ("default", "d"):
            raise HandOver("undefined")  # ansible-core's message names the variable
        a = [p(scope) for p in args]
        kw = {k: p(scope) for k, p in kwargs.items()}
        if any(v is UNDEFINED for v in (*a, *kw.values())):
            raise HandOver("undefined")
        try:
            return apply(value, *a, **kw)
        except (TypeError, ValueError, OverflowError) as exc:  # a wrong argument: ansible-core's message
            raise HandOver(node.name) from exc
    return filtered


def _scalar_text(value: Any) -> str:
    if not isinstance(value, _SCALARS):
        raise HandOver("a filter of a value that is not a scalar")
    return str(value)


def _int(value: Any, default: Any = 0, base: Any = 10) -> Any:
    from jinja2.filters import do_int  # jinja2's own: ansible-core keeps it

    if not isinstance(value, _SCALARS) or not isinstance(base, int):
        raise HandOver("int")
    return do_int(value, default, base)


def _default(value: Any, default_value: Any = "", boolean: Any = False) -> Any:
    if value is UNDEFINED or (boolean and not value):
        return default_value
    return value


def _to_json(value: Any, *args: Any, **kwargs: Any) -> str:
    if args or kwargs:
        raise HandOver("to_json options")
    return json.dumps(value)


_FILTERS: dict[str, Callable[..., Any]] = {
    "int": _int,
    "string": _scalar_text,
    "lower": lambda v: _scalar_text(v).lower(),
    "upper": lambda v: _scalar_text(v).upper(),
    "trim": lambda v: _scalar_text(v).strip(),
    "default": _default,
    "d": _default,
    "to_json": _to_json,
}

"""The consuming half of argparse's _parse_known_args (Python 3.11): options left to right, the positional
where strings come between them, each value through its type= and choices, the leftovers as extras.

argparse stops at its first error; this reads on past each one (State.problems, in argparse's order: an ambiguous
prefix first, as _parse_known_args classifies every string before consuming any), leaving the refused argument
unset (State.refused), so the line's other arguments are still read and checked.
"""
from __future__ import annotations

import re
from typing import Any

from .argparser import Action, Parser, State, classify, count
from .data import Arg, Fail
from .types import TypeFail


def run(parser: Parser, args: list[Arg]) -> State:
    """What argparse stores for args; unknown strings land in State.extras, errors in State.problems."""
    state = State()
    indices: dict[int, tuple[Action | None, str, str | None]] = {}
    failed: set[int] = set()  # options argparse cannot classify (an ambiguous prefix)
    parts: list[str] = []
    for i, arg in enumerate(args):
        if "-" in parts or arg.text == "--":  # after `--` every string is a positional
            parts.append("A" if "-" in parts else "-")
            continue
        try:
            found = classify(parser, arg)
        except Fail as fail:
            state.problems.append(fail.problem)
            failed.add(i)
            found = (None, arg.text, None)
        if found is not None:
            indices[i] = found
        parts.append("A" if found is None else "O")
    pattern = "".join(parts)
    positionals = [parser.positional] if parser.positional else []
    start, last = 0, max(indices, default=-1)

    def positional(at: int) -> int:
        if not positionals:
            return at
        action = positionals.pop()
        found = re.match(r"(-*A?-*)", pattern[at:])  # nargs ? matches every pattern, the empty one too
        taken = len(found.group(1)) if found else 0
        _take(state, action, args[at:at + taken], None, None)
        return at + taken

    while start <= last:
        following = min(i for i in indices if i >= start)
        if start != following:
            end = positional(start)
            if end > start:
                start = end
                continue
        if start not in indices:
            state.extras.extend(args[start:following])
            start = following
        if start in failed:  # reported already: it and the strings it would have taken are skipped
            start += 1
            while start < len(pattern) and pattern[start] == "A":
                start += 1
            continue
        start = _optional(parser, state, args, pattern, start, indices[start])
    stop = positional(start)
    state.extras.extend(args[stop:])
    return state


def _optional(parser: Parser, state: State, args: list[Arg], pattern: str, start: int,
              found: tuple[Action | None, str, str | None]) -> int:
    """consume_optional: the option at start and its values; returns where the next string starts. An error
    (a missing value, a switch given a value) is the option's problem: it is left unset, the rest read on."""
    try:
        return _consume(parser, state, args, pattern, start, found)
    except Fail as fail:
        if found[0] is not None:
            _refuse(state, found[0].dest, fail)
        else:
            state.problems.append(fail.problem)
        return start + 1


def _refuse(state: State, dest: str, fail: Fail) -> None:
    """The argument's problem; it is unset, whatever an earlier mention gave it (argparse's last one wins)."""
    state.problems.append(fail.problem)
    state.refused.add(dest)
    state.values.pop(dest, None)
    for held in (state.flags, state.value_tokens):
        for key in [k for k in held if k[0] == dest]:  # the argument and its dotted sub-keys
            del held[key]


def _consume(parser: Parser, state: State, args: list[Arg], pattern: str, start: int,
             found: tuple[Action | None, str, str | None]) -> int:
    action, option, explicit = found
    flag = args[start]
    pending: list[tuple[Action, list[Arg], str]] = []
    while True:
        if action is None:
            state.extras.append(flag)
            return start + 1
        if explicit is not None:
            taken = count(action, "A", flag.token)
            if taken == 0 and option[1] != "-" and explicit != "":  # -xyz: more single-dash switches glued on
                pending.append((action, [], option))
                option = option[0] + explicit[0]
                if option not in parser.options:
                    raise Fail(f"argument {action.name}: ignored explicit argument {explicit!r}", flag.token)
                action, explicit = parser.options[option], explicit[1:] or None
            elif taken == 1:
                stop = start + 1
                pending.append((action, [Arg(explicit, flag.token)], option))
                break
            else:
                raise Fail(f"argument {action.name}: ignored explicit argument {explicit!r}", flag.token)
        else:
            taken = count(action, pattern[start + 1:], flag.token)
            stop = start + 1 + taken
            pending.append((action, args[start + 1:stop], option))
            break
    for action, values, option in pending:
        _take(state, action, values, option, flag)
    return stop


def _take(state: State, action: Action, values: list[Arg], option: str | None, flag: Arg | None) -> None:
    """take_action + _get_values: convert, check choices, store (switches, append, last one wins)."""
    values = list(values)
    dashes = next((i for i, a in enumerate(values) if a.text == "--"), None)
    if dashes is not None:
        del values[dashes]
    token = flag.token if flag else values[0].token if values else None
    if action.dest == "help":
        state.problems.append(Fail("-h/--help: vllm prints its help and exits", token,
                                   "leave --help out of vllm_args").problem)
        return
    try:
        value = _converted(action, values, option)
    except Fail as fail:  # a value its type= or choices refuse: the argument is unset (argparse's last one wins)
        _refuse(state, action.dest, fail)
        return
    if value is _DEFAULT:
        return
    state.refused.discard(action.dest)  # given again, and read: argparse's last one wins
    if action.append:
        value = [*state.values.get(action.dest, []), value]
    state.values[action.dest] = value
    key = (action.dest,)
    if flag is not None:
        state.flags[key] = flag.token
    elif values:
        state.flags[key] = values[0].flag or values[0].token
    state.value_tokens[key] = values[0].token if values else token  # type: ignore[assignment]
    for sub in flag.subkeys if flag else ():
        state.flags[(action.dest, *sub.path)] = sub.flag
        state.value_tokens[(action.dest, *sub.path)] = sub.value


_DEFAULT = object()  # the positional left out: argparse keeps its default


def _converted(action: Action, values: list[Arg], option: str | None) -> Any:
    if not values and action.nargs == "?":
        if not action.name.startswith("-"):
            return _DEFAULT
        return True  # const=True for every nargs="?" flag (--hf-token; bool|str fields, _compute_kwargs)
    if action.nargs == 0:
        return action.switch(option or "") if action.switch else True
    if len(values) == 1 and action.nargs in (None, "?"):
        return convert_value(action, values[0])
    return [convert_value(action, v) for v in values]


def convert_value(action: Action, arg: Arg) -> Any:
    """_get_value + _check_value."""
    value: Any = arg.text
    if action.convert is not None:
        try:
            value = action.convert(arg.text)
        except TypeFail as err:
            raise Fail(f"argument {action.name}: {err}", arg.token) from None
        except (TypeError, ValueError, OverflowError):
            raise Fail(f"argument {action.name}: invalid {action.type_name} value: {arg.text!r}", arg.token) from None
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(map(repr, action.choices))
        raise Fail(f"argument {action.name}: invalid choice: {value!r} (choose from {choices})", arg.token)
    return value

"""The consuming half of argparse's _parse_known_args (Python 3.11): options left to right, the positional
where strings come between them, each value through its type= and choices, the leftovers as extras."""
from __future__ import annotations

import re
from typing import Any

from .cmdline_argparse import Action, Parser, State, classify, count
from .cmdline_data import Arg, Fail
from .cmdline_types import TypeFail


def run(parser: Parser, args: list[Arg]) -> State:
    """What argparse stores for args (raises Fail at its first error); unknown strings land in State.extras."""
    indices: dict[int, tuple[Action | None, str, str | None]] = {}
    parts: list[str] = []
    for i, arg in enumerate(args):
        if "-" in parts or arg.text == "--":  # after `--` every string is a positional
            parts.append("A" if "-" in parts else "-")
            continue
        found = classify(parser, arg)
        if found is not None:
            indices[i] = found
        parts.append("A" if found is None else "O")
    pattern = "".join(parts)
    state = State()
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
        start = _optional(parser, state, args, pattern, start, indices[start])
    stop = positional(start)
    state.extras.extend(args[stop:])
    return state


def _optional(parser: Parser, state: State, args: list[Arg], pattern: str, start: int,
              found: tuple[Action | None, str, str | None]) -> int:
    """consume_optional: the option at start and its values; returns where the next string starts."""
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
        raise Fail("-h/--help: vllm prints its help and exits", token, "leave --help out of vllm_args")
    if not values and action.nargs == "?":
        if not action.name.startswith("-"):
            return  # the positional left out: its default
        value: Any = True  # const=True for every nargs="?" flag (--hf-token; bool|str fields, _compute_kwargs)
    elif action.nargs == 0:
        value = action.switch(option or "") if action.switch else True
    elif len(values) == 1 and action.nargs in (None, "?"):
        value = _value(action, values[0])
    else:
        value = [_value(action, v) for v in values]
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


def _value(action: Action, arg: Arg) -> Any:
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

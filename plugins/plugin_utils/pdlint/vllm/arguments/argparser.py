"""argparse's own reading of an argument list (Python 3.11 argparse.ArgumentParser._parse_known_args), over one
release's argument table, keeping the token behind every value.

vLLM never turns allow_abbrev off, so a unique prefix of a `--` flag selects it (`--tensor-parallel 6`); a
single-dash option takes its value glued on (`-n4`) only when it is two characters long (`-tp4` is unknown;
`-tp=4` is TP 4); a switch refuses `--x=v` ("ignored explicit argument").
"""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import Any

from ..releases import R, Release
from .args import Argument, arguments
from .data import Arg, Fail, Problem, Token
from .types import converter

_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")
_COUNT_WORDS = {None: "expected one argument", "?": "expected at most one argument",
                "+": "expected at least one argument"}


@dataclasses.dataclass(frozen=True)
class Action:
    """One add_argument as argparse holds it."""

    dest: str
    name: str  # how argparse names it in errors: "--tensor-parallel-size/-tp"
    nargs: str | int | None  # None: one value; 0: a switch
    convert: Callable[[str], Any] | None = None
    type_name: str = "str"
    choices: tuple[Any, ...] | None = None
    switch: Callable[[str], bool] | None = None  # the value a switch stores for the option string used
    append: bool = False


@dataclasses.dataclass(frozen=True)
class Parser:
    options: dict[str, Action]  # every option string, in registration order
    positional: Action | None


@dataclasses.dataclass
class State:
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    flags: dict[tuple[str, ...], Token] = dataclasses.field(default_factory=dict)
    value_tokens: dict[tuple[str, ...], Token] = dataclasses.field(default_factory=dict)
    extras: list[Arg] = dataclasses.field(default_factory=list)
    problems: list[Problem] = dataclasses.field(default_factory=list)  # argparse's errors, in the order it meets them
    refused: set[str] = dataclasses.field(default_factory=set)  # dests whose value an error refused


_HELP = Action("help", "-h/--help", 0)


@functools.cache
def build(release: Release, launcher: str) -> Parser:
    """The serve (sub)parser of release: -h/--help, then the table's arguments; the positional model_tag
    (nargs ?) under `vllm serve` (entrypoints/cli/serve.py subparser_init <= 0.9.2, make_arg_parser 0.10.0+, so
    the api_server has it from 0.10.0 too). launcher "engine": a FlexibleArgumentParser holding what
    AsyncEngineArgs.add_cli_args registers alone (Dynamo's worker, ai-dynamo/dynamo vllm/arguments/args.py parse_args), no
    positional."""
    options: dict[str, Action] = {"-h": _HELP, "--help": _HELP}
    for arg in arguments(release).values():
        if launcher == "engine" and not arg.engine:
            continue
        strings, action = option_action(arg, release)
        for option in strings:
            options[option] = action
    if launcher == "engine":
        return Parser(options, None)
    positional = launcher != "api_server" or release >= R("0.10.0")
    return Parser(options, Action("model_tag", "model_tag", "?") if positional else None)


def option_action(arg: Argument, release: Release) -> tuple[list[str], Action]:
    """The option strings argparse registers for arg in release, and its Action (type=, choices, nargs)."""
    strings = [*arg.flags, *arg.aliases]
    if arg.kind == "bool" and arg.action in ("store_true", "store_false"):
        stored = arg.action == "store_true"
        return strings, Action(arg.name, "/".join(strings), 0, switch=lambda option: stored)
    if arg.kind == "bool":  # BooleanOptionalAction: --x and --no-x for each -- option string
        registered = [s for o in strings for s in ((o, "--no-" + o[2:]) if o.startswith("--") else (o,))]
        negative = {s for s in registered if s not in strings}
        shown = registered
        # 0.33.0+: FlexibleArgumentParser.__init__ registers EnableDisableAction for BooleanOptionalAction
        # (utils/argparse_utils.py): --disable-X also for --enable-X and the reverse; help shows the pair
        if release >= R("0.33.0") or arg.action == "enable_disable":
            pairs = (("--enable-", "--disable-"), ("--disable-", "--enable-"))
            inverses = [b + o[len(a):] for o in strings for a, b in pairs if o.startswith(a)]
            registered, negative = registered + inverses, negative | set(inverses)
            shown = strings + inverses if inverses else registered
        return registered, Action(arg.name, "/".join(shown), 0, switch=lambda option: option not in negative)
    convert, type_name = converter(arg, release)
    choices = (*arg.choices, *((None,) if arg.optional else ())) if arg.kind == "choice" else None
    append = arg.action == "append"
    nargs = None if append else "?" if arg.nargs == "?" else arg.nargs if arg.kind == "list" else None
    return strings, Action(arg.name, "/".join(strings), nargs, convert, type_name, choices, append=append)


def classify(parser: Parser, arg: Arg) -> tuple[Action | None, str, str | None] | None:
    """_parse_optional: (action, option string, explicit value), (None, text, None) for an unknown option, None
    for a positional; an ambiguous prefix is argparse's error."""
    text, options = arg.text, parser.options
    if not text or text[0] != "-":
        return None
    if text in options:
        return options[text], text, None
    if len(text) == 1:
        return None
    if "=" in text:
        option, value = text.split("=", 1)
        if option in options:
            return options[option], option, value
    found = _prefixes(options, text)
    if len(found) > 1:
        matches = ", ".join(option for _action, option, _value in found)
        raise Fail(f"ambiguous option: {text} could match {matches}", arg.token, "write the whole flag")
    if found:
        return found[0]
    if _NEGATIVE.match(text) or " " in text:
        return None
    return None, text, None


def _prefixes(options: dict[str, Action], text: str) -> list[tuple[Action, str, str | None]]:
    """_get_option_tuples: `--` options split at `=` and matched by prefix; single-dash ones also `-xVALUE`."""
    if text[1] == "-":
        prefix, equals, value = text.partition("=")
        return [(a, o, value if equals else None) for o, a in options.items() if o.startswith(prefix)]
    found: list[tuple[Action, str, str | None]] = []
    for option, action in options.items():
        if option == text[:2]:
            found.append((action, option, text[2:]))
        elif option.startswith(text):
            found.append((action, option, None))
    return found


def _pattern(action: Action, optional: bool) -> str:
    """_get_nargs_pattern; an optional's pattern admits neither `--` nor options."""
    nargs = action.nargs
    if nargs is None:
        pattern = "(-*A-*)"
    elif nargs == "?":
        pattern = "(-*A?-*)"
    elif nargs == "*":
        pattern = "(-*[A-]*)"
    elif nargs == "+":
        pattern = "(-*A[A-]*)"
    else:
        pattern = "(-*{}-*)".format("-*".join("A" * int(nargs)))
    return pattern.replace("-*", "").replace("-", "") if optional else pattern


def count(action: Action, pattern: str, token: Token | None) -> int:
    """_match_argument: how many of the following strings the optional takes."""
    found = re.match(_pattern(action, True), pattern)
    if found is None:
        words = _COUNT_WORDS.get(action.nargs) if not isinstance(action.nargs, int) else \
            f"expected {action.nargs} argument{'s' if action.nargs != 1 else ''}"
        raise Fail(f"argument {action.name}: {words}", token)
    return len(found.group(1))

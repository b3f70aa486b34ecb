"""The values the command-line parser (cmdline.py) passes around and returns."""
from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Token:
    """One argv element and where its first source character is."""

    text: str  # after shell splitting (quotes removed)
    item: int | None = None  # index in the vllm_args list it came from; None: vllm_args is one string
    start: int = 0  # offset, in that string / list item, of the token's first source character
    file: str | None = None  # set for tokens read from a --config FILE (then line/col: 1-based, in that file)
    line: int = 0
    col: int = 0
    # how a shell reads it (cmdline_split.words): "op" an operator, "expand" a word it expands, "assign" NAME=value;
    # "" a plain word (or an argv element given as a list item)
    shell: str = ""


@dataclasses.dataclass(frozen=True)
class Problem:
    """Why that release's `vllm serve` would refuse the command line, in vLLM's / argparse's words."""

    message: str
    token: Token | None
    hint: str = ""
    # "invalid": vLLM refuses it; "unresolved": pdlint cannot tell off the GPU host (a --config FILE at an absolute
    # path the controller lacks), so the arguments it would set are not checked
    kind: str = "invalid"


@dataclasses.dataclass(frozen=True)
class Parsed:
    """What the command line sets, as that release's parser leaves it, and the token behind each value."""

    values: dict[str, Any]
    flags: dict[tuple[str, ...], Token]
    value_tokens: dict[tuple[str, ...], Token]
    problems: tuple[Problem, ...]
    launcher: str  # "serve", "api_server", "dynamo" (not parsed) or "" (bare args)
    # dests whose value vLLM refuses (a type or choice error, a missing value): left unset and unknown, so the rules
    # that need them skip the engine as they skip an unresolved value; every other argument of the line is read
    refused: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class SubKey:
    """One dotted sub-argument (`--kv-transfer-config.kv_connector X`) folded into its argument's JSON."""

    path: tuple[str, ...]
    flag: Token
    value: Token


@dataclasses.dataclass(frozen=True)
class Arg:
    """An argument string on its way through FlexibleArgumentParser.parse_args, and the token it came from."""

    text: str
    token: Token
    flag: Token | None = None  # the `--model` token when vLLM moved its value to the positional slot
    subkeys: tuple[SubKey, ...] = ()  # set on the flag vLLM appends for dotted sub-arguments


class Fail(Exception):
    """vLLM's parser stops here (argparse error, ValueError, assert). pdlint reports it and reads on past it (the
    flag's value unset), so one bad value does not hide the rest of the line."""

    def __init__(self, message: str, token: Token | None, hint: str = "", kind: str = "invalid") -> None:
        super().__init__(message)
        self.problem = Problem(message, token, hint, kind)

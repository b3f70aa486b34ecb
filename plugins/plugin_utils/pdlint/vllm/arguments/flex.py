"""What FlexibleArgumentParser.parse_args does to the arguments before argparse sees them, per release.

Source: `FlexibleArgumentParser.parse_args` in vllm/utils.py (0.8.5-0.9.1), vllm/utils/__init__.py (0.9.2-0.11.0),
vllm/utils/argparse_utils.py (0.11.1+). Each step below is that method's, in its order, with its release span.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..releases import R, Release
from .config_file import pull
from .data import Arg, Problem, SubKey
from .types import human_readable_int

_MODEL_POSITIONAL = ("With `vllm serve`, you should provide the model as a positional argument or in a config file "
                     "instead of via the `--model` option.")
_MODEL_FIRST = ("`model` should be provided as the first positional argument when using `vllm serve`. "
                "i.e. `vllm serve <model> --<arg> <value>`.")
# 0.9.1+: only the part between `--` and the first `.` has its underscores turned into dashes
_NAME = re.compile(r"(?<=--)[^\.]*")


def preprocess(args: list[Arg], release: Release, owns: frozenset[str], base_dir: str | None,
               problems: list[Problem]) -> list[Arg]:
    """args (args[0] == "serve" for `vllm serve`) as parse_args hands them to argparse. Where parse_args would
    stop (a --model it refuses, an unreadable --config FILE), the problem goes to problems and the words at fault
    are dropped, so argparse still reads the rest of the line."""
    if args and args[0].text == "serve":
        args = _model(args, release, problems)
    if any(a.text == "--config" for a in args):  # only a bare `--config` token expands; `--config=F` does not
        args = pull(args, release, owns, base_dir, problems)
    args = _names(args, release)
    return _dotted(args, release, problems) if release >= R("0.9.0") else args


def _model(args: list[Arg], release: Release, problems: list[Problem]) -> list[Arg]:
    """`--model` under `vllm serve`: an error (<= 0.11.0), else moved to the positional slot (0.11.1+)."""
    if release < R("0.11.1"):
        index = next((i for i, a in enumerate(args) if a.text == "--model"), None)
        if index is not None:
            problems.append(Problem(_MODEL_POSITIONAL, args[index].token, "write the model right after `vllm serve`"))
            return [*args[:index], *args[index + 2:]]  # the flag and its value: the model is then unknown
        return args
    pattern = re.compile(r"^--model(=.+|$)" if release >= R("0.17.0") else r"^--model(=|$)")
    index = next((i for i, a in enumerate(args) if pattern.match(a.text)), None)
    if index is not None:
        flag = args[index]
        if flag.text == "--model":
            if index + 1 >= len(args):  # vLLM: IndexError in parse_args
                problems.append(Problem("argument --model: expected one argument", flag.token))
                return args[:index]
            model, rest = Arg(args[index + 1].text, args[index + 1].token, flag.token), index + 2
        else:
            model, rest = Arg(flag.text[len("--model="):], flag.token, flag.token), index + 1
        args = [args[0], model, *args[1:index], *args[rest:]]
    if release >= R("0.17.0") and len(args) > 1 and args[1].text.startswith("-") \
            and not any(re.match(r"^--config(=.+|$)", a.text) for a in args):
        named = next((a for a in args if re.match(r"^--served[-_]model[-_]name(=.+|$)", a.text)), None)
        if named is not None:
            problems.append(Problem(_MODEL_FIRST, named.token))
    return args


def _names(args: list[Arg], release: Release) -> list[Arg]:
    """Underscores to dashes in flag names, `--help=`, and `-O` as the release rewrites it."""
    out: list[Arg] = []
    for i, arg in enumerate(args):
        text = arg.text
        if release >= R("0.11.0") and text.startswith("--help="):
            out.append(Arg("--help", arg.token))
        elif text.startswith("--"):
            key, equals, value = text.partition("=")
            if release >= R("0.9.1"):
                key = _NAME.sub(lambda m: m.group(0).replace("_", "-"), key, count=1)
            else:
                key = "--" + key[2:].replace("_", "-")
            out.append(Arg(key + equals + value, arg.token, arg.flag))
        else:
            out.extend(_optimization(args, i, release))
    return out


def _optimization(args: list[Arg], i: int, release: Release) -> list[Arg]:
    """`-O3`, `-O=3`, `-O 3`: nothing (<= 0.9.1: the test is never true), -O.level (0.9.2-0.11.0), -O.mode
    (0.11.1-0.11.2), --optimization-level (0.12.0+; 0.12.0 turns `-O.x` into `-cc.x`, 0.13.0+ takes `.x` as the
    level)."""
    arg = args[i]
    text = arg.text
    if release < R("0.9.2") or not text.startswith("-O"):
        return [arg]
    levels = {"0", "1", "2", "3"}
    if release < R("0.12.0"):
        key = "level" if release < R("0.11.1") else "mode"
        if text != "-O" and text[2] != ".":
            return [Arg(f"-O.{key}={text[3:] if text[2] == '=' else text[2:]}", arg.token)]
        if text == "-O" and i + 1 < len(args) and args[i + 1].text in levels:
            return [Arg(f"-O.{key}", arg.token)]
        return [arg]
    if text != "-O" and (text[2] != "." or release >= R("0.13.0")):
        return [Arg("--optimization-level", arg.token), Arg(text[3:] if text[2] == "=" else text[2:], arg.token)]
    if text == "-O" and i + 1 < len(args) and args[i + 1].text in levels:
        return [Arg("--optimization-level", arg.token)]
    if text.startswith("-O."):  # 0.12.0 only: deprecated spelling of -cc.
        return [Arg(text.replace("-O", "-cc", 1), arg.token)]
    return [arg]


def _dotted(args: list[Arg], release: Release, problems: list[Problem]) -> list[Arg]:
    """Dotted sub-arguments folded into one JSON value per argument, appended at the end (0.9.0+).

    0.9.0-0.9.1: only `--` flags, values kept as text; 0.9.2+: any `-` flag, `key+ a,b` lists, values through
    json.loads (else text; 0.20.0+ human_readable_int first: `80g`), lists concatenated.
    """
    new = release >= R("0.9.2")
    delete: set[int] = set()
    dicts: dict[str, dict[str, Any]] = {}
    origins: dict[str, list[SubKey]] = {}
    for i, arg in enumerate(args):
        text = arg.text
        if (new and i in delete) or not (text.startswith("-" if new else "--") and "." in text):
            continue
        if "=" in text:
            text, value_str = text.split("=", 1)
            if "." not in text:
                continue
            value_token = arg.token
        else:
            if i + 1 >= len(args):  # vLLM: IndexError
                problems.append(Problem(f"argument {text}: expected one argument", arg.token))
                delete.add(i)
                continue
            value_str, value_token = args[i + 1].text, args[i + 1].token
            delete.add(i + 1)
        if new and text.endswith("+"):
            text = text[:-1]
            value_str = json.dumps(value_str.split(","))
        key, *keys = text.split(".")
        value = _value(value_str, release) if new else value_str
        nested: Any = value
        for part in reversed(keys):
            nested = {part: nested}
        _update(dicts.setdefault(key, {}), nested, new)
        origins.setdefault(key, []).append(SubKey(tuple(keys), arg.token, value_token))
        delete.add(i)
    out = [a for i, a in enumerate(args) if i not in delete]
    for key, value in dicts.items():
        last = origins[key][-1]
        out.append(Arg(key, last.flag, subkeys=tuple(origins[key])))
        out.append(Arg(json.dumps(value), last.value))
    return out


def _value(text: str, release: Release) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        if release >= R("0.20.0"):
            try:
                return human_readable_int(text, release)
            except ValueError:
                pass
        return text


def _update(original: dict[str, Any], update: dict[str, Any], lists: bool) -> None:
    """recursive_dict_update in parse_args: dicts merged, lists concatenated (0.9.2+), else the later wins."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _update(original[key], value, lists)
        elif lists and isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value

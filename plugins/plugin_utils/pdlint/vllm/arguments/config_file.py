"""`--config FILE` as FlexibleArgumentParser reads it: _pull_args_from_config and (_)load_config_file.

Source: vllm/utils.py (0.8.5-0.9.1), vllm/utils/__init__.py (0.9.2-0.11.0), vllm/utils/argparse_utils.py (0.11.1+).
vLLM opens the path relative to its working directory; pdlint reads it relative to base_dir (the inventory's).
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ..releases import R, Release
from .data import Arg, Fail, Problem, Token

if TYPE_CHECKING:
    import yaml


def pull(args: list[Arg], release: Release, owns: frozenset[str], base_dir: str | None,
         problems: list[Problem]) -> list[Arg]:
    """args with the file's arguments put where _pull_args_from_config puts them (after `serve` and the model).
    Where vLLM would stop, the problem goes to problems and the line is read without the file's arguments."""
    configs = [i for i, a in enumerate(args) if a.text == "--config"]
    if len(configs) > 1:
        problems.append(Problem("More than one config file specified!", args[configs[1]].token))
        drop = {j for i in configs[1:] for j in (i, i + 1)}
        args = [a for j, a in enumerate(args) if j not in drop]
    index = configs[0]
    if index == len(args) - 1:
        problems.append(Problem("No config file specified! Please check your command-line arguments.",
                                args[index].token))
        return args[:index]
    rest = args[index + 2:]
    try:
        loaded = load(args[index + 1], release, owns, base_dir)
    except Fail as fail:
        problems.append(fail.problem)
        return args[:index] + rest
    if release >= R("0.10.2") and args[0].text.startswith("-"):
        return loaded + args[0:index] + rest
    if args[0].text == "serve":
        in_cli = len(args) > 1 and not args[1].text.startswith("-")
        if not in_cli and not any(a.text == "--model" for a in loaded):
            problems.append(Problem("No model specified! Please specify model either as a positional argument or "
                                    "in a config file.", args[index].token))
        if in_cli:
            return args[:2] + loaded + args[2:index] + rest
    return args[:1] + loaded + args[1:index] + rest


def load(path: Arg, release: Release, owns: frozenset[str], base_dir: str | None) -> list[Arg]:
    """The file's keys as flags: `true` -> --key; `false` dropped (--no-key if the parsing parser owns it, 0.28.0+);
    lists -> --key a b (0.10.2+, before str(list)); dicts -> JSON (0.16.0+, before str(dict)); else str(value)."""
    name = path.text
    extension = name.split(".")[-1]
    if extension not in ("yaml", "yml"):
        raise Fail(f"Config file must be of a yaml/yml type. {extension} supplied", path.token)
    full = os.path.join(base_dir, name) if base_dir and not os.path.isabs(name) else name
    if os.path.isabs(name) and not os.path.exists(name):
        # the line runs on the GPU host, whose files (a role templates /etc/vllm/*.yaml there) pdlint never sees
        raise Fail(f"--config {name} is not on this machine (vLLM reads it on the GPU host): the arguments it "
                   "sets are not checked, and rules that need one the line leaves out are skipped", path.token,
                   "put the file beside the inventory and name it by a relative path, or give its arguments on the "
                   "line", kind="unresolved")
    pairs = _read(full, path.token)
    out: list[Arg] = []
    for key, value, key_token, value_token in pairs:
        if not isinstance(key, str):  # vLLM: '--' + key raises TypeError
            raise Fail(f"config file {name}: key {key!r} is not a flag name", key_token)
        flag = Arg("--" + key, key_token)
        if isinstance(value, bool):
            if value:
                out.append(flag)
            elif release >= R("0.28.0") and f"--no-{key}" in owns:
                out.append(Arg(f"--no-{key}", key_token))
        elif release >= R("0.10.2") and isinstance(value, list):
            if value:
                out += [flag, *(Arg(str(item), value_token) for item in value)]
        elif release >= R("0.16.0") and isinstance(value, dict):
            out += [flag, Arg(json.dumps(value), value_token)]
        else:
            out += [flag, Arg(str(value), value_token)]
    return out


def _read(full: str, token: Token) -> list[tuple[Any, Any, Token, Token]]:
    """(key, value, key token, value token) of the file's top-level mapping, as yaml.safe_load's dict orders them."""
    import yaml  # only a --config line needs it (a cached run never imports yaml)

    try:
        with open(full, encoding="utf-8") as handle:
            text = handle.read()
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as err:
        raise Fail(f"Unable to read the config file at {full}: {err}", token) from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise Fail(f"config file {full}: expected a mapping of flag names to values", token)
    where: dict[Any, tuple[Token, Token]] = {}
    for key_node, value_node in node.value:
        try:
            key = loader.construct_object(key_node, deep=True)
            where[key] = (_token(full, key_node, "--" + str(key)), _token(full, value_node, None))
        except (yaml.YAMLError, TypeError):  # an unhashable key: safe_load has already refused it
            continue
    return [(k, v, *where.get(k, (Token("--" + str(k), file=full), Token(str(v), file=full)))) for k, v in data.items()]


def _token(full: str, node: yaml.Node, text: str | None) -> Token:
    scalar = not isinstance(node.value, list)  # a ScalarNode's value is its text; collections hold nodes
    value = text if text is not None else str(node.value) if scalar else ""
    return Token(value, file=full, line=node.start_mark.line + 1, col=node.start_mark.column + 1)

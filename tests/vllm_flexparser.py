"""Each release's own FlexibleArgumentParser, lifted without vllm or torch, holding that release's arguments.

The class and the helpers its module defines beside it (SortedHelpFormatter, StoreBoolean, EnableDisableAction,
_register_action, human_readable_int*) are compiled from vllm/utils.py (<= 0.9.1), vllm/utils/__init__.py
(0.9.2-0.11.0) or vllm/utils/argparse_utils.py (0.11.1+) with only the module's standard-library imports (and
yaml); `logger` is a stub. The type helpers (optional_type, parse_type, human_readable_int) are lifted from
vllm/engine/arg_utils.py where the release defines them there. The arguments come from pdlint's table, which
tests/vllm/arguments/test_vllm_args.py holds equal to the wheel; the `serve` subcommand is shaped as entrypoints/cli/main.py
and serve.py shape it: a top-level parser whose subparsers hold `serve` with the positional model_tag (nargs ?).
Every argument's default is SUPPRESS, so the Namespace holds exactly what the command line sets.
"""
from __future__ import annotations
import __future__

import argparse
import ast
import json
import re
import sys
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any, NoReturn, Optional, Union

import vllm_source
import yaml

from pdlint.vllm.arguments.args import Argument, arguments
from pdlint.vllm.releases import R, Release

HOMES = ("vllm/utils/argparse_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
_WANTED = {"FlexibleArgumentParser", "SortedHelpFormatter", "StoreBoolean", "EnableDisableAction", "_register_action",
           "human_readable_int", "human_readable_int_or_auto", "summary_line"}
ENGINE = "vllm/engine/arg_utils.py"


class Refused(Exception):
    """The parser's error() or exit(): argparse's SystemExit."""


class _Raising(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        raise Refused(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:  # type: ignore[override]
        raise Refused(message or f"exit {status}")


class _Logger:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def home(root: Path) -> str:
    for rel in HOMES:
        path = root / rel
        if path.is_file() and "class FlexibleArgumentParser" in path.read_text(encoding="utf-8"):
            return rel
    raise AssertionError(f"{root}: no FlexibleArgumentParser")


def lift(root: Path) -> dict[str, Any]:
    """The module namespace holding the lifted class and its helpers."""
    rel = home(root)
    tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    env: dict[str, Any] = {"__name__": "lifted_vllm_utils", "re": re, "json": json, "sys": sys, "yaml": yaml,
                           "textwrap": textwrap, "defaultdict": defaultdict, "Any": Any, "NoReturn": NoReturn,
                           "Optional": Optional, "Union": Union}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            top = (module or "").split(".")[0]
            if getattr(node, "level", 0) or (top not in sys.stdlib_module_names and top != "yaml") \
                    or top == "__future__":
                continue
            exec(compile(ast.Module(body=[node], type_ignores=[]), rel, "exec"), env)  # noqa: S102
    env.update(ArgumentParser=_Raising, logger=_Logger())
    defs = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name in _WANTED]
    flags = __future__.annotations.compiler_flag  # annotations stay strings: no vllm/torch names needed
    exec(compile(ast.Module(body=defs, type_ignores=[]), f"{root.name}/{rel}", "exec", flags=flags,  # noqa: S102
                 dont_inherit=True), env)
    names = {n for n in ("optional_type", "parse_type", "human_readable_int", "human_readable_int_or_auto",
                         "nullable_kvs", "union_dict_and_str") if vllm_source.has(root, ENGINE, n)}
    stubs = {"argparse": argparse, "json": json, "re": re, "cast": lambda kind, value: value, "T": object}
    helpers = vllm_source.lift(root, ENGINE, names, env=stubs) if names else {}
    for name in names:
        env.setdefault(name, helpers[name])
    return env


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _type(arg: Argument, env: dict[str, Any], release: Release) -> Any:
    kind = arg.item if arg.kind == "list" else arg.kind
    if arg.kind == "choice":
        kind = "int" if all(isinstance(c, int) for c in arg.choices) else "str"
    plain: Any = {"int": int, "float": float, "str": str}.get(kind or "")
    if kind == "json" and arg.or_text:
        plain = env["union_dict_and_str"]
    elif kind == "json":
        # 0.9.0-0.9.1 parse_type hands a value that is not `{...}` to nullable_kvs (KEY=VALUE,...) for dict fields,
        # while dataclass fields (kv_transfer_config, compilation_config: parse_dataclass / from_cli) read JSON; the
        # table does not tell the two apart, so those releases get plain JSON here as in pdlint
        plain = env["parse_type"](json.loads) if "parse_type" in env and release >= R("0.10.0") else _json
    elif kind == "int_hr":
        auto = env.get("human_readable_int_or_auto")
        plain = auto if arg.name == "max_model_len" and auto else env["human_readable_int"]
    if arg.optional:
        return env["optional_type"](plain or str)
    return plain


def _kwargs(arg: Argument, env: dict[str, Any], release: Release) -> dict[str, Any]:
    if arg.kind == "bool":
        actions = {"store_true": "store_true", "store_false": "store_false",
                   "optional": argparse.BooleanOptionalAction}
        return {"action": actions.get(arg.action or "", env.get("EnableDisableAction"))}
    out: dict[str, Any] = {"type": _type(arg, env, release)}
    if arg.kind == "choice":
        out["choices"] = [*arg.choices, *([None] if arg.optional else [])]
    if arg.action == "append":
        out["action"] = "append"
    elif arg.nargs == "?":
        out.update(nargs="?", const=True)
    elif arg.kind == "list":
        out["nargs"] = arg.nargs or "+"
    return out


def build(env: dict[str, Any], release: Release) -> Any:
    """`vllm` with its `serve` subcommand holding the release's arguments."""
    flexible = env["FlexibleArgumentParser"]
    top = flexible(prog="vllm")
    serve = top.add_subparsers(required=False, dest="subparser").add_parser("serve", prog="vllm serve")
    serve.add_argument("model_tag", type=str, nargs="?", default=None)
    for arg in arguments(release).values():
        serve.add_argument(*arg.flags, *arg.aliases, dest=arg.name, default=argparse.SUPPRESS,
                           **_kwargs(arg, env, release))
    return top


def values(parser: Any, argv: list[str]) -> dict[str, Any]:
    """What `vllm serve <argv>` sets (serve.py cmd: a positional model_tag becomes args.model); raises as it does."""
    namespace = vars(parser.parse_args(["serve", *argv]))
    namespace.pop("subparser", None)
    tag = namespace.pop("model_tag", None)
    if tag is not None:
        namespace["model"] = tag
    return namespace


def build_api_server(env: dict[str, Any], release: Release) -> Any:
    """`python -m vllm.entrypoints.openai.api_server`: one FlexibleArgumentParser through make_arg_parser, which
    adds the positional model_tag from 0.10.0 (entrypoints/openai/cli_args.py) and nothing else the table lacks."""
    parser = env["FlexibleArgumentParser"](prog="api_server")
    if release >= R("0.10.0"):
        parser.add_argument("model_tag", type=str, nargs="?", default=None)
    for arg in arguments(release).values():
        parser.add_argument(*arg.flags, *arg.aliases, dest=arg.name, default=argparse.SUPPRESS,
                            **_kwargs(arg, env, release))
    return parser


def build_engine(env: dict[str, Any], release: Release) -> Any:
    """Dynamo's worker's vLLM parser (ai-dynamo/dynamo components/src/dynamo/vllm/arguments/args.py parse_args): a
    FlexibleArgumentParser through AsyncEngineArgs.add_cli_args alone, the arguments the table marks engine (held
    to vllm/engine/arg_utils.py by tests/vllm/arguments/test_vllm_args.py); no positional. Dynamo builds it with add_help=False,
    but its own parser, which reads the words first, has -h: kept here, as pdlint keeps it."""
    parser = env["FlexibleArgumentParser"](prog="dynamo.vllm")
    for arg in arguments(release).values():
        if arg.engine:
            parser.add_argument(*arg.flags, *arg.aliases, dest=arg.name, default=argparse.SUPPRESS,
                                **_kwargs(arg, env, release))
    return parser


def engine_values(parser: Any, argv: list[str]) -> dict[str, Any]:
    return vars(parser.parse_args(argv))


def api_server_values(parser: Any, argv: list[str]) -> dict[str, Any]:
    """What the api_server's parse_args sets (its model_tag is not copied to args.model: only serve.py does that)."""
    namespace = vars(parser.parse_args(argv))
    if namespace.get("model_tag", 0) is None:
        del namespace["model_tag"]
    return namespace

"""`vllm_args`: a command line read as each vLLM release's `vllm serve` reads it.

argv() splits vllm_args (one string, as a POSIX shell splits it; or a list, one argv element per item) into
tokens that remember where they came from. parse() runs them through that release's FlexibleArgumentParser
(cmdline_flex: the rewriting parse_args does; cmdline_config: --config FILE) and argparse (cmdline_argparse,
cmdline_consume) over the release's argument table (args.arguments), and says what is set, by which token, and
why vLLM would refuse it. tests/vllm/arguments/test_vllm_cmdline_differential.py holds it equal to each release's own parser.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from typing import Any

from ..releases import KNOWN, R, Release
from . import dynamo
from .argparser import Parser, build, classify
from .args import arguments, first_release
from .consume import run
from .data import Arg, Fail, Parsed, Problem, Token
from .flex import _MODEL_POSITIONAL, preprocess
from .split import ASSIGN, SplitError, joined, rendered, words

__all__ = ["SERVER_HINT", "Parsed", "Problem", "SplitError", "Token", "argv", "parse"]

_PYTHON = ("python", "python3")
_OPERATOR_START = frozenset(";&|<>()0123456789")
_API_SERVER = "vllm.entrypoints.openai.api_server"
_TASK = ("--task is not a vllm serve option. For embedding, reranking, or reward models, use --runner pooling. To "
         "adapt a generative model for pooling, also use --convert embed, --convert classify, or --convert reward.")


def argv(value: str | list[Any]) -> list[Token]:
    """vllm_args as argv elements. A list item that starts with a flag and holds whitespace before any `=` is a
    role joining the list with spaces (`"--tensor-parallel-size 2"`): it is split shell-style too."""
    if isinstance(value, str):
        return [Token(word, None, start, shell=_kind(kind)) for word, start, kind in words(value)]
    if not isinstance(value, (list, tuple)):
        raise SplitError(f"vllm_args must be a string or a list, not {type(value).__name__}", 0)
    out: list[Token] = []
    for index, item in enumerate(value):
        text = rendered(item)
        if not joined(text):
            out += _item(text, index)
            continue
        try:
            out += [Token(word, index, start, shell=_kind(kind)) for word, start, kind in words(text)]
        except SplitError as err:
            raise SplitError(err.message, err.offset, index) from None
    return out


def _kind(kind: str) -> str:
    return "" if kind == "word" else kind


def _item(text: str, index: int) -> list[Token]:
    """A list item as one argv element, unless it is a shell operator (`&`, `2>&1`, `> log`) or an environment
    assignment (`CUDA_VISIBLE_DEVICES=0`) a role's join passes to the shell."""
    if ASSIGN.match(text):
        return [Token(text, index, 0, shell="assign")]
    if text[:1] not in _OPERATOR_START:
        return [Token(text, index, 0)]
    try:
        parts = list(words(text))
    except SplitError:
        return [Token(text, index, 0)]
    if not parts or parts[0][2] != "op":
        return [Token(text, index, 0)]
    return [Token(word, index, start, shell=_kind(kind)) for word, start, kind in parts]


def launcher(tokens: Sequence[Token]) -> tuple[str, int]:
    """Which launcher the tokens start with, and how many tokens name it."""
    texts = [t.text for t in tokens[:3]]
    if len(texts) >= 2 and os.path.basename(texts[0]) == "vllm" and texts[1] == "serve":
        return "serve", 2
    program = os.path.basename(texts[0]) if texts else ""
    if len(texts) == 3 and texts[1] == "-m" and (program in _PYTHON or program.startswith("python3.")):
        if texts[2] == _API_SERVER:
            return "api_server", 3
        if texts[2] in dynamo.MODULES:
            return "dynamo", 3
    return "", 0


def parse(tokens: Sequence[Token], release: Release, *, base_dir: str | None = None,
          engine_only: bool = False) -> Parsed:
    """What release's parser makes of tokens; never raises (a refusal is a Problem). engine_only: the tokens are
    the words Dynamo's worker hands to a FlexibleArgumentParser holding AsyncEngineArgs.add_cli_args alone."""
    name, skip = ("engine", 0) if engine_only else launcher(tokens)
    if name == "dynamo":  # Dynamo's own launcher and flags: not vLLM's parser
        return Parsed({}, {}, {}, (), name)
    serve = name not in ("api_server", "engine")
    parser = build(release, "serve" if serve else name)
    # `vllm serve`: parse_args runs on the top-level parser, which owns no --no-X (a config file's `false` is
    # dropped there, 0.28.0+); the api_server's own parser owns them all
    owns = frozenset(parser.options) if not serve else frozenset({"-h", "--help"})
    args = [Arg(t.text, t) for t in tokens[skip:]]
    problems: list[Problem] = []
    try:
        processed = preprocess([Arg("serve", Token("serve")), *args] if serve else args, release, owns, base_dir,
                               problems)
        state = run(parser, processed[1:] if serve else processed)
    except Fail as fail:
        return Parsed({}, {}, {}, (*problems, fail.problem), name)
    except (RecursionError, OverflowError) as err:  # vLLM's parser dies on these too (a traceback, no message)
        return Parsed({}, {}, {}, (Problem(f"vLLM's parser fails on this command line: {err}", None),), name)
    values, flags, value_tokens = state.values, state.flags, state.value_tokens
    if serve and "model_tag" in values:  # serve.py cmd: a positional model always overrides args.model
        values["model"] = values.pop("model_tag")
        flags[("model",)] = flags.pop(("model_tag",))
        value_tokens[("model",)] = value_tokens.pop(("model_tag",))
    refused = set(state.refused)
    if any(p.message == _MODEL_POSITIONAL or p.message.startswith("argument --model:") for p in problems):
        refused.add("model")
    unknown = _unrecognized(state.extras, release, parser, engine_only)
    return Parsed(values, flags, value_tokens, (*problems, *state.problems, *unknown), name, frozenset(refused))


def _unrecognized(extras: list[Arg], release: Release, parser: Parser, engine_only: bool) -> tuple[Problem, ...]:
    """argparse's "unrecognized arguments: ..." (parse_args), one problem per unknown flag and the strings after it:
    kind "unknown" (no parser of the release has it), or "invalid" for an API-server flag on the engine-only one."""
    groups: list[list[Arg]] = []
    for arg in extras:
        if not groups or arg.text.startswith("-"):
            groups.append([])
        groups[-1].append(arg)
    out = []
    for group in groups:
        message = "unrecognized arguments: " + " ".join(a.text for a in group)
        server = engine_only and _server_flag(group[0], release)
        out.append(Problem(message, group[0].token, SERVER_HINT if server else hint(group[0].text, release, parser),
                           "invalid" if server else "unknown"))
    return tuple(out)


SERVER_HINT = "a Dynamo worker runs no HTTP server (the ingress is `python -m dynamo.frontend`): drop it from the line"


def _server_flag(arg: Arg, release: Release) -> bool:
    """A flag of the API server's parser (FrontendArgs, make_arg_parser) that the engine's own parser lacks."""
    if not arg.text.startswith("-"):
        return False
    try:
        found = classify(build(release, "api_server"), arg)
    except Fail:
        return False
    return found is not None and found[0] is not None


def hint(text: str, release: Release, parser: Parser) -> str:
    """How to say it in this release: a flag of another release, the other half of a switch, a near spelling."""
    flag = text.split("=", 1)[0]
    if not flag.startswith("-"):
        return ""
    if not flag.startswith("--"):
        return _near(flag, parser)
    base = flag.split(".", 1)[0]
    if "." in flag and release < R("0.9.0"):
        return f"dotted sub-arguments need vLLM 0.9.0+; in {release} pass the whole JSON: {base} '{{...}}'"
    dest = base[2:].replace("-", "_")
    plain = dest.removeprefix("no_")
    if plain == "task" and release >= R("0.29.0"):  # FlexibleArgumentParser.error (utils/argparse_utils.py, 0.29.0+)
        return _TASK
    if plain not in arguments(release) and first_release(plain):
        having = [r for r in KNOWN if plain in arguments(r)]
        span = f"{having[0]}+" if having[-1] == KNOWN[-1] else f"{having[0]}-{having[-1]}"
        return f"{base} is an argument of vLLM {span}, not of {release}"
    for prefix, other in (("--enable-", "--disable-"), ("--disable-", "--enable-"), ("--no-", "--")):
        if base.startswith(prefix) and other + base[len(prefix):] in parser.options:
            return f"vLLM {release} has {other + base[len(prefix):]}, not {base}"
    return _near(base, parser)


def _near(flag: str, parser: Parser) -> str:
    # difflib over ~600 option strings is slow; a ratio >= 0.6 needs lengths within a factor of two anyway
    dashes = "--" if flag.startswith("--") else "-"
    negated = flag.startswith("--no-")
    pool = [o for o in parser.options if o.startswith(dashes) and o.startswith("--no-") == negated
            and len(flag) / 2 <= len(o) <= len(flag) * 2]
    close = difflib.get_close_matches(flag, pool, n=3, cutoff=0.6)
    return f"did you mean {' or '.join(close)}?" if close else ""

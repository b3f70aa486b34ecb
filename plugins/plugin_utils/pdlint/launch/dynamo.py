"""A command line that starts Dynamo's launcher (`python -m dynamo.vllm ...`): Dynamo's own words taken out as
its parser takes them, the rest read by the release's vLLM parser, and what Dynamo adds (vllm/arguments/dynamo.py
cites the source)."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..vllm.arguments import cmdline, dynamo


@dataclasses.dataclass(frozen=True)
class Launch:
    """Dynamo's share of a command line: its module word, its own flags, the words left for vLLM."""

    module: cmdline.Token
    own: tuple[dynamo.Word, ...]
    words: tuple[cmdline.Token, ...]  # Dynamo's words after the module, as given
    # what vLLM's parser reads: args.py parse_args hands the words Dynamo leaves to a FlexibleArgumentParser holding
    # AsyncEngineArgs.add_cli_args alone (engine flags, no `serve`: the model is --model), cmdline.parse engine_only
    rest: tuple[cmdline.Token, ...]


def read(tokens: Sequence[cmdline.Token]) -> Launch | None:
    """The Dynamo launch a command line starts, else None."""
    if cmdline.launcher(tokens)[0] != "dynamo":  # python3 / python3.11 / a path to one, -m dynamo.vllm[.unified_main]
        return None
    words = tuple(tokens[3:])
    own, rest = dynamo.split([t.text for t in words])
    return Launch(tokens[2], tuple(own), words, tuple(words[i] for i in rest))


def side(launch: Launch) -> tuple[str, cmdline.Token] | None:
    """The P/D side Dynamo's flags name, and the word that names it."""
    found = dynamo.side(launch.own)
    return (found[0], launch.words[found[1].at]) if found else None


def unmodelled(problem: cmdline.Problem) -> bool:
    """A flag no parser of the vLLM release knows may be one of the Dynamo release's own that pdlint's table lacks
    (an API-server flag, which Dynamo's engine-only parser refuses, is no such flag)."""
    return problem.kind == "unknown"

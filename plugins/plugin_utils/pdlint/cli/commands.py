"""pdlint's subcommands, in one table: `pdlint NAME ...` runs one (a folder of that name in the working directory
does not change it: `./NAME` is the path), `pdlint --help` lists them, and a near-miss word suggests one."""
from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence


@dataclasses.dataclass(frozen=True)
class Subcommand:
    name: str
    usage: str  # what follows the name in `pdlint --help`
    what: str
    run: Callable[[list[str]], int]  # the words after the name -> exit code (the subcommand's modules: imported here)


def _explain(argv: list[str]) -> int:
    from .explain import explain

    return explain(argv)


def _rules(argv: list[str]) -> int:
    from . import listings

    return listings.rules(argv)


def _models(argv: list[str]) -> int:
    from . import listings

    return listings.models(argv)


def _versions(_argv: list[str]) -> int:
    from .versions import listing

    sys.stdout.write(listing())
    return 0


def _schema(argv: list[str]) -> int:
    if argv == ["config"]:  # the config file's schema (schemas/pdlint-config.schema.json)
        from .config_schema import dumps
    else:
        from ..schema.check import dumps
    sys.stdout.write(dumps())
    return 0


def _lsp(argv: list[str]) -> int:
    from .lsp import main

    return main(argv)


SUBCOMMANDS = (
    Subcommand("explain", "[PATH ...]", "show the topology vLLM will build: engines, GPUs, rank maps, ports", _explain),
    Subcommand("rules", "[ID|FAMILY|--markdown]", "document the rules (with the vLLM releases each follows)", _rules),
    Subcommand("models", "[NAME|PATH|ID ...]",
               "list the models pdlint knows, or show a config.json's facts as vLLM derives them", _models),
    Subcommand("versions", "", "list the vLLM releases pdlint follows", _versions),
    Subcommand("schema", "[config]", "print the JSON Schema of pdlint's variables (config: of its config file)",
               _schema),
    Subcommand("lsp", "[--stdio]", "run the language server over stdio (needs: pip install 'pdlint[lsp]')", _lsp),
)
BY_NAME = {s.name: s for s in SUBCOMMANDS}
# Words a user types for "show me": `pdlint model show X` means `pdlint models X`.
_VERBS = frozenset({"show", "list", "ls", "info", "describe", "get"})


def near_miss(argv: Sequence[str]) -> str | None:
    """The error for a first word that is no subcommand, no path, but close to a subcommand's name (`model`,
    `rule`, `version`, `explian`), with the command meant; None when the word is a path (existing) or not close."""
    word = argv[0] if argv else ""
    if not word or word.startswith("-") or os.sep in word or "." in word or os.path.exists(word):
        return None
    import difflib  # only for a word that is neither a subcommand nor a path

    close = difflib.get_close_matches(word, list(BY_NAME), n=1, cutoff=0.75)
    if not close:
        return None
    rest = list(argv[1:])
    if len(rest) > 1 and rest[0] in _VERBS:
        rest = rest[1:]
    meant = f"`{' '.join(['pdlint', close[0], *rest])}`" + (" or `pdlint --version`" if close[0] == "versions" else "")
    return f"{word}: no such subcommand, file or directory; did you mean {meant}? (`pdlint --help` lists them)"

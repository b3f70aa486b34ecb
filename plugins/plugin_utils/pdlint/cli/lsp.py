"""`pdlint lsp`: start the language server, or say how to install it."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pdlint lsp", description=(
        "Run pdlint's language server: the same findings as `pdlint` on the inventory files an editor has open, "
        "unsaved edits included, with hovers and quick fixes. Needs the lsp extra: pip install 'pdlint[lsp]'."))
    # clients often pass --stdio; stdio is the only transport
    ap.add_argument("--stdio", action="store_true", help="talk LSP over standard input and output (the default)")
    return ap


def main(argv: Sequence[str]) -> int:
    try:
        _parser().parse_args(list(argv))  # --help: exit 0, even without pygls; anything else: usage, exit 2
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        from ..lsp.server import main as serve
    except ImportError as exc:
        sys.stderr.write(f"pdlint: error: the language server needs pygls ({exc.name} is missing): "
                         "pip install 'pdlint[lsp]'\n")
        return 2
    return serve()

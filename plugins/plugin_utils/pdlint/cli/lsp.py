"""`pdlint lsp`: start the language server, or say how to install it."""
from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    if list(argv) not in ([], ["--stdio"]):  # clients often pass --stdio; stdio is the only transport
        sys.stderr.write("usage: pdlint lsp [--stdio]\n")
        return 2
    try:
        from ..lsp.server import main as serve
    except ImportError as exc:
        sys.stderr.write(f"pdlint: error: the language server needs pygls ({exc.name} is missing): "
                         "pip install 'pdlint[lsp]'\n")
        return 2
    return serve()

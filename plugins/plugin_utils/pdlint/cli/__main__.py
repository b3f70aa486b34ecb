"""`python -m pdlint.cli`: the same as the `pdlint` command."""
from __future__ import annotations

from . import main

raise SystemExit(main())

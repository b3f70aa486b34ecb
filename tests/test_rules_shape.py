"""Issue 23: an engine's own shape (GPUs it lists, vLLM's parallel-config checks, multi-node consistency)."""
from __future__ import annotations

import pytest
from conftest import rules_of
from inv import pair

from pdlint.cli import lint_text  # noqa: F401 - placeholder replaced below

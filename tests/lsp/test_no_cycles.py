"""A check leaves no reference cycles: the language server frees each check's results by reference counting.

It runs its checks with the cyclic GC off (as the CLI does); objects in a cycle would pile up until the next
collection, which then rescans the server's whole heap.
"""
from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pdlint.engine import core as engine
from pdlint.load import select

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("inventory", ["examples/inventory", "examples/releases", "examples/dynamo",
                                       "examples/dynamo-hma", "tests/fixtures/newcomer"])
def test_a_check_makes_no_cycles(inventory: str) -> None:
    hosts = select.load([str(ROOT / inventory)])
    engine.lint(hosts)  # the first check fills the process's own caches (schema validator, releases)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = engine.lint(hosts)
        assert result.topology.instances  # the rules ran over instances, and asked the vllm layer about them
        del result
        gc.collect()
        cyclic = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert cyclic == []

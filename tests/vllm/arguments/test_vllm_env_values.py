"""env[invalid] against each release's own vllm/envs.py: the lambda that reads each numeric variable, run on values."""
from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest
from vllm_source import roots

from pdlint.vllm import env_values
from pdlint.vllm.releases import KNOWN, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = roots(KNOWN)
VALUES = ("5600", " 5600 ", "+5600", "5_600", "05600", "-1", "0", "70000", "5600-5607", "5600.0", "", "abc",
          "0x1600", "5600 5601", "true", "1", "٥٦٠٠")


def _readers(root: Path) -> dict[str, Any]:
    """envs.py's environment_variables entries, each lambda compiled on its own (os is all they need)."""
    tree = ast.parse((root / "vllm" / "envs.py").read_text(encoding="utf-8"))
    table = next(n.value for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                 and isinstance(n.value, ast.Dict) and "environment_variables" in ast.unparse(
                     n.targets[0] if isinstance(n, ast.Assign) else n.target))
    found = {}
    for key, value in zip(table.keys, table.values):
        if isinstance(key, ast.Constant) and key.value in env_values.BY_NAME:
            found[key.value] = eval(compile(ast.Expression(value), "envs.py", "eval"), {"os": os})  # noqa: S307
    return found


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_each_release_reads_the_numbers_as_pdlint_says(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    readers = _readers(ROOTS[release])
    for var in env_values.VARIABLES:
        assert (var.name in readers) is var.read.at(release), (release, var.name)
        if var.name not in readers:
            continue
        for text in VALUES:
            monkeypatch.setenv(var.name, text)
            try:
                got: Any = readers[var.name]()
            except ValueError:
                got = None
            found = list(env_values.problems({var.name: text}, frozenset(var.readers) or frozenset({None}), release))
            number = env_values.as_int(text)
            assert (got is None) is (number is None), (release, var.name, text)
            if var.port:
                assert bool(found) is (got is None or not 1 <= got <= 65535), (release, var.name, text, found)
            else:
                assert bool(found) is (got is None), (release, var.name, text, found)

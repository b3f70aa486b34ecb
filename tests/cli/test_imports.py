"""A run pays only for what its inventory uses: the command-line parser, the cache, the whole schema document,
ansible-core and jsonschema are left unimported by a run that needs none of them (start-up is most of a
small inventory's run)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from generate import SHAPES, generate

# imported only by a host with a command line, by a config with a `variables:` mapping or a `models:` table, by a run
# with a cache, by a value the quick check cannot vouch for, by ansible-core's loader; hashlib (OpenSSL's library)
# only by the cache's store
_LAZY = ("pdlint.vllm.arguments.cmdline", "pdlint.launch.command", "pdlint.launch.mapping", "pdlint.config.variables",
         "pdlint.config.models", "pdlint.cache.runs", "pdlint.cache.store", "pdlint.load.reference.loader",
         "jsonschema", "ansible", "hashlib", "zipfile")
_PROBE = """
import json, sys
from pdlint import cli
from pdlint.schema import document
calls = []
whole = document.generate
document.generate = lambda: calls.append(1) or whole()
rc = cli.main(sys.argv[1:])
print(json.dumps([rc, len(calls), sorted(m for m in {lazy!r} if m in sys.modules)]))
"""


def _probe(*args: str) -> tuple[int, int, list[str]]:
    out = subprocess.run([sys.executable, "-c", _PROBE.format(lazy=_LAZY), *args], capture_output=True, text=True,
                         check=False)
    rc, generated, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return rc, generated, loaded


@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "args"])  # args: engines as command lines (below)
def test_a_plain_run_imports_nothing_it_does_not_use(tmp_path: Path, shape: str) -> None:
    generate(12, tmp_path / "inv", shape)
    rc, generated, loaded = _probe("--no-cache", "-f", "json", str(tmp_path / "inv"))
    assert rc in (0, 1) and generated == 0 and loaded == []  # findings or none: what matters is what was imported


def test_a_command_line_imports_the_parser(tmp_path: Path) -> None:
    generate(12, tmp_path / "inv")
    vars_file = next((tmp_path / "inv" / "host_vars").iterdir())
    vars_file.write_text(vars_file.read_text() + "vllm_args: --max-model-len 4096\n")
    _rc, _generated, loaded = _probe("--no-cache", "-f", "json", str(tmp_path / "inv"))
    assert "pdlint.vllm.arguments.cmdline" in loaded and "pdlint.cache.runs" not in loaded
    generate(12, tmp_path / "args", "args")  # the bench shape whose engines are command lines
    _rc, _generated, loaded = _probe("--no-cache", "-f", "json", str(tmp_path / "args"))
    assert "pdlint.vllm.arguments.cmdline" in loaded


def test_a_cached_run_imports_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generate(12, tmp_path / "inv")
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PDLINT_NO_CACHE", raising=False)
    _rc, _generated, loaded = _probe("-f", "json", str(tmp_path / "inv"))
    assert "pdlint.cache.runs" in loaded and "pdlint.vllm.arguments.cmdline" not in loaded


def test_each_property_alone_is_the_documents() -> None:
    from pdlint.schema import document

    doc = document.generate()
    assert all(document.property_schema(name) == schema for name, schema in doc["properties"].items())
    assert document.definitions_root() == {"definitions": doc["definitions"]}
    assert [document.property_schema(n) for n in ("vllm_", "vllm_no_such_flag", "pdlint_nope", "tp")] == [None] * 4

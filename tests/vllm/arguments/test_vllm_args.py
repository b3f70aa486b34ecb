"""The argument table (vllm/data/args.json) is what each release's own source says (differential, per release)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import vllm_source

from pdlint.vllm.arguments import args
from pdlint.vllm.releases import KNOWN, R

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import vllm_args  # the generator lives in tools/

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)
# An independent reading: every option string written as the first arguments of an add_argument call.
_OPTIONS = re.compile(r"add_argument\(\s*((?:[\"']-[^\"']+[\"']\s*,\s*)+)")


def _table(release):
    return {name: {"flags": list(a.flags), "aliases": list(a.aliases), "kind": a.kind,
                   **({"choices": list(a.choices)} if a.choices else {}),
                   **({"action": a.action} if a.action else {}), **({"item": a.item} if a.item else {}),
                   **({"nargs": a.nargs} if a.nargs is not None else {}),
                   **({"optional": True} if a.optional else {}), **({"or_text": True} if a.or_text else {}),
                   **({"engine": True} if a.engine else {})}
            for name, a in args.arguments(release).items()}


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_table_is_the_wheels(release):
    assert _table(release) == vllm_args.read(ROOTS[release])


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_every_written_option_is_in_the_table(release):
    root = ROOTS[release]
    written = set()
    for rel in (vllm_args.ENGINE, *vllm_args.SERVERS, vllm_args.SERVE):
        path = root / rel
        if path.is_file():
            for group in _OPTIONS.findall(path.read_text(encoding="utf-8")):
                written.update(re.findall(r"[\"'](-[^\"']+)[\"']", group))
    known = {o for a in args.arguments(release).values() for o in (*a.flags, *a.aliases)}
    assert written - known == set()


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_the_engine_marker_is_what_arg_utils_writes(release):
    """an argument is marked engine exactly when vllm/engine/arg_utils.py (EngineArgs /
    AsyncEngineArgs.add_cli_args, what Dynamo's worker parses) writes one of its option strings; read independently
    of the generator, by the same pattern as above."""
    written = set()
    for group in _OPTIONS.findall((ROOTS[release] / vllm_args.ENGINE).read_text(encoding="utf-8")):
        written.update(re.findall(r"[\"'](-[^\"']+)[\"']", group))
    table = args.arguments(release)
    engine = {o for a in table.values() if a.engine for o in (*a.flags, *a.aliases)}
    assert written - engine == set()
    assert {a.name for a in table.values() if a.engine and not set(a.flags) & written} == set()
    assert not table["port"].engine and not table["api_key"].engine and table["tensor_parallel_size"].engine


def test_flags_pd_rules_read():
    """Spot checks of the generated table (vllm/data/args.json, tools/vllm_args.py): aliases and switches by release."""
    tp = args.arguments(R("0.8.5"))["tensor_parallel_size"]
    assert (tp.kind, tp.aliases) == ("int", ("-tp",))
    assert "data_parallel_rank" not in args.arguments(R("0.9.1"))
    assert args.arguments(R("0.9.2"))["data_parallel_rank"].aliases == ("-dpn",)
    assert args.arguments(R("0.32.0"))["enable_prefix_caching"].spellings == (
        "--enable-prefix-caching", "--no-enable-prefix-caching")
    assert 256 in args.arguments(R("0.11.1"))["block_size"].choices
    assert 256 not in args.arguments(R("0.11.0"))["block_size"].choices
    assert args.arguments(R("0.32.0"))["headless"].action == "store_true"


@pytest.mark.parametrize(("release", "name", "value", "bad"), [
    ("0.32.0", "max_model_len", 32768, False),
    ("0.32.0", "max_model_len", "32k", False),
    ("0.32.0", "max_model_len", "long", True),
    ("0.32.0", "gpu_memory_utilization", 0.9, False),
    ("0.32.0", "gpu_memory_utilization", "0.9", False),
    ("0.32.0", "gpu_memory_utilization", "most", True),
    ("0.32.0", "enable_prefix_caching", True, False),
    ("0.32.0", "enable_prefix_caching", "false", True),
    ("0.32.0", "quantization", None, False),
    ("0.32.0", "quantization", "fp8", False),
    ("0.11.0", "block_size", 16, False),
    ("0.11.0", "block_size", "16", False),
    ("0.11.0", "block_size", 256, True),
    ("0.11.1", "block_size", 256, False),
    ("0.32.0", "dtype", "bf16", True),
    ("0.32.0", "max_num_seqs", 4.0, True),
])
def test_values_as_the_parser_takes_them(release, name, value, bad):
    from pdlint.vllm.arguments import variables

    assert (variables.problem(args.arguments(R(release))[name], value, R(release)) is not None) is bad

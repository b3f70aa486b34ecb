"""A `vllm_<name>` variable takes exactly what the command line's flag takes, per release:
vllm/arguments/variables.py against pdlint's own command-line parser and against each release's lifted parser."""
from __future__ import annotations

import functools
import random

import pytest
import vllm_flexparser
import vllm_source

from pdlint.vllm.arguments import cmdline, variables
from pdlint.vllm.arguments.args import Argument, arguments
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)
# what people write, right and wrong: human-readable sizes in every spelling, auto, numbers, JSON, words
TEXTS = ("32768", "32k", "32K", "32Ki", "1.5G", "1.5g", "2.5Gi", "1t", "1T", "auto", "AUTO", "-1", "0", "+4",
         "4.0", "0.9", "1e-1", "most", "None", "True", "false", "{\"a\": 1}", "{bad", "[1, 2]", "x", "fp8", "16",
         "256", "5_000", "1_000k")
PINNED = ("max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes", "tensor_parallel_size", "block_size",
          "gpu_memory_utilization", "kv_cache_dtype", "compilation_config", "served_model_name", "dtype")


@functools.cache
def _parser(release: Release):
    return vllm_flexparser.build(vllm_flexparser.lift(ROOTS[release]), release)


def _sample(release: Release) -> list[Argument]:
    """Per kind, a few of the release's arguments (seeded), and the P/D ones always."""
    table = arguments(release)
    rng = random.Random(f"variables-{release}")
    by_kind: dict[str, list[Argument]] = {}
    for arg in table.values():
        # the model and --config are the command line's own business (`vllm serve M`, a file read)
        if arg.kind not in ("bool", "any") and arg.nargs != "?" and arg.action != "append" \
                and arg.name not in ("model", "config"):
            by_kind.setdefault(arg.kind + str(arg.optional), []).append(arg)
    picked = {a.name for args in by_kind.values() for a in rng.sample(args, min(3, len(args)))}
    return [table[n] for n in sorted(picked | {n for n in PINNED if n in table})]


def _command_line_refuses(arg: Argument, text: str, release: Release) -> bool:
    got = cmdline.parse([cmdline.Token(w) for w in ("M", f"{arg.flags[0]}={text}")], release)
    return bool(got.problems)


def _release_refuses(arg: Argument, text: str, release: Release) -> bool:
    parser = _parser(release)
    try:
        vllm_flexparser.values(parser, ["M", f"{arg.flags[0]}={text}"])
    except Exception:  # noqa: BLE001 - argparse's SystemExit (Refused), ValueError...
        return True
    return False


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_a_variable_takes_what_the_flag_takes(release: Release) -> None:
    wrong = []
    refused = 0
    for arg in _sample(release):
        for text in TEXTS:
            by_variable = variables.problem(arg, text, release) is not None
            refused += by_variable
            if by_variable != _command_line_refuses(arg, text, release) or \
                    by_variable != _release_refuses(arg, text, release):
                wrong.append((arg.name, text, by_variable))
    assert not wrong, f"{release}: {wrong[:8]}"
    assert refused > 10


@pytest.mark.parametrize(("release", "name", "value", "bad"), [
    ("0.13.0", "max_model_len", "32Ki", True),   # human_readable_int: no binary "i" suffix in any release
    ("0.13.0", "max_model_len", "auto", True),   # human_readable_int_or_auto only from 0.14.0
    ("0.14.0", "max_model_len", "auto", False),
    ("0.14.0", "max_model_len", -1, False),
    ("0.33.0", "max_num_batched_tokens", "auto", True),  # auto is max_model_len's alone
    ("0.13.0", "kv_cache_memory_bytes", "1.5G", True),   # a decimal with a binary suffix
    ("0.13.0", "kv_cache_memory_bytes", "1.5g", False),
    ("0.12.0", "max_model_len", "1t", True),     # t/T from 0.13.0
    ("0.13.0", "max_model_len", "1t", False),
    ("0.33.0", "tensor_parallel_size", 4, False),
    ("0.33.0", "tensor_parallel_size", 4.0, True),  # rendered "4.0": int() refuses it
    ("0.33.0", "tensor_parallel_size", True, True),  # rendered "True"
    ("0.33.0", "gpu_memory_utilization", 0.9, False),
    ("0.33.0", "block_size", "16", False),
    ("0.11.0", "block_size", 256, True),
    ("0.11.1", "block_size", 256, False),
])
def test_yaml_values_as_the_role_renders_them(release: str, name: str, value: object, bad: bool) -> None:
    arg = arguments(R(release))[name]
    assert (variables.problem(arg, value, R(release)) is not None) is bad
    assert _release_refuses(arg, str(value), R(release)) is bad


def test_the_words_are_the_command_line_s() -> None:
    arg = arguments(R("0.13.0"))["max_model_len"]
    assert variables.problem(arg, "32Ki", R("0.13.0")) == "argument --max-model-len: invalid human_readable_int " \
                                                            "value: '32Ki'"
    got = cmdline.parse(cmdline.argv("M --max-model-len 32Ki"), R("0.13.0"))
    assert [p.message for p in got.problems] == [variables.problem(arg, "32Ki", R("0.13.0"))]

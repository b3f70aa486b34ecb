"""Rules reported by the launch stage on a command line kept in the inventory (launch/command.py)."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Topology
from ..base import Hit, rule


@rule("vllm-args[invalid]")
def invalid(_topo: Topology) -> Iterator[Hit]:
    """`vllm_args` holds a command line the host's vLLM release refuses (vllm serve exits 2).

    The line is read as that release's FlexibleArgumentParser reads it: dashes
    or underscores, `--flag=value`, its short aliases (`-tp`), switches as it
    spells them (`--no-x`, and from 0.33.0 `--disable-x` for `--enable-x`),
    JSON values, dotted sub-keys from 0.9.2, unambiguous prefixes
    (`--tensor-parallel 6` is TP 6), `--config FILE`. An unknown flag, an
    ambiguous prefix, a value of the wrong type or not among the choices, a
    missing value and an unclosed quote are errors at the word's own line and
    column, with "did you mean" where a flag is close.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: Qwen/Qwen3-0.6B}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_args: "vllm serve Qwen/Qwen3-0.6B --tensor-parallel-size 4"}
            d1: {vllm_pd_role: decode, vllm_args: ["--tensor-parallel-size", "4", "--max-model-len=32768"]}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_args: "--tensor-paralel-size 4"}
            d1: {vllm_pd_role: decode, vllm_args: "--tensor-parallel-size four"}
    """
    return iter(())


@rule("vllm-args[conflict]")
def conflict(_topo: Topology) -> Iterator[Hit]:
    """A `vllm_<name>` variable and a flag in `vllm_args` set one argument to different values.

    Which one the engine gets depends on how the role's template writes the
    command line (the later flag wins in vLLM's parser), so pdlint cannot say:
    the rules read the variable, and this error names both places. Equal
    values (4 and "4", a mapping and its JSON text) are no conflict.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4, vllm_args: "--tensor-parallel-size 4"}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4, vllm_args: "-tp 8"}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}
    """
    return iter(())

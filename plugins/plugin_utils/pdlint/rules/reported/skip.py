"""Rules about pdlint_skip itself, reported by the suppression stage (suppress.py), documented like the others."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Topology
from ..base import Hit, rule


@rule("skip[unused]", "warning")
def unused(_topo: Topology) -> Iterator[Hit]:
    """A pdlint_skip entry suppresses nothing on any host it applies to.

    An entry counts as used when a finding of that rule (or family) concerns
    a host carrying it. A stale entry would silently hide the next real
    problem, so remove it once the finding it was for is fixed. Entries that
    name the `skip` family itself are never reported.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_pipeline_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0"},
                 pdlint_skip: ["gpu[count]"]}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, pdlint_skip: ["gpu[count]"]}
            d1: {vllm_pd_role: decode}
    """
    return iter(())


@rule("skip[unknown]", "warning")
def unknown(_topo: Topology) -> Iterator[Hit]:
    """A pdlint_skip entry names no pdlint rule id or rule family.

    A misspelt entry suppresses nothing; the hint names the closest rule id.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}, pdlint_skip: [gpu]}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_env: {CUDA_VISIBLE_DEVICES: "0,1"}, pdlint_skip: ["gpu[cuont]"]}
            d1: {vllm_pd_role: decode}
    """
    return iter(())

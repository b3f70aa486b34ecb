"""memory[max-model-len], memory[kv-capacity]: what the prefill side accepts, the decode side must hold.

Per deployment, not per pair: the largest prefill figure against each decode engine (vllm/model/memory.py).
"""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Deployment, Engine, Topology
from ...vllm.model.memory import batch, fit, max_model_len
from ..base import Hit, hit, rule


@rule("memory[max-model-len]", "warning")
def max_len(topo: Topology) -> Iterator[Hit]:
    """The decode side's max_model_len is below the prefill side's: requests the prefill accepts fail on decode.

    Each side checks a request's length against its own max_model_len. A
    prompt the prefill engine takes, up to its limit, reaches a decode
    engine that rejects it or cannot hold its KV cache. Only values both
    sides set are compared: an unset side's limit is the model's config
    length, which the router in front usually caps; -1 or auto (0.14.0 -)
    is not compared.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-8B-Instruct}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_max_model_len: 32768}
            d1: {vllm_pd_role: decode, vllm_max_model_len: 32768}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-8B-Instruct}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_max_model_len: 65536}
            d1: {vllm_pd_role: decode, vllm_max_model_len: 32768}
    """
    for dep in topo.deployments:
        longest = _longest_prefill(dep)
        if longest is None:
            continue
        length, engine = longest
        for decode in dep.decode:
            own, source = max_model_len(decode.lead)
            if own is not None and source == "vllm_max_model_len" and own < length:
                yield hit(decode, ("max_model_len", "model"),
                          f"decode max_model_len {own} is below prefill {engine.lead.label}'s {length}: "
                          f"requests of {own + 1} - {length} tokens pass the prefill and fail on the decode",
                          f"set vllm_max_model_len: {length} on the decode side, or lower the prefill's to {own}",
                          also=(engine,))


def _longest_prefill(dep: Deployment) -> tuple[int, Engine] | None:
    best: tuple[int, Engine] | None = None
    for engine in dep.prefill:
        length, source = max_model_len(engine.lead)
        if length is not None and source == "vllm_max_model_len" and (best is None or length > best[0]):
            best = (length, engine)
    return best


@rule("memory[kv-capacity]", "warning")
def kv_capacity(topo: Topology) -> Iterator[Hit]:
    """A decode engine's KV cache holds fewer tokens than one prefill batch (max_num_batched_tokens).

    The decode side receives the KV cache of what the prefill side computed:
    one prefill step of max_num_batched_tokens tokens, transferred at once,
    cannot land in a decode cache of fewer tokens (capacity: what is left of
    gpu_memory_utilization x GPU memory after the weights, in whole blocks;
    an upper bound, since activations are not counted). Only an explicit
    prefill vllm_max_num_batched_tokens is compared, and only where the
    decode GPU's memory is known.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_tensor_parallel_size: 4, vllm_max_model_len: 8192}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_max_num_batched_tokens: 16384}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_max_model_len: 8192}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4, vllm_max_num_batched_tokens: 65536}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2}
    """
    for dep in topo.deployments:
        batches = [(b, e) for e in dep.prefill for b in (batch(e.lead),) if b is not None]
        if not batches:
            continue
        largest, engine = max(batches, key=lambda item: item[0])
        for decode in dep.decode:
            found = fit(decode.lead)
            tokens = found.capacity() if found is not None else None
            if tokens is not None and 0 < tokens < largest:
                yield hit(decode, ("tensor_parallel_size", "gpu_memory_utilization", "model"),
                          f"decode KV cache holds {tokens} tokens, less than prefill {engine.lead.label}'s "
                          f"max_num_batched_tokens {largest}: one prefill batch's KV cache does not fit on the decode",
                          "raise the decode's TP or gpu_memory_utilization, or lower the prefill's "
                          f"vllm_max_num_batched_tokens to at most {tokens}", also=(engine,))

"""memory[*]: each engine's weights and one max_model_len sequence of KV cache on its GPUs (vllm/model/memory.py)."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology import gpus
from ...topology.types import Instance, Topology
from ...vllm.model import memory_text
from ...vllm.model.memory import GIB, MARGIN, Fit, fit
from ..base import Hit, each_body, hit, rule, words

_TP = ("tensor_parallel_size", "pipeline_parallel_size", "model")


def _gib(value: int) -> str:
    return f"{value / GIB:.2f} GiB"


@rule("memory[gpu-type]")
def gpu_type(topo: Topology) -> Iterator[Hit]:
    """vllm_host_gpu_type names no GPU of pdlint's table.

    The type gives the GPU's memory when vllm_host_gpu_memory_gib is unset
    (docs/gpus.md lists the table: each GPU's memory as the runtime reports
    it, with its source). Spellings are the table's (H100-SXM, A100-80GB,
    MI300X) or the runtime's own (`NVIDIA H100 80GB HBM3`), in any case.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_host_gpu_type: H100-SXM}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_host_gpu_type: H100}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, message in each_body(topo, _gpu_type):
        yield hit(inst, ("host_gpu_type",), message[0], message[1])


def _gpu_type(inst: Instance) -> tuple[tuple[str, str], ...]:
    if not inst.gpu_type or not inst.knows("host_gpu_type") or gpus.find(inst.gpu_type) is not None:
        return ()
    near = gpus.meant(inst.gpu_type)
    hint = (f"did you mean {words(near)}?" if near else "name a GPU of docs/gpus.md") + \
        " Or set vllm_host_gpu_memory_gib to the memory the runtime reports"
    return ((f"vllm_host_gpu_type {inst.gpu_type!r} is not a GPU pdlint knows, so its memory is unknown", hint),)


@rule("memory[weights]")
def weights(topo: Topology) -> Iterator[Hit]:
    """An engine's share of the model's weights leaves nothing for the KV cache on its GPU.

    Each worker may use `GPU memory x gpu_memory_utilization`
    (v1/worker/gpu_worker.py init_device; the default is 0.9, 0.92 from
    0.20.0) and holds the weights / (TP x PP). When they take all of it, vLLM stops with
    "No available memory for the cache blocks" (or runs out of memory while
    loading them); with --kv-cache-memory-bytes the weights and that cache
    must fit the GPU. The weights are the model table's (a lower bound from
    the parameter count; see `pdlint models NAME`), less --cpu-offload-gb
    per GPU; quantized and float32 engines are not checked. Nothing is checked where the GPU's memory is
    unknown (vllm_host_gpu_memory_gib or vllm_host_gpu_type).

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_tensor_parallel_size: 4, vllm_max_model_len: 32768}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_max_model_len: 32768}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}
    """
    for inst, (message, hint) in each_body(topo, _weights):
        yield hit(inst, _TP, message, hint)


def _weights(inst: Instance) -> tuple[tuple[str, str], ...]:
    found = fit(inst)
    if found is None or found.weights is None or found.budget is None:
        return ()
    room = found.gpu if found.kv_set is not None else found.budget
    if room is None:
        return ()
    need = found.weights + (found.kv_set or 0)
    if need < room:
        return ()
    model = inst.model or "the model"
    if found.kv_set is not None:
        said = (f"{_gib(found.weights)} of weights per rank plus --kv-cache-memory-bytes {_gib(found.kv_set)} "
                f"exceed the GPU's {_gib(room)}")
    else:
        said = (f"{model}'s weights take {_gib(found.weights)} per rank at TP {inst.tp} x PP {inst.pp}, all of the "
                f"{_gib(room)} a worker may use ({_gib(found.gpu or 0)} x gpu_memory_utilization "
                f"{found.utilization}): vLLM {found.release} stops with \"{memory_text.no_memory(found.release)}\"")
    return ((said, _tp_hint(inst, found)),)


def _tp_hint(inst: Instance, found: Fit) -> str:
    total = (found.weights or 0) * inst.tp * inst.pp
    room = (found.budget or 0) - MARGIN
    tp = inst.tp
    while tp <= 64 and total // (tp * inst.pp) >= room:
        tp *= 2
    more = f"use TP {tp} ({_gib(total // (tp * inst.pp))} of weights per rank), or " if tp <= 64 else ""
    return f"{more}a GPU with more memory, or a quantized checkpoint"


@rule("memory[kv-cache]")
def kv_cache(topo: Topology) -> Iterator[Hit]:
    """One max_model_len sequence's KV cache does not fit beside the weights: vLLM refuses to start.

    check_enough_kv_cache_memory (v1/core/kv_cache_utils.py) compares the KV
    cache one request of max_model_len needs on a worker (its PP stage's
    layers; KV heads per rank max(1, K / TP); the kv-cache dtype and block
    size; sliding-window and chunked layers kept short by the hybrid KV cache
    manager) with the memory left after the weights. pdlint leaves out
    activations and CUDA graphs, so a sequence that does not fit here does
    not fit in vLLM's either. The message is the release's own; the hint
    names the longest max_model_len that fits (max_model_len unset: the
    model's config length). Mamba and linear-attention models, and engines
    with decode context parallelism (which shards the KV cache), are not
    checked.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_tensor_parallel_size: 4}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_tensor_parallel_size: 2, vllm_max_model_len: 131072}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, (message, hint) in each_body(topo, _kv_cache):
        yield hit(inst, ("max_model_len", *_TP), message, hint)


def _kv_cache(inst: Instance) -> tuple[tuple[str, str], ...]:
    found = fit(inst)
    if found is None or not found.layers or found.max_model_len is None or _weights(inst):
        return ()
    room = found.available
    if room is None:
        return ()
    need = found.needed(found.max_model_len)
    if need <= room:
        return ()
    longest = found.longest(room, found.max_model_len)
    said = memory_text.not_enough(found.release, found.max_model_len, need, room, longest)
    where = "" if found.len_source == "vllm_max_model_len" else f" (max_model_len unset: {found.len_source}'s)"
    hint = (f"set vllm_max_model_len to at most {longest}" if longest else "raise TP or PP") + \
        f"{where}, raise TP or PP, or raise gpu_memory_utilization (now {found.utilization})"
    return ((f"vLLM {found.release} refuses to start: {said}", hint),)


@rule("memory[margin]", "warning")
def margin(topo: Topology) -> Iterator[Hit]:
    """One max_model_len sequence fits, but with less left than activations and CUDA graphs usually take.

    vLLM's profile run takes the activation peak of one batch, the CUDA
    context, NCCL buffers and CUDA graphs before the KV cache gets the rest;
    together usually 1 - 4 GiB per GPU. pdlint counts none of it, so when
    less than 2 GiB is left after the weights and one sequence's KV cache,
    the start-up check is likely to fail where pdlint's figures pass.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_tensor_parallel_size: 4}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-70B-Instruct,
                 vllm_host_gpu_type: H100-SXM, vllm_tensor_parallel_size: 2, vllm_max_model_len: 32768,
                 vllm_gpu_memory_utilization: 0.9}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, (message, hint) in each_body(topo, _margin):
        yield hit(inst, ("max_model_len", "gpu_memory_utilization", *_TP), message, hint)


def _margin(inst: Instance) -> tuple[tuple[str, str], ...]:
    found = fit(inst)
    if found is None or not found.layers or found.max_model_len is None or found.kv_set is not None:
        return ()
    room = found.available
    if room is None or _weights(inst) or _kv_cache(inst):
        return ()
    left = room - found.needed(found.max_model_len)
    if left >= MARGIN:
        return ()
    return ((f"after {_gib(found.weights or 0)} of weights per rank and {_gib(found.needed(found.max_model_len))} "
             f"of KV cache for one {found.max_model_len}-token sequence, {_gib(left)} is left of the "
             f"{_gib(found.budget or 0)} a worker may use: activations and CUDA graphs usually take "
             f"{_gib(MARGIN)} or more",
             f"lower vllm_max_model_len to at most {found.longest(room - MARGIN, found.max_model_len)}, raise TP, "
             "or raise gpu_memory_utilization"),)

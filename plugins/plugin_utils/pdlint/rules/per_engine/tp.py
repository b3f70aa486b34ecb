"""tp[*] and model-facts: each engine's TP must split the model's heads."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology
from ...vllm import parallel
from ..base import Hit, each_body, hit, rule
from ..pair.pair_hints import tp_hint_for

_FACT_VARS = {"heads": "vllm_model_num_attention_heads", "kv_heads": "vllm_model_num_kv_heads",
              "mla": "vllm_model_is_mla"}


@rule("tp[heads]")
def heads(topo: Topology) -> Iterator[Hit]:
    """The model's attention heads H are not divisible by the instance's TP.

    vLLM 0.32.0 ModelConfig.verify_with_parallel_config (config/model.py):
    "Total number of attention heads (H) must be divisible by tensor parallel size (TP)."

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-8B-Instruct}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-8B-Instruct}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 6}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}
    """
    for inst, message in each_body(topo, _heads):  # the engine's own settings: once per body (hints per instance)
        yield hit(inst, ("tensor_parallel_size",), message, tp_hint_for(topo, inst))


def _heads(inst: Instance) -> tuple[str, ...]:
    total = inst.facts.heads
    if total and inst.knows("tensor_parallel_size") and total % inst.tp:
        return (f"{inst.facts.heads} attention heads{_said(inst, 'heads')} are not divisible by TP {inst.tp}",)
    return ()


@rule("tp[kv-heads]")
def kv_heads(topo: Topology) -> Iterator[Hit]:
    """TP does not split or replicate the model's KV heads K evenly.

    vLLM's QKV projection (QKVParallelLinear) replicates KV heads when
    TP >= K (needs TP % K == 0) and splits them when TP < K (needs
    K % TP == 0). MLA models have one latent KV replicated on every rank, so
    only tp[heads] applies to them.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: Qwen/Qwen2.5-7B-Instruct}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 4}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: my-org/custom
            vllm_model_num_attention_heads: 24
            vllm_model_num_kv_heads: 4
            vllm_model_is_mla: false
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 6}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 6}
    """
    for inst, message in each_body(topo, _kv_heads):  # the engine's own settings: once per body (hints per instance)
        yield hit(inst, ("tensor_parallel_size",), message, tp_hint_for(topo, inst))


def _kv_heads(inst: Instance) -> tuple[str, ...]:
    k = inst.facts.kv_heads
    if (k and inst.facts.mla is False and inst.knows("tensor_parallel_size")
            and not parallel.kv_split_ok(inst.tp, k, False)):
        how = "replicate" if inst.tp >= k else "split"
        return (f"TP {inst.tp} cannot {how} the model's {k} KV heads{_said(inst, 'kv_heads')} evenly",)
    return ()


def _said(inst: Instance, attr: str) -> str:
    """" (from FILE ...)" when the fact came from a config.json or the config file's models: table: the inventory
    names the variable itself, and `pdlint models` lists pdlint's table."""
    source = dict(inst.facts.where).get(attr, "")
    return "" if not source or source == "inventory" or source.startswith("pdlint model table") else f" (from {source})"


def _missing(inst: Instance) -> list[str]:
    facts = inst.facts
    return [var for attr, var in _FACT_VARS.items() if getattr(facts, attr) is None]


@rule("model-facts", "warning")
def model_facts(topo: Topology) -> Iterator[Hit]:
    """A rule needs the model's heads, KV heads or MLA flag, and they are unknown.

    The TP and KV-head rules are skipped for such an instance. pdlint looks, in
    order (first match wins, each fact says where it came from): the
    inventory's vllm_model_* variables; the config file's `models:` table
    (facts, or `config: path/to/config.json`); config.json in the directory
    vllm_model names (absolute, or relative to the inventory); the model in
    the Hugging Face cache (HF_HUB_CACHE, HF_HOME; the snapshot vllm_revision
    names, else refs/main); pdlint's model table (`pdlint models`). A
    config.json is read as the instance's vLLM release reads it
    (ModelConfig.get_total_num_kv_heads up to 0.13.0, the
    model_arch_config_convertor classes from 0.14.0), with the defaults of the
    transformers config class vLLM builds for it (a llava text_config without
    heads has LlamaConfig's 32); one vLLM would reject is an error at that
    file, and a text config whose class pdlint has no defaults for leaves the
    facts unknown. The warning lists the places looked in, and why a
    config.json found there did not tell.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: my-org/custom
            vllm_model_num_attention_heads: 32
            vllm_model_num_kv_heads: 8
            vllm_model_is_mla: false
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_model: my-org/custom}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}
            d1: {vllm_pd_role: decode, vllm_tensor_parallel_size: 2}
    """
    for inst, (message, fix) in each_body(topo, _facts_missing):  # the engine's own settings: once per body
        yield hit(inst, ("model", "tensor_parallel_size"), message, fix)


def _facts_missing(inst: Instance) -> tuple[tuple[str, str], ...]:
    missing = _missing(inst)
    if not (missing and inst.tp > 1):
        return ()
    model = f"model {inst.model!r}" if inst.model else "the model (vllm_model is not set)"
    looked = "; ".join(inst.facts.looked) or "pdlint's model table"
    return ((f"{model}: {_unknown(inst)} unknown (looked in: {looked}); TP and KV-head rules are skipped",
             "set " + ", ".join(missing) + ", add the model to the config file's models: table, or put "
             "its config.json where pdlint looks"),)


def _unknown(inst: Instance) -> str:
    names = {"heads": "attention heads", "kv_heads": "KV heads", "mla": "MLA flag"}
    return ", ".join(names[attr] for attr in _FACT_VARS if getattr(inst.facts, attr) is None)

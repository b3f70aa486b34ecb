"""memory[max-model-len], memory[kv-capacity]: the decode side must hold what the prefill side accepts."""
from __future__ import annotations

import json
from typing import Any

import pytest


def _hosts(top: dict[str, Any], **hosts: dict[str, Any]) -> str:
    lines = ["all:", f"  vars: {json.dumps(top)}", "  hosts:"]
    lines += [f"    {name}: {json.dumps(own)}" for name, own in hosts.items()]
    return "\n".join(lines) + "\n"


def _at(hosts: str, line: int, key: str) -> tuple[int, int]:
    text = hosts.splitlines()[line - 1]
    return line, text.index(f'"{key}": ') + len(f'"{key}": ') + 1


@pytest.mark.parametrize(("model", "prefill", "decode", "said"), [
    ("meta-llama/Llama-3.1-8B-Instruct", 65536, 32768, "decode max_model_len 32768"),
    ("Qwen/Qwen3-8B", "64k", "16k", "decode max_model_len 16000"),  # human-readable ints, as vLLM reads them
])
def test_decode_shorter_than_prefill(lint, model: str, prefill: Any, decode: Any, said: str) -> None:
    p: dict[str, Any] = {"vllm_pd_role": "prefill"}
    p["vllm_max_model_len"] = prefill
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": model, "vllm_version": "0.20.0"}, p1=p,
                   d1={"vllm_pd_role": "decode", "vllm_max_model_len": decode})
    [hit] = [f for f in lint(hosts) if f.rule == "memory[max-model-len]"]
    assert hit.severity == "warning" and hit.message.startswith(said + " ") and "below prefill p1's" in hit.message
    assert (hit.origin.line, hit.origin.column) == _at(hosts, 5, "vllm_max_model_len")
    assert hit.hosts == ("d1", "p1")


@pytest.mark.parametrize(("prefill", "decode"), [(32768, 32768), (16384, 32768), ("auto", 8192), (None, 8192)])
def test_decode_as_long_or_longer_is_clean(lint, prefill: Any, decode: Any) -> None:
    p: dict[str, Any] = {"vllm_pd_role": "prefill"}
    if prefill is not None:  # unset: the model's config length, not compared
        p["vllm_max_model_len"] = prefill
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": "meta-llama/Llama-3.1-8B-Instruct"}, p1=p,
                   d1={"vllm_pd_role": "decode", "vllm_max_model_len": decode})
    assert not [f for f in lint(hosts) if f.rule == "memory[max-model-len]"]


@pytest.mark.parametrize(("gpu", "tp", "batch", "flagged"), [
    ("H100-SXM", 2, 65536, True), ("H100-SXM", 4, 65536, False), ("A100-80GB", 2, 65536, True), ("A100-80GB", 2, 49152, False),
    ("H200", 2, 65536, False),
])
def test_decode_capacity_below_one_prefill_batch(lint, gpu: str, tp: int, batch: int, flagged: bool) -> None:
    hosts = _hosts({"vllm_pd_deployment": "chat", "vllm_model": "meta-llama/Llama-3.1-70B-Instruct",
                    "vllm_max_model_len": 8192},
                   p1={"vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 8, "vllm_max_num_batched_tokens": batch},
                   d1={"vllm_pd_role": "decode", "vllm_tensor_parallel_size": tp, "vllm_host_gpu_type": gpu})
    hits = [f for f in lint(hosts) if f.rule == "memory[kv-capacity]"]
    assert bool(hits) is flagged
    if flagged:
        [hit] = hits
        assert hit.message.startswith("decode KV cache holds ") and f"max_num_batched_tokens {batch}" in hit.message
        assert (hit.origin.line, hit.origin.column) == _at(hosts, 5, "vllm_tensor_parallel_size")

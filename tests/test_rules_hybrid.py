"""Rule tables: hybrid models (sliding window, Mamba/SSM) against the hybrid KV cache manager, per release (issue 28)."""
from __future__ import annotations

import json
from typing import Any

import pytest

MAMBA = "Qwen/Qwen3.5-35B-A3B"
SLIDING = "openai/gpt-oss-20b"


def dep(connector: str, version: str, model: str = MAMBA, env: dict[str, str] | None = None,
        **common: Any) -> str:
    """Prefill p1 and decode d1 of one deployment, both with connector."""
    def host(role: str, kv_role: str) -> dict[str, Any]:
        return {"vllm_pd_role": role, "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": kv_role}}
    top: dict[str, Any] = {"vllm_pd_deployment": "dep", "vllm_model": model, "vllm_version": version,
                           **{"vllm_" + k: v for k, v in common.items()}}
    if env:
        top["vllm_env"] = env
    return json.dumps({"all": {"vars": top, "hosts": {"p1": host("prefill", "kv_producer"),
                                                     "d1": host("decode", "kv_consumer")}}})


HMA_OFF = [
    # (fires?, inventory): a Mamba/SSM hybrid with HMA resolved off does not start.
    (True, dep("MooncakeConnector", "0.21.0")),  # unset: 0.13 - 0.21 any connector turns it off
    (False, dep("MooncakeConnector", "0.21.0", disable_hybrid_kv_cache_manager=False)),
    (False, dep("MooncakeConnector", "0.22.0")),  # 0.22: the class is SupportsHMA, so it stays on
    (True, dep("LMCacheConnectorV1", "0.27.0")),  # not SupportsHMA: off; _promote_local_kv_cache_specs raises
    (False, dep("LMCacheConnectorV1", "0.31.0")),  # 0.31+: attention and Mamba layers promoted apart
    (True, dep("NixlConnector", "0.33.0", disable_hybrid_kv_cache_manager=True)),  # NIXL asserts HMA
    (False, dep("MooncakeConnector", "0.33.0", disable_hybrid_kv_cache_manager=True)),
    (True, dep("NixlConnector", "0.12.0")),  # 0.9.1 - 0.12: any connector forces it off
    (False, dep("LMCacheConnectorV1", "0.27.0", model=SLIDING)),  # sliding-window layers become full attention
]


@pytest.mark.parametrize(("fires", "hosts"), HMA_OFF, ids=[str(i) for i in range(len(HMA_OFF))])
def test_mamba_model_with_hma_off(fires: bool, hosts: str, lint) -> None:
    found = [f for f in lint(hosts) if f.rule == "connector[config]" and "Mamba/SSM layers" in f.message]
    assert bool(found) is fires, [f.message for f in found]
    for finding in found:
        assert "does not start" in finding.message and finding.hint

"""Rule tables: hybrid models (sliding window, Mamba/SSM) against the hybrid KV cache manager, per release."""
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
    (True, dep("LMCacheConnectorV1", "0.31.0")),  # 0.31+: attention and Mamba share the dcp_sharded group: raises
    (True, dep("NixlConnector", "0.33.0", disable_hybrid_kv_cache_manager=True)),  # NIXL asserts HMA
    (True, dep("MooncakeConnector", "0.33.0", disable_hybrid_kv_cache_manager=True)),  # unify raises
    (True, dep("NixlConnector", "0.12.0")),  # 0.9.1 - 0.12: any connector forces it off
    (False, dep("LMCacheConnectorV1", "0.27.0", model=SLIDING)),  # sliding-window layers become full attention
]


@pytest.mark.parametrize(("fires", "hosts"), HMA_OFF, ids=[str(i) for i in range(len(HMA_OFF))])
def test_mamba_model_with_hma_off(fires: bool, hosts: str, lint) -> None:
    found = [f for f in lint(hosts) if f.rule == "connector[config]" and "Mamba/SSM layers" in f.message]
    assert bool(found) is fires, [f.message for f in found]
    for finding in found:
        assert "does not start" in finding.message and finding.hint


def moriio(version: str, read: bool, model: str = MAMBA, env: dict[str, str] | None = None, **common: Any) -> str:
    hosts = json.loads(dep("MoRIIOConnector", version, model, env, **common))
    for host in hosts["all"]["hosts"].values():
        host["vllm_kv_transfer_config"]["kv_connector_extra_config"] = {"http_port": 8000,
                                                                         "read_mode": "true" if read else "false"}
    return json.dumps(hosts)


DS = {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}
START = [
    # (fires?, words in the message, inventory): connector start checks of hybrid models.
    (True, "3-read Mamba conv transfer", dep("NixlConnector", "0.22.0")),  # DS layout: SD unless the env says DS
    (False, "3-read Mamba conv transfer", dep("NixlConnector", "0.22.0", env=DS)),
    (True, "3-read Mamba conv transfer", dep("NixlConnector", "0.33.0", env={"VLLM_SSM_CONV_STATE_LAYOUT": "SD"})),
    (False, "3-read Mamba conv transfer", dep("NixlConnector", "0.19.0", disable_hybrid_kv_cache_manager=False)),
    (True, "only supports sliding-window hybrid", moriio("0.30.0", True, env=DS)),  # 0.30: Mamba unsupported
    (False, "only supports sliding-window hybrid", moriio("0.31.0", True, env=DS)),
    (True, "KDA conv transfer", moriio("0.31.0", True)),  # 0.31+: READ needs DS
    (False, "KDA conv transfer", moriio("0.32.0", False)),  # WRITE is refused earlier (tp-ratio[moriio-write])
    (True, "KDA conv transfer", moriio("0.33.0", False)),  # 0.33: both modes
    (True, "WRITE mode does not support", moriio("0.30.0", False, model=SLIDING)),
    (True, "WRITE mode does not support", moriio("0.33.0", False, model=SLIDING)),
    (False, "WRITE mode does not support", moriio("0.33.0", True, model=SLIDING)),
    (False, "WRITE mode does not support", moriio("0.30.0", False, model=SLIDING,
                                                  disable_hybrid_kv_cache_manager=True)),
]


@pytest.mark.parametrize(("fires", "words", "hosts"), START, ids=[str(i) for i in range(len(START))])
def test_hybrid_connector_start(fires: bool, words: str, hosts: str, lint) -> None:
    found = [f for f in lint(hosts) if f.rule == "connector[config]" and words in f.message]
    assert bool(found) is fires, [f.message for f in lint(hosts)]
    for finding in found:
        assert finding.hint
        if "conv" in words:
            assert "VLLM_SSM_CONV_STATE_LAYOUT: DS" in finding.hint

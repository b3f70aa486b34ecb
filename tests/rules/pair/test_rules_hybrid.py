"""Rule tables: hybrid models (sliding window, Mamba/SSM) against the hybrid KV cache manager, per release."""
from __future__ import annotations

from typing import Any

import pytest
import yaml
from inv import assert_points, flow

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
    return flow({"all": {"vars": top, "hosts": {"p1": host("prefill", "kv_producer"),
                                                "d1": host("decode", "kv_consumer")}}})


HMA_OFF = [
    # (where it points (inv.where's path; None: must not fire), inventory): a Mamba/SSM hybrid with HMA
    # resolved off does not start.
    ("p1.kv.kv_connector", dep("MooncakeConnector", "0.21.0")),  # unset: 0.13 - 0.21 any connector turns it off
    (None, dep("MooncakeConnector", "0.21.0", disable_hybrid_kv_cache_manager=False)),
    (None, dep("MooncakeConnector", "0.22.0")),  # 0.22: the class is SupportsHMA, so it stays on
    ("p1.kv.kv_connector", dep("LMCacheConnectorV1", "0.27.0")),  # not SupportsHMA: off; _promote_local_kv_cache_specs raises
    ("p1.kv.kv_connector", dep("LMCacheConnectorV1", "0.31.0")),  # 0.31+: attention and Mamba share the dcp_sharded group: raises
    ("vars.disable_hybrid_kv_cache_manager", dep("NixlConnector", "0.33.0", disable_hybrid_kv_cache_manager=True)),  # NIXL asserts HMA
    ("vars.disable_hybrid_kv_cache_manager", dep("MooncakeConnector", "0.33.0", disable_hybrid_kv_cache_manager=True)),  # unify raises
    ("p1.kv.kv_connector", dep("NixlConnector", "0.12.0")),  # 0.9.1 - 0.12: any connector forces it off
    (None, dep("LMCacheConnectorV1", "0.27.0", model=SLIDING)),  # sliding-window layers become full attention
]


@pytest.mark.parametrize(("at", "hosts"), HMA_OFF, ids=[str(i) for i in range(len(HMA_OFF))])
def test_mamba_model_with_hma_off(at: str | None, hosts: str, lint) -> None:
    found = [f for f in lint(hosts) if f.rule == "connector[config]" and "Mamba/SSM layers" in f.message]
    assert_points(found, "connector[config]", at, hosts)
    for finding in found:
        assert "does not start" in finding.message and finding.hint


def moriio(version: str, read: bool, model: str = MAMBA, env: dict[str, str] | None = None, **common: Any) -> str:
    hosts = yaml.safe_load(dep("MoRIIOConnector", version, model, env, **common))
    for host in hosts["all"]["hosts"].values():
        host["vllm_kv_transfer_config"]["kv_connector_extra_config"] = {"http_port": 8000,
                                                                         "read_mode": "true" if read else "false"}
    return flow(hosts)


DS = {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}
START = [
    # (where it points (None: must not fire), words in the message, inventory): connector start checks of
    # hybrid models.
    ("p1.kv.kv_connector", "3-read Mamba conv transfer", dep("NixlConnector", "0.22.0")),  # DS layout: SD unless the env says DS
    (None, "3-read Mamba conv transfer", dep("NixlConnector", "0.22.0", env=DS)),
    ("vars.env.VLLM_SSM_CONV_STATE_LAYOUT", "3-read Mamba conv transfer", dep("NixlConnector", "0.33.0", env={"VLLM_SSM_CONV_STATE_LAYOUT": "SD"})),
    (None, "3-read Mamba conv transfer", dep("NixlConnector", "0.19.0", disable_hybrid_kv_cache_manager=False)),
    ("p1.kv.extra", "only supports sliding-window hybrid", moriio("0.30.0", True, env=DS)),  # 0.30: Mamba unsupported
    (None, "only supports sliding-window hybrid", moriio("0.31.0", True, env=DS)),
    ("p1.kv.extra", "KDA conv transfer", moriio("0.31.0", True)),  # 0.31+: READ needs DS
    (None, "KDA conv transfer", moriio("0.32.0", False)),  # WRITE is refused earlier (tp-ratio[moriio-write])
    ("p1.kv.extra", "KDA conv transfer", moriio("0.33.0", False)),  # 0.33: both modes
    ("p1.kv.extra.read_mode", "WRITE mode does not support", moriio("0.30.0", False, model=SLIDING)),
    ("p1.kv.extra.read_mode", "WRITE mode does not support", moriio("0.33.0", False, model=SLIDING)),
    (None, "WRITE mode does not support", moriio("0.33.0", True, model=SLIDING)),
    (None, "WRITE mode does not support", moriio("0.30.0", False, model=SLIDING,
                                                  disable_hybrid_kv_cache_manager=True)),
]


@pytest.mark.parametrize(("at", "words", "hosts"), START, ids=[str(i) for i in range(len(START))])
def test_hybrid_connector_start(at: str | None, words: str, hosts: str, lint) -> None:
    found = [f for f in lint(hosts) if f.rule == "connector[config]" and words in f.message]
    assert_points(found, "connector[config]", at, hosts)
    for finding in found:
        assert finding.hint
        if "conv" in words:
            assert "VLLM_SSM_CONV_STATE_LAYOUT: DS" in finding.hint

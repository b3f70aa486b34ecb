"""pd-mismatch[kv-cache-layout]: a rule table of small inventories (the per-release grid: test_vllm_nixl_layout.py)."""
from __future__ import annotations

from typing import Any

import pytest

from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.topology.build import build

NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
RULE = "pd-mismatch[kv-cache-layout]"


def _fires(version: str, p: dict[str, Any], d: dict[str, Any], model: str = "meta-llama/Llama-3.1-8B-Instruct",
           config: dict[str, Any] = NIXL) -> bool:
    def hv(name: str, role: str, own: dict[str, Any]) -> HostVars:
        values = {"vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_version": version, "vllm_model": model,
                  "vllm_kv_transfer_config": config}
        if "layout" in own:
            values["vllm_env"] = {"VLLM_KV_CACHE_LAYOUT": own["layout"]}
        values["vllm_tensor_parallel_size"] = own.get("tp", 1)
        return HostVars(name, values)

    topo, _ = build([hv("p", "prefill", p), hv("d", "decode", d)])
    return bool(list(REGISTRY[RULE].check(topo)))


@pytest.mark.parametrize(("version", "p", "d", "fires"), [
    ("0.33.0", {"layout": "NHD"}, {"layout": "HND"}, True),  # RuntimeError "... expects same kv_cache_layout"
    ("0.33.0", {"layout": "HND"}, {"layout": "LBHNC"}, False),  # one layout, two names
    ("0.33.0", {"layout": "NHD"}, {"layout": "LBNHC"}, False),
    ("0.33.0", {"layout": "LHBNC"}, {"layout": "LBHNC"}, True),
    ("0.33.0", {"layout": "HND"}, {"layout": "NHD"}, False),  # enable_permute_local_kv may allow: not checked
    ("0.33.0", {"layout": "NHD"}, {}, False),  # decode's layout is the backend's: not checked
    ("0.20.0", {"layout": "NHD"}, {"layout": "HND"}, True),
    ("0.11.1", {"layout": "NHD"}, {"layout": "HND"}, True),  # every TP from 0.11.1
    ("0.11.0", {"layout": "NHD"}, {"layout": "HND"}, False),  # 0.10.1 - 0.11.0: only decode TP > prefill TP
    ("0.11.0", {"layout": "NHD", "tp": 2}, {"layout": "HND", "tp": 4}, True),
    ("0.11.0", {"layout": "NHD", "tp": 8}, {"layout": "HND", "tp": 16}, False),  # prefill TP >= K: replicated
    ("0.10.0", {"layout": "NHD", "tp": 2}, {"layout": "HND", "tp": 4}, False),  # no layout check yet
    ("0.33.0", {"layout": "HND", "tp": 2}, {"layout": "NHD", "tp": 4}, False),  # permutable: not checked
    ("0.33.0", {"layout": "LBHNC", "tp": 2}, {"layout": "LHBNC", "tp": 4}, True),
    ("0.33.0", {"tp": 2}, {"layout": "LHBNC", "tp": 4}, True),  # heads not contiguous: decode's own layout
    ("0.33.0", {"tp": 2}, {"layout": "BLHNC", "tp": 4}, False),  # block-contiguous
    ("0.28.0", {"tp": 2}, {"layout": "HND", "tp": 4}, False),
    ("0.28.0", {"layout": "NHD", "tp": 2}, {"layout": "NHD", "tp": 4}, True),  # "... requires contiguous heads"
    ("0.19.1", {"layout": "NHD", "tp": 2}, {"layout": "NHD", "tp": 4}, False),  # that check starts in 0.20.0
])
def test_rule_table(version: str, p: dict[str, Any], d: dict[str, Any], fires: bool) -> None:
    assert _fires(version, p, d) == fires


def test_mla_compares_no_layouts() -> None:
    assert not _fires("0.33.0", {"layout": "NHD"}, {"layout": "HND"}, model="deepseek-ai/DeepSeek-V3")


def test_host_buffer_is_not_checked() -> None:
    config = {**NIXL, "kv_buffer_device": "cpu"}
    assert not _fires("0.33.0", {"layout": "NHD"}, {"layout": "HND"}, config=config)

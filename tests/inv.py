"""Tiny inventory builders for the rule tables."""
from __future__ import annotations

import json
from typing import Any


def pair(connector: str | None = "NixlConnector", p: dict[str, Any] | None = None, d: dict[str, Any] | None = None,
         extra: dict[str, Any] | None = None, model: str | None = "meta-llama/Llama-3.3-70B-Instruct",
         **common: Any) -> str:
    """hosts.yml with one prefill host p1 and one decode host d1 in deployment 'dep'."""
    def host(role: str, own: dict[str, Any] | None) -> dict[str, Any]:
        h: dict[str, Any] = {"vllm_pd_role": role}
        if connector:
            kv: dict[str, Any] = {"kv_connector": connector,
                                  "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
            if extra is not None:
                kv["kv_connector_extra_config"] = dict(extra)
            h["vllm_kv_transfer_config"] = kv
        for key, value in (own or {}).items():
            if key.startswith("kv."):
                h.setdefault("vllm_kv_transfer_config", {})[key[3:]] = value
            elif key.startswith("extra."):
                h["vllm_kv_transfer_config"].setdefault("kv_connector_extra_config", {})[key[6:]] = value
            else:
                h["vllm_" + key] = value
        return h

    top: dict[str, Any] = {"vllm_pd_deployment": "dep", **{"vllm_" + k: v for k, v in common.items()}}
    if model:
        top["vllm_model"] = model
    doc = {"all": {"vars": top, "hosts": {"p1": host("prefill", p), "d1": host("decode", d)}}}
    return json.dumps(doc)  # JSON is YAML


MORIIO_READ = {"http_port": 8000, "read_mode": "true"}

"""Rule math for templates: whether a TP pair is valid (and, from the vllm layer, which ranks a rank reads)."""
from __future__ import annotations

from typing import Any

from ..hostvars import HostVars
from ..rules import CHECKS
from ..topology.build import build
from ..vllm.connectors.ranks import remote_ranks  # the filters' entry point

__all__ = ["remote_ranks", "tp_pair_findings"]

_CONNECTOR = {"moriio": "MoRIIOConnector", "nixl": "NixlConnector", "mooncake": "MooncakeConnector",
              "p2p-nccl": "P2pNcclConnector"}


def tp_pair_findings(prefill_tp: int, decode_tp: int, connector: str = "moriio", num_kv_heads: int | None = None,
                     is_mla: bool = False, read_mode: bool = True, vllm_version: str | None = None) -> list[str]:
    """Rule ids the registered rules report for this prefill/decode TP pair in a release (empty: valid)."""
    kv: dict[str, Any] = {"kv_connector": _CONNECTOR.get(connector, connector), "kv_role": "kv_both"}
    if connector == "p2p-nccl":
        kv["kv_connector_module_path"] = "p2p"
    if connector == "moriio":
        kv["kv_role"] = None
        kv["kv_connector_extra_config"] = {"http_port": 8000, "read_mode": str(read_mode).lower()}
    facts: dict[str, Any] = {"vllm_model_is_mla": bool(is_mla)}
    if vllm_version is not None:
        facts["vllm_version"] = str(vllm_version)
    if num_kv_heads:
        facts["vllm_model_num_kv_heads"] = num_kv_heads
    hosts = []
    for name, role, tp in (("p", "prefill", prefill_tp), ("d", "decode", decode_tp)):
        own = dict(kv, kv_role="kv_producer" if role == "prefill" else "kv_consumer")
        hosts.append(HostVars(name, {"vllm_pd_deployment": "pair", "vllm_pd_role": role,
                                     "vllm_tensor_parallel_size": tp, "vllm_kv_transfer_config": own, **facts}))
    topology, _unused = build(hosts)
    wanted = ("tp-ratio[", "kv-heads[")
    return sorted({f.rule for r in CHECKS if r.id.startswith(wanted) for f in r.check(topology)})

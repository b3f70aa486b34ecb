"""Hints that work: every TP size a hint offers passes every TP-dependent rule of that release for the pair.

(The other engine's own problems, such as its TP not dividing the heads, are its own findings' to fix, and so
are problems no TP size fixes, such as MoRIIO 0.25's write-mode rank collapse.)
"""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.topology.build import build
from pdlint.hostvars import HostVars
from pdlint.rules import CHECKS
from pdlint.vllm.releases import KNOWN

# Rules a TP change can cause or fix ("tp-ratio[nixl]" etc.), checked after applying a hinted TP.
_TP_RULES = ("tp-ratio[", "kv-heads[", "tp[heads]", "tp[kv-heads]")
_CONNECTORS = {
    "nixl": {"kv_connector": "NixlConnector"},
    "moriio-read": {"kv_connector": "MoRIIOConnector", "kv_connector_extra_config": {"http_port": 8000, "read_mode": "true"}},
    "moriio-write": {"kv_connector": "MoRIIOConnector", "kv_connector_extra_config": {"http_port": 8000}},
    "mooncake": {"kv_connector": "MooncakeConnector"},
}


def _findings(version: str, connector: str, tp: dict[str, int], heads: int, kv_heads: int, mla: bool) -> list:
    hosts = []
    for name, role, kv_role in (("p", "prefill", "kv_producer"), ("d", "decode", "kv_consumer")):
        kv = {**_CONNECTORS[connector], "kv_role": kv_role}
        hosts.append(HostVars(name, {
            "vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_version": version, "vllm_host_gpu_count": 16,
            "vllm_tensor_parallel_size": tp[name], "vllm_kv_transfer_config": kv,
            "vllm_model_num_attention_heads": heads, "vllm_model_num_kv_heads": kv_heads, "vllm_model_is_mla": mla}))
    topo, _ = build(hosts)
    return [f for r in CHECKS if r.id.startswith(_TP_RULES) for f in r.check(topo)]


def _offered(finding) -> tuple[str, list[int]] | None:
    """(host whose TP the hint changes, the TP sizes offered), for hints that name TP sizes."""
    found = re.match(r"use (decode |prefill )?TP ([0-9, or]+)$", finding.hint or "")
    if not found:
        return None
    side = {"decode ": "d", "prefill ": "p"}.get(found.group(1) or "")
    host = side or finding.hosts[0]
    return host, [int(n) for n in re.findall(r"[0-9]+", found.group(2))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from([r.text for r in KNOWN]),
       connector=st.sampled_from(sorted(_CONNECTORS)),
       p=st.sampled_from([1, 2, 3, 4, 6, 8, 16]), d=st.sampled_from([1, 2, 3, 4, 6, 8, 16]),
       shape=st.sampled_from([(64, 8, False), (32, 4, False), (16, 16, False), (128, 128, True), (64, 2, False)]))
def test_every_hinted_tp_passes_the_tp_rules(version: str, connector: str, p: int, d: int,
                                              shape: tuple[int, int, bool]) -> None:
    heads, kv_heads, mla = shape
    tp = {"p": p, "d": d}
    before = _findings(version, connector, tp, heads, kv_heads, mla)
    unrelated = {(f.rule, f.hint) for f in before if _offered(f) is None}  # no TP size fixes these
    for finding in before:
        offered = _offered(finding)
        if offered is None:
            continue
        host, sizes = offered
        assert sizes, finding
        for size in sizes:
            after = _findings(version, connector, {**tp, host: size}, heads, kv_heads, mla)
            # Only the other engine's own problems (its heads) may remain: nothing of the pair, nothing of host's.
            left = [f for f in after if not (f.rule.startswith("tp[") and host not in f.hosts)
                    and (f.rule, f.hint) not in unrelated]
            assert not left, (finding, size, left)

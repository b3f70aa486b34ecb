"""Hints that work: every TP size a hint offers passes every TP-dependent rule of that release for the pair.

(The other engine's own problems, such as its TP not dividing the heads, are its own findings' to fix, and so
are problems no TP size fixes, such as MoRIIO 0.25's write-mode rank collapse.)
"""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.engine import core as engine
from pdlint.finding import Origin
from pdlint.hostvars import HostVars
from pdlint.rules import CHECKS
from pdlint.topology.build import build
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


# A hint's sizes pass every check once applied, including the node's other engines
# (gpu[oversubscribed]) and the other side's own TP when that is invalid too (both sides changed together).
_ALL_TP = ("tp-ratio[", "kv-heads[", "tp[heads]", "tp[kv-heads]", "gpu[", "parallel[")
_MODELS = {"llama": (32, 8, False), "qwen": (28, 4, False), "mla": (128, 128, True), "gqa2": (64, 2, False)}


def _engines(version: str, connector: str, tp: dict[str, int], shape: tuple[int, int, bool], gpus: int,
             colocated: bool, shared: bool) -> list[HostVars]:
    """p and d, on one node (gpu1, vllm_instances) or two; shared: one inventory line sets both TPs."""
    heads, kv_heads, mla = shape
    facts = {"vllm_model_num_attention_heads": heads, "vllm_model_num_kv_heads": kv_heads,
             "vllm_model_is_mla": mla, "vllm_version": version, "vllm_host_gpu_count": gpus}
    line = Origin("group_vars/all.yml", 2, 30)
    kv = {name: {**_CONNECTORS[connector], "kv_role": role}
          for name, role in (("p", "kv_producer"), ("d", "kv_consumer"))}
    if colocated:
        items = [{"pd_role": "prefill", "port": 8100, "tensor_parallel_size": tp["p"], "kv_transfer_config": kv["p"]},
                 {"pd_role": "decode", "port": 8200, "tensor_parallel_size": tp["d"], "kv_transfer_config": kv["d"],
                  "env": {"VLLM_NIXL_SIDE_CHANNEL_PORT": 5700}}]
        origins = {("vllm_instances", i, "tensor_parallel_size"): Origin("hosts.yml", 5 + i, 40) for i in (0, 1)}
        return [HostVars("gpu1", {"vllm_pd_deployment": "x", "vllm_instances": items, **facts}, origins)]
    hosts = []
    for name, role in (("p", "prefill"), ("d", "decode")):
        where = line if shared else Origin(f"host_vars/{name}.yml", 1, 30)
        hosts.append(HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, **facts,
                                     "vllm_tensor_parallel_size": tp[name], "vllm_kv_transfer_config": kv[name]},
                              {("vllm_tensor_parallel_size",): where}))
    return hosts


def _applied(hint: str, host_of: dict[str, str], own: str) -> list[dict[str, int]]:
    """Each TP assignment a hint offers: {"p": 4, "d": 8}; [] for hints that name no TP sizes."""
    text = hint.split(" (")[0].split(" on this line")[0]
    combos = re.findall(r"TP (\d+) with ((?:(?:prefill|decode) \S+ TP \d+(?: and )?)+)", text)
    if combos:
        partner = r"(?:prefill|decode) (\S+) TP (\d+)"
        return [{own: int(tp), **{host_of[label]: int(n) for label, n in re.findall(partner, rest)}}
                for tp, rest in combos]
    found = re.match(r"use (decode |prefill )?TP ([0-9, or]+)$", text)
    if not found:
        return []
    side = {"decode ": "d", "prefill ": "p"}.get(found.group(1) or "")
    names = ["p", "d"] if "on this line" in hint else [side or own]
    return [{name: int(n) for name in names} for n in re.findall(r"[0-9]+", found.group(2))]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(["0.11.0", "0.20.0", "0.32.0", "0.33.0"]),
       connector=st.sampled_from(["nixl", "mooncake"]),
       p=st.sampled_from([1, 2, 3, 4, 5, 6, 8]), d=st.sampled_from([1, 2, 3, 4, 5, 6, 8]),
       model=st.sampled_from(sorted(_MODELS)), gpus=st.sampled_from([4, 6, 8, 12, 16]),
       layout=st.sampled_from(["colocated", "shared", "apart"]))
def test_every_hint_passes_every_check_once_applied(version: str, connector: str, p: int, d: int, model: str,
                                                    gpus: int, layout: str) -> None:
    def findings(tp: dict[str, int]) -> list:
        hosts = _engines(version, connector, tp, _MODELS[model], gpus, layout == "colocated", layout == "shared")
        return [f for f in engine.lint(hosts).findings if f.rule.startswith(_ALL_TP)]

    tp = {"p": p, "d": p if layout == "shared" else d}  # one line gives both the same TP
    before = findings(tp)
    host_of = {"gpu1[0]": "p", "gpu1[1]": "d", "p": "p", "d": "d"}
    unrelated = {f.rule for f in before if not _applied(f.hint or "", host_of, "p")}
    for finding in before:
        # Whose TP the finding is about: its host, or on the shared node its vllm_instances item's line.
        own = {5: "p", 6: "d"}.get(finding.origin.line or 0, "p") if layout == "colocated" else finding.hosts[0]
        for change in _applied(finding.hint or "", host_of, own):
            after = findings({**tp, **change})
            # Problems no TP size causes or fixes may stay; the other engine's own problems too when the hint
            # left it alone (its own finding has its own hint).
            left = [f for f in after if f.rule not in unrelated
                    and not (f.rule.startswith("tp[") and not _owners(f, host_of) & set(change))]
            assert not left, (layout, finding.rule, finding.hint, change, [(f.rule, f.message) for f in left])


def _owners(finding, host_of: dict[str, str]) -> set[str]:
    """Whose TP a per-engine finding is about (on the shared node: its vllm_instances item's line)."""
    if finding.hosts == ("gpu1",):
        return {{5: "p", 6: "d"}.get(finding.origin.line or 0, "?")}
    return {host_of.get(h, h) for h in finding.hosts}


def _hints(hosts: list[HostVars], rule: str) -> list[tuple[tuple[str, ...], str | None]]:
    return [(f.hosts, f.hint) for f in engine.lint(hosts).findings if f.rule == rule]


def test_hint_leaves_room_for_the_nodes_other_engines() -> None:
    # Item 18: prefill TP 2 + decode TP 5 on one 8-GPU node: decode TP 8 would need 10 GPUs there.
    hosts = _engines("0.33.0", "nixl", {"p": 2, "d": 5}, _MODELS["llama"], 8, colocated=True, shared=False)
    hints = [h for rule in ("tp-ratio[nixl]", "tp[heads]") for _, h in _hints(hosts, rule)]
    assert hints and all(h and "8" not in h for h in hints), hints
    assert "use decode TP 2 or 4" in hints


def test_both_sides_invalid_get_sizes_that_fix_both() -> None:
    # Item 19: both at TP 3 on Llama-3.1-8B (32 heads, 8 KV heads): TP 1 alone would pair with decode's TP 3.
    hosts = _engines("0.33.0", "nixl", {"p": 3, "d": 3}, _MODELS["llama"], 8, colocated=False, shared=False)
    ((_, hint), *_rest) = [h for h in _hints(hosts, "tp[heads]") if h[0] == ("p",)]
    assert hint == "use TP 2 with decode d TP 4 or TP 4 with decode d TP 4 (decode d's TP 3 is invalid too)"


def test_a_shared_line_gets_one_finding_and_one_size_for_all() -> None:
    hosts = _engines("0.33.0", "nixl", {"p": 3, "d": 3}, _MODELS["llama"], 8, colocated=False, shared=True)
    assert _hints(hosts, "tp[heads]") == [
        (("d", "p"), "use TP 2 or 4 on this line, which sets the TP of d, p; it suits each of them")]

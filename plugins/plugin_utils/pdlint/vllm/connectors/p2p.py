"""P2pNcclConnector (0.9.2 - 0.23.0): what each release does with a P/D pair, and the keys it reads."""
from __future__ import annotations

from collections.abc import Iterator

from ..history import history
from ..releases import R, Release, Timeline
from .pair import Problem, Side

_C = "kv_connector/v1/p2p/p2p_nccl_connector.py P2pNcclConnector"
_E = "kv_connector/v1/p2p/p2p_nccl_engine.py P2pNcclEngine.__init__"
FIRST, LAST = R("0.9.2"), R("0.23.0")  # factory.py registers it in these releases only

PAIRING: Timeline[str] = history("tp-ratio[p2p-nccl]", Timeline(
    "P2pNccl TP and PP",
    ("0.9.2", "symmetric", f"{_C}.check_tensors_except_dim, start_load_kv, save_kv_layer",
     ("equal TP and equal PP only: world rank r sends to world rank r (kv_port + rank); unequal per-rank shapes "
      "raise NotImplementedError "
      "(\"Currently, only symmetric TP is supported. Asymmetric TP, PP,and others ...\") at the first transfer, "
      "equal shapes with unequal TP hang (pdlint: error)")),
    ("0.24.0", "gone", "kv_connector/factory.py", "P2pNcclConnector is not registered (connector[unknown])"),
))
HTTP_PORT: Timeline[str] = history("connector[config]", Timeline(
    "P2pNccl kv_connector_extra_config.http_port",
    ("0.9.2", "always", f"{_E} (kv_connector_extra_config['http_port'])", "required: KeyError at worker start"),
    ("0.11.1", "with-proxy", f"{_E} (get_from_extra_config('http_port', None))",
     ("required when proxy_ip and proxy_port are both set: ValueError \"kv_connector_extra_config.http_port is "
      "required\"")),
    ("0.24.0", "gone", "kv_connector/factory.py", "P2pNcclConnector is not registered (connector[unknown])"),
))


def registered(release: Release) -> bool:
    return FIRST <= release <= LAST


def http_port_missing(release: Release, extra: dict[str, object]) -> str | None:
    """Why the release's P2pNcclEngine fails without http_port (None: it does not need it)."""
    if "http_port" in extra:
        return None
    if HTTP_PORT.at(release) == "always":
        return f"P2pNccl in vLLM {release} reads kv_connector_extra_config['http_port'] unconditionally (KeyError " \
               "at worker start)"
    if extra.get("proxy_ip", "") != "" and extra.get("proxy_port", "") != "":
        return f"P2pNccl in vLLM {release} needs http_port when proxy_ip and proxy_port are set (ValueError " \
               "\"kv_connector_extra_config.http_port is required\")"
    return None


def pair(p: Side, d: Side) -> Iterator[Problem]:
    """World rank r talks only to world rank r: TP and PP must be equal (every release that has it)."""
    release = d.release
    source = PAIRING.step(release).source
    if p.tp != d.tp:
        yield Problem("tp-ratio[p2p-nccl]", "decode", ("tensor_parallel_size",),
                      f"P2pNccl needs equal TP, got prefill TP {p.tp} and decode TP {d.tp}: rank r only talks to "
                      f"rank r (vLLM {release} has no startup check: the first transfer raises NotImplementedError "
                      "when the shards differ, else it hangs or moves the wrong KV)", source)
    if p.pp != d.pp:
        yield Problem("tp-ratio[p2p-nccl]", "decode", ("pipeline_parallel_size",),
                      f"P2pNccl needs equal PP, got prefill PP {p.pp} and decode PP {d.pp}: world rank r sends to "
                      f"world rank r, which holds other layers on the other side (vLLM {release}: \"Asymmetric TP, "
                      "PP,and others will be supported in future PRs\", or a hang)", source,
                      hint=f"use pipeline_parallel_size {p.pp} on decode", tp_fix=False)

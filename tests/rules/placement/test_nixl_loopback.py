"""nixl[side-channel-host]: every spelling of a loopback (or unspecified) address is unreachable from a peer host."""
from __future__ import annotations

from typing import Any

import pytest

from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.topology.build import build
from pdlint.vllm.connectors.registry import is_loopback

NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
PUSH = {"kv_connector": "NixlPushConnector", "kv_role": "kv_both"}


def _found(p_env: dict[str, Any], d_env: dict[str, Any], config: dict[str, Any] = NIXL) -> list[Any]:
    def hv(name: str, role: str, env: dict[str, Any]) -> HostVars:
        return HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_kv_transfer_config": config,
                               "vllm_env": env})

    topo, _ = build([hv("p", "prefill", p_env), hv("d", "decode", d_env)])
    return list(REGISTRY["nixl[side-channel-host]"].check(topo))


LOOPBACK = ["localhost", "LOCALHOST", "LocalHost", "localhost.", " localhost ", "ip.localhost", "127.0.0.1",
            "127.0.1.1", "127.1.2.3", "127.255.255.254", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.1.1",
            "0.0.0.0", "::", ""]
ROUTABLE = ["10.0.0.1", "192.168.1.5", "fe80::1", "2001:db8::1", "128.0.0.1", "gpu-node-1", "localhost-1",
            "mylocalhost", "126.255.255.255"]


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_spellings_are_reported(host: str) -> None:
    assert is_loopback(host)
    found = _found({"VLLM_NIXL_SIDE_CHANNEL_HOST": host}, {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.2"})
    assert [f.hosts[0] for f in found] == ["p"], host


@pytest.mark.parametrize("host", ROUTABLE)
def test_routable_hosts_pass(host: str) -> None:
    assert not is_loopback(host)
    assert not _found({"VLLM_NIXL_SIDE_CHANNEL_HOST": host}, {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.2"})


def test_push_reports_the_decode_side_too() -> None:
    # Push: prefill dials decode's side channel as well (both advertise their host).
    found = _found({"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.1"}, {"VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.1.1"}, PUSH)
    assert [f.hosts[0] for f in found] == ["d"]

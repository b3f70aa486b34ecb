"""What pdlint knows of each KV connector in vLLM 0.32.0 (docs/rules-provenance.md cites the source)."""
from __future__ import annotations

import difflib

from .model import Instance

# vllm/distributed/kv_transfer/kv_connector/factory.py, KVConnectorFactory.register_connector calls.
REGISTRY = (
    "ExampleConnector", "ExampleHiddenStatesConnector", "LMCacheConnectorV1", "LMCacheMPConnector",
    "NixlConnector", "NixlPullConnector", "NixlPushConnector", "MultiConnector", "HiSparseConnector",
    "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector", "MooncakeConnector",
    "MooncakeStoreConnector", "FlexKVConnectorV1", "SimpleCPUOffloadConnector", "HF3FSKVConnector",
)
# nixl/connector.py: `NixlConnector = NixlPullConnector` (the same class object).
_CLASS = {"NixlConnector": "NixlPullConnector"}
_KIND = {
    "NixlPullConnector": "nixl", "NixlPushConnector": "nixl", "MoRIIOConnector": "moriio",
    "MooncakeConnector": "mooncake", "P2pNcclConnector": "p2p-nccl",
    "LMCacheConnectorV1": "lmcache", "LMCacheMPConnector": "lmcache",
}
# Connectors whose behaviour depends on kv_role (MoRIIO, Mooncake, P2pNccl, in-tree LMCache).
ROLE_AWARE = frozenset(("moriio", "mooncake", "p2p-nccl", "lmcache"))
# KVConnectorFactory.supports_hma_config: connectors that are not SupportsHMA turn HMA off by default.
NO_HMA = frozenset(("LMCacheConnectorV1", "LMCacheMPConnector", "ExampleConnector", "FlexKVConnectorV1",
                    "HF3FSKVConnector"))
NIXL_SIDE_CHANNEL_PORT = 5600  # envs.VLLM_NIXL_SIDE_CHANNEL_PORT default
MOONCAKE_BOOTSTRAP_PORT = 8998  # envs.VLLM_MOONCAKE_BOOTSTRAP_PORT default
P2P_KV_PORT = 14579  # KVTransferConfig.kv_port default
LOOPBACK = ("", "localhost", "127.0.0.1", "::1", "0.0.0.0")


def canonical(name: str | None) -> str | None:
    """The class a kv_connector name resolves to (aliases count as the same)."""
    return _CLASS.get(name, name) if name else name


def kind(inst: Instance) -> str | None:
    """Connector family of an instance: nixl, moriio, mooncake, p2p-nccl, lmcache, or the class name."""
    cls = canonical(inst.connector)
    return _KIND.get(cls, cls) if cls else None


def is_push(inst: Instance) -> bool:
    return canonical(inst.connector) == "NixlPushConnector"


def registered(name: str) -> bool:
    return name in REGISTRY


def suggest(name: str) -> list[str]:
    return difflib.get_close_matches(name, REGISTRY, n=2, cutoff=0.6)


def hma_enabled(inst: Instance) -> bool:
    """config/vllm.py VllmConfig.__post_init__: None resolves by connector support, then to enabled."""
    if inst.disable_hma is not None:
        return not inst.disable_hma
    return canonical(inst.connector) not in NO_HMA


def enforces_compat_hash(inst: Instance) -> bool:
    """base_worker.py: get_from_extra_config("enforce_handshake_compat", True), used for truthiness."""
    return bool(inst.extra.get("enforce_handshake_compat", True))


def env_int(inst: Instance, name: str, default: int) -> int | None:
    value = inst.env.get(name)
    if value is None:
        return default
    return int(value) if value.strip().isdigit() else None


def tp_ratio_ok(a: int, b: int) -> bool:
    """The larger TP must be a multiple of the smaller (NIXL, Mooncake, MoRIIO rank maps)."""
    return max(a, b) % min(a, b) == 0


def nearest(candidates: list[int], near: int, limit: int = 2) -> list[int]:
    """The limit candidates closest to near (ties: the larger), ascending: for "use TP 4 or 8" hints."""
    return sorted(sorted(candidates, key=lambda n: (abs(n - near), -n))[:limit])


def nearest_valid(other: int, near: int, limit: int = 2) -> list[int]:
    """TP sizes close to near whose ratio with other is whole (for hints)."""
    return nearest([n for n in range(1, 2 * max(near, other) + 1) if tp_ratio_ok(n, other)], near, limit)

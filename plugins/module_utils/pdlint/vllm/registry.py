"""What pdlint knows of each KV connector, by release: the registry, aliases, families (docs/rules-provenance.md)."""
from __future__ import annotations

import difflib

from ..model import Instance
from .releases import NEWEST, Release, Timeline, resolve, spans_of

_F = "kv_connector/factory.py, KVConnectorFactory.register_connector calls"
_V0 = ("PyNcclConnector", "MooncakeConnector", "LMCacheConnector", "MooncakeStoreConnector")
# Names each release registers (vllm/distributed/kv_transfer/kv_connector/factory.py), read from every wheel.
NAMES: Timeline[frozenset[str]] = Timeline(
    "registered kv_connector names",
    ("0.8.5", frozenset((*_V0, "SharedStorageConnector", "LMCacheConnectorV1")), _F),
    ("0.9.0", frozenset((*_V0, "SharedStorageConnector", "LMCacheConnectorV1", "NixlConnector", "MultiConnector")), _F),
    ("0.9.2", frozenset((*_V0, "SharedStorageConnector", "LMCacheConnectorV1", "NixlConnector", "MultiConnector",
                         "P2pNcclConnector")), _F),
    ("0.10.1", frozenset(("SharedStorageConnector", "P2pNcclConnector", "LMCacheConnectorV1", "NixlConnector",
                          "MultiConnector")), _F + " (the V0 connectors are gone)"),
    ("0.11.0", frozenset(("SharedStorageConnector", "P2pNcclConnector", "LMCacheConnectorV1", "NixlConnector",
                          "MultiConnector", "OffloadingConnector")), _F),
    ("0.11.1", frozenset(("SharedStorageConnector", "P2pNcclConnector", "LMCacheConnectorV1", "LMCacheMPConnector",
                          "NixlConnector", "MultiConnector", "OffloadingConnector", "DecodeBenchConnector")), _F),
    ("0.13.0", frozenset(("ExampleConnector", "P2pNcclConnector", "LMCacheConnectorV1", "LMCacheMPConnector",
                          "NixlConnector", "MultiConnector", "OffloadingConnector", "DecodeBenchConnector",
                          "MooncakeConnector")), _F + " (SharedStorageConnector renamed ExampleConnector; "
                                                     "MooncakeConnector is the V1 connector)"),
    ("0.14.0", frozenset(("ExampleConnector", "P2pNcclConnector", "LMCacheConnectorV1", "LMCacheMPConnector",
                          "NixlConnector", "MultiConnector", "MoRIIOConnector", "OffloadingConnector",
                          "DecodeBenchConnector", "MooncakeConnector")), _F),
    ("0.17.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "P2pNcclConnector",
                          "LMCacheConnectorV1", "LMCacheMPConnector", "NixlConnector", "MultiConnector",
                          "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector", "MooncakeConnector")), _F),
    ("0.18.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "P2pNcclConnector",
                          "LMCacheConnectorV1", "LMCacheMPConnector", "NixlConnector", "MultiConnector",
                          "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector", "MooncakeConnector",
                          "FlexKVConnectorV1")), _F),
    ("0.19.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "P2pNcclConnector",
                          "LMCacheConnectorV1", "LMCacheMPConnector", "NixlConnector", "MultiConnector",
                          "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector", "MooncakeConnector",
                          "FlexKVConnectorV1", "SimpleCPUOffloadConnector")), _F),
    ("0.20.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "P2pNcclConnector",
                          "LMCacheConnectorV1", "LMCacheMPConnector", "NixlConnector", "MultiConnector",
                          "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector", "MooncakeConnector",
                          "FlexKVConnectorV1", "SimpleCPUOffloadConnector", "HF3FSKVConnector")), _F),
    ("0.21.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "P2pNcclConnector",
                          "LMCacheConnectorV1", "LMCacheMPConnector", "NixlConnector", "MultiConnector",
                          "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector", "MooncakeConnector",
                          "MooncakeStoreConnector", "FlexKVConnectorV1", "SimpleCPUOffloadConnector",
                          "HF3FSKVConnector")), _F),
    ("0.24.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "LMCacheConnectorV1",
                          "LMCacheMPConnector", "NixlConnector", "NixlPullConnector", "NixlPushConnector",
                          "MultiConnector", "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector",
                          "MooncakeConnector", "MooncakeStoreConnector", "FlexKVConnectorV1",
                          "SimpleCPUOffloadConnector", "HF3FSKVConnector")), _F + " (P2pNcclConnector removed)"),
    ("0.30.0", frozenset(("ExampleConnector", "ExampleHiddenStatesConnector", "LMCacheConnectorV1",
                          "LMCacheMPConnector", "NixlConnector", "NixlPullConnector", "NixlPushConnector",
                          "MultiConnector", "HiSparseConnector", "MoRIIOConnector", "OffloadingConnector",
                          "DecodeBenchConnector", "MooncakeConnector", "MooncakeStoreConnector", "FlexKVConnectorV1",
                          "SimpleCPUOffloadConnector", "HF3FSKVConnector")), _F),
)
REGISTRY = tuple(sorted(NAMES.at(NEWEST)))
HISTORY: dict[str, list[Timeline[object]]] = {}  # rule id -> registry timelines deciding it
# 0.24.0+ nixl/connector.py: `NixlConnector = NixlPullConnector` (the same class object).
_CLASS = {"NixlConnector": "NixlPullConnector"}
_KIND = {
    "NixlConnector": "nixl", "NixlPullConnector": "nixl", "NixlPushConnector": "nixl", "MoRIIOConnector": "moriio",
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


def kind_of(name: str | None) -> str | None:
    """Connector family of a kv_connector name: nixl, moriio, mooncake, p2p-nccl, lmcache, or the class name."""
    cls = canonical(name)
    return _KIND.get(cls, cls) if cls else None


def kind(inst: Instance) -> str | None:
    """Connector family of an instance (see kind_of)."""
    return kind_of(inst.connector)


def is_push(inst: Instance) -> bool:
    return canonical(inst.connector) == "NixlPushConnector"


def timelines(rule_id: str) -> list[Timeline[object]]:
    """Registry timelines that decide rule_id (for the per-release rule docs)."""
    return list(HISTORY.get(rule_id, ()))


def release_of(inst: Instance) -> Release | None:
    """The release whose behaviour applies to the instance (None: its vllm_version is unparsable)."""
    return resolve(inst.version).release


def registered(name: str, release: Release = NEWEST) -> bool:
    return name in NAMES.at(release)


def history(name: str) -> list[tuple[str, bool]]:
    """(span, registered) for each run of known releases in which name's registration is the same."""
    return spans_of(lambda release: name in NAMES.at(release))


def suggest(name: str, release: Release = NEWEST) -> list[str]:
    return difflib.get_close_matches(name, sorted(NAMES.at(release)), n=2, cutoff=0.6)


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

"""What pdlint knows of each KV connector, by release: the registry, aliases, families (docs/rules-provenance.md)."""
from __future__ import annotations

import functools
import ipaddress

from ...topology.types import Instance, per_body
from .. import env_values
from ..releases import DEFAULT, NEWEST, R, Release, Timeline, resolve, spans_of

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
_V0_NAMES = frozenset(_V0)  # V0 connectors (0.8.5 - 0.10.0): V1 engines assert issubclass(..., KVConnectorBase_V1)
# Names that were renamed: old name -> (new name, release of the rename).
RENAMED = {"SharedStorageConnector": ("ExampleConnector", "0.13.0")}

# 0.24.0+ nixl/connector.py: `NixlConnector = NixlPullConnector` (the same class object); before, NixlConnector
# is its own class and NixlPullConnector does not exist.
ALIASES: Timeline[dict[str, str]] = Timeline(
    "kv_connector aliases",
    ("0.8.5", {}, _F, "no aliases: every registered name is its own class"),
    ("0.24.0", {"NixlConnector": "NixlPullConnector"}, ("kv_connector/v1/nixl/connector.py "
     "(NixlConnector = NixlPullConnector)"), "NixlConnector is the same class as NixlPullConnector"),
)
_KIND = {
    "NixlConnector": "nixl", "NixlPullConnector": "nixl", "NixlPushConnector": "nixl", "MoRIIOConnector": "moriio",
    "MooncakeConnector": "mooncake", "P2pNcclConnector": "p2p-nccl",
    "LMCacheConnectorV1": "lmcache", "LMCacheMPConnector": "lmcache",
}
# Connectors whose behaviour depends on kv_role (MoRIIO, Mooncake, P2pNccl, in-tree LMCache).
ROLE_AWARE = frozenset(("moriio", "mooncake", "p2p-nccl", "lmcache"))

_HMA = "kv_connector/v1/** classes deriving from SupportsHMA (kv_connector/v1/base.py)"
_NIXL = ("NixlConnector",)
_MC = ("MooncakeConnector",)
_MULTI = ("MultiConnector", "OffloadingConnector", "DecodeBenchConnector")
_STORE = ("ExampleHiddenStatesConnector", "MooncakeStoreConnector")
_PULL_PUSH = ("NixlPullConnector", "NixlPushConnector")
# Registered connector classes that implement SupportsHMA, read from every wheel (tests/vllm/connectors/test_vllm_registry.py).
SUPPORTS_HMA: Timeline[frozenset[str]] = Timeline(
    "connectors implementing SupportsHMA",
    ("0.8.5", frozenset(), _HMA, "no connector supports the hybrid KV cache manager"),
    ("0.18.0", frozenset(_NIXL), _HMA),
    ("0.19.0", frozenset((*_NIXL, "SimpleCPUOffloadConnector")), _HMA),
    ("0.20.0", frozenset((*_NIXL, "SimpleCPUOffloadConnector", *_MC)), _HMA),
    ("0.21.0", frozenset((*_NIXL, "SimpleCPUOffloadConnector", *_MC, *_MULTI)), _HMA),
    ("0.22.0", frozenset((*_NIXL, "SimpleCPUOffloadConnector", *_MC, *_MULTI, *_STORE)), _HMA),
    ("0.24.0", frozenset((*_NIXL, *_PULL_PUSH, "SimpleCPUOffloadConnector", *_MC, *_MULTI, *_STORE)), _HMA),
    ("0.30.0", frozenset((*_NIXL, *_PULL_PUSH, "SimpleCPUOffloadConnector", *_MC, *_MULTI, *_STORE,
                          "HiSparseConnector", "MoRIIOConnector")), _HMA),
)

# How VllmConfig.__post_init__ resolves disable_hybrid_kv_cache_manager when kv_transfer_config is set.
# "absent": no hybrid KV cache manager; "forced-off": HMA is turned off whatever the setting; "off-unless-set":
# unset means off, an explicit false turns it on; "by-connector": unset follows the connector's SupportsHMA.
HMA_DEFAULT: Timeline[str] = Timeline(
    "unset disable_hybrid_kv_cache_manager with a kv connector",
    ("0.8.5", "absent", "config.py (no disable_hybrid_kv_cache_manager field)",
     "no hybrid KV cache manager option"),
    ("0.9.1", "forced-off", ("config VllmConfig.__post_init__ (`if self.kv_transfer_config is not None: "
     "disable_hybrid_kv_cache_manager = True`)"), "any kv connector turns HMA off, whatever the setting"),
    ("0.13.0", "off-unless-set", "config/vllm.py VllmConfig.__post_init__ (disable_hybrid_kv_cache_manager is None)",
     "unset: off with any kv connector; an explicit false turns it on"),
    ("0.22.0", "by-connector", ("config/vllm.py VllmConfig.__post_init__; factory.py "
     "KVConnectorFactory.supports_hma_config (0.23.0+)"),
     "unset: on when the connector implements SupportsHMA, else off"),
)

# KVConnectorFactory's answer to a name it does not register (no kv_connector_module_path).
UNKNOWN_NAME: Timeline[str] = Timeline(
    "unregistered kv_connector",
    ("0.8.5", "KeyError: '{name}'", "factory.py KVConnectorFactory.create_connector_v1 (cls._registry[connector_name])",
     "KeyError at engine start; kv_connector_module_path does not exist"),
    ("0.9.0", "ValueError \"Unsupported connector type: {name}\"",
     ("factory.py KVConnectorFactory.create_connector_v1 / "
      "get_connector_class"), ("ValueError \"Unsupported connector type\" unless kv_connector_module_path is set; a "
                               "registered name wins over the module path")),
    ("0.20.0", "ValueError \"Unsupported connector type: {name}\"", ("factory.py KVConnectorFactory."
     "_get_connector_class_with_compat / get_connector_class"), ("ValueError \"Unsupported connector type\" unless "
     "kv_connector_module_path is set, which now wins over the registry; an empty module path is a ValueError")),
)
NIXL_SIDE_CHANNEL_PORT = 5600  # envs.VLLM_NIXL_SIDE_CHANNEL_PORT default
MOONCAKE_BOOTSTRAP_PORT = 8998  # envs.VLLM_MOONCAKE_BOOTSTRAP_PORT default
P2P_KV_PORT = 14579  # KVTransferConfig.kv_port default


@functools.lru_cache(maxsize=1024)  # a fleet repeats a few host strings over thousands of instances
def is_loopback(host: str) -> bool:
    """host cannot be reached from another machine: loopback (127.0.0.0/8, ::1, any case of localhost) or unset.

    The unspecified addresses (0.0.0.0, ::) count too: a peer that dials the advertised address reaches itself.
    """
    name = host.strip().rstrip(".").lower()
    if name in ("", "localhost") or name.endswith(".localhost"):  # RFC 6761: every *.localhost name is loopback
        return True
    try:
        address = ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    except ValueError:
        return False  # a host name: pdlint cannot resolve it
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
    return address.is_loopback or address.is_unspecified


def documented(timeline: Timeline[frozenset[str]]) -> Timeline[frozenset[str]]:
    """The same set-valued timeline with each step's doc saying what it adds and removes (for per-release docs)."""
    steps: list[tuple[str, frozenset[str], str, str]] = []
    before: frozenset[str] = frozenset()
    for s in timeline.steps:
        added, removed = sorted(s.value - before), sorted(before - s.value)
        doc = "; ".join(filter(None, ("+ " + ", ".join(added) if added else "",
                                      "- " + ", ".join(removed) if removed else ""))) or "none"
        steps.append((s.since.text, s.value, s.source, s.doc or doc if s is not timeline.steps[0] else doc))
        before = s.value
    return Timeline(timeline.what, *steps)


def canonical(name: str | None, release: Release = NEWEST) -> str | None:
    """The class a kv_connector name resolves to in release (aliases count as the same)."""
    if not name:
        return name
    key = (name, release)
    found = _CANONICAL.get(key)
    if found is None:
        if len(_CANONICAL) > 10_000:  # the names come from inventories: keep a long-running server's memo small
            _CANONICAL.clear()
        found = _CANONICAL[key] = ALIASES.at(release).get(name, name)
    return found


_CANONICAL: dict[tuple[str, Release], str] = {}


def same_class(a: str | None, b: str | None, ia: Instance, ib: Instance) -> bool:
    """Two kv_connector names give one class, each side resolving aliases in its own release (ALIASES)."""
    return canonical(a, release(ia)) == canonical(b, release(ib))


def kind_of(name: str | None) -> str | None:
    """Connector family of a kv_connector name: nixl, moriio, mooncake, p2p-nccl, lmcache, or the class name."""
    cls = canonical(name)  # the newest aliases: a family is the same in every release
    return _KIND.get(cls, cls) if cls else None


def registry_kind(inst: Instance) -> str | None:
    """Connector family of the instance's own kv_connector (a composite's children are not looked at)."""
    return kind_of(inst.connector)


def release_of(inst: Instance) -> Release | None:
    """The release whose behaviour applies to the instance (None: its vllm_version is unparsable)."""
    return resolve(inst.version).release


@per_body
def release(inst: Instance) -> Release:
    """The release whose rules apply to the instance: its own, or the default where vllm_version is unparsable."""
    return resolve(inst.version).release or DEFAULT


def registered(name: str, release: Release = NEWEST) -> bool:
    return name in NAMES.at(release)


_V0_UNTIL = R("0.10.1")  # factory.py of 0.10.1 registers no V0 connector


def is_v0(name: str, release: Release) -> bool:
    """name is registered in release as a V0 connector (0.8.5 - 0.10.0)."""
    return name in _V0_NAMES and release < _V0_UNTIL and registered(name, release)


def usable(name: str, release: Release = NEWEST, use_v1: bool = True) -> bool:
    """Registered, and a V1 connector unless VLLM_USE_V1=0: V1's factory asserts issubclass(KVConnectorBase_V1)."""
    return registered(name, release) and not (use_v1 and is_v0(name, release))


def module_path_honoured(release: Release) -> bool:
    """KVTransferConfig has kv_connector_module_path (0.9.0+; 0.8.5 silently ignores the key)."""
    return release >= R("0.9.0")


def empty_module_path(name: str, release: Release) -> str | None:
    """What kv_connector_module_path "" does in release (None: nothing; factory.py, UNKNOWN_NAME)."""
    if release >= UNKNOWN_NAME.steps[-1].since:
        return f"kv_connector_module_path cannot be an empty string (ValueError in vLLM {release})"
    if module_path_honoured(release) and not registered(name, release):
        return (f"kv_connector_module_path is an empty string and vLLM {release} does not register {name}: "
                "importlib.import_module('') raises ValueError \"Empty module name\"")
    return None


def _presence(name: str) -> list[tuple[str, str | None]]:
    return spans_of(lambda r: ("V0" if is_v0(name, r) else "V1") if registered(name, r) else None)


def ever_registered(name: str) -> bool:
    return any(name in s.value for s in NAMES.steps)


@functools.lru_cache(maxsize=1024)  # asked for every instance of an unregistered name: the same answer
def story(name: str, release: Release) -> str:
    """Why name is not usable in release, in words: when it was registered, renamed or removed."""
    if is_v0(name, release):
        return (f"{name} is a V0 connector: vLLM {release} runs the V1 engine, whose factory asserts the class is "
                "a KVConnectorBase_V1 (bare AssertionError unless VLLM_USE_V1=0)")
    renamed = RENAMED.get(name)
    if renamed and release >= R(renamed[1]):
        return f"{name} was renamed {renamed[0]} in {renamed[1]}"
    spans = [span + (" as a V0 connector" if kind == "V0" else "") for span, kind in _presence(name) if kind]
    if not spans:
        return f"kv_connector {name!r} is not registered in vLLM {release} (nor in any release pdlint knows)"
    return f"kv_connector {name!r} is not registered in vLLM {release} (registered {', '.join(spans)})"


def history(name: str) -> list[tuple[str, bool]]:
    """(span, registered) for each run of known releases in which name's registration is the same."""
    return spans_of(lambda release: name in NAMES.at(release))


def suggest(name: str, release: Release = NEWEST) -> list[str]:
    import difflib  # only to suggest a name: a run without a typo never imports it

    return difflib.get_close_matches(name, sorted(NAMES.at(release)), n=2, cutoff=0.6)


def supports_hma(name: str | None, release: Release = NEWEST) -> bool:
    """The connector class implements SupportsHMA in release."""
    return canonical(name, release) in SUPPORTS_HMA.at(release)


def env_int(inst: Instance, name: str, default: int) -> int | None:
    """name's value as envs.py reads it, default when unset; None when unreadable or unrendered (never guessed)."""
    if not inst.knows(f"env.{name}"):
        return None
    value = inst.env.get(name)
    if value is None:
        return default
    return env_values.as_int(value)  # envs.py's int(): "+5600", " 5600 " and "5_600" read too


def nearest(candidates: list[int], near: int, limit: int = 2) -> list[int]:
    """The limit candidates closest to near (ties: the larger), ascending: for "use TP 4 or 8" hints."""
    return sorted(sorted(candidates, key=lambda n: (abs(n - near), -n))[:limit])

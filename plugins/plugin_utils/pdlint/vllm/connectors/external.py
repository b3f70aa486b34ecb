"""Out-of-tree connectors (kv_connector_module_path): what pdlint knows of the widely used ones, with sources.

vLLM imports kv_connector from kv_connector_module_path (factory.py get_connector_class): from 0.20.0 the module
path wins over the registry, before it only a name the registry lacks is imported (0.8.5 has no such key). The
classes below were read in their projects' public source; anything else is opaque to pdlint (connector[out-of-tree]).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..releases import R, Release
from . import registry

_DYNAMO = "ai-dynamo/dynamo lib/bindings/kvbm/python/kvbm/vllm_integration/connector/"
_LMCACHE = "LMCache/LMCache lmcache/integration/vllm/"
_WRAPPER_HMA = R("0.21.0")  # vLLM's MultiConnector gains SupportsHMA: its subclasses inherit it


def _pd_children(kinds: list[str]) -> list[str]:
    """PdConnector.__init__: exactly two children, DynamoConnector or LMCacheConnectorV1 first, NixlConnector second."""
    if len(kinds) != 2:
        return [f"PdConnector requires exactly two connectors (got {len(kinds)}): ValueError in PdConnector.__init__"]
    problems = []
    if kinds[0] not in ("kvbm", "lmcache"):
        problems.append("PdConnector's first child must be DynamoConnector or LMCacheConnectorV1 (TypeError)")
    if kinds[1] != "nixl":
        problems.append("PdConnector's second child must be NixlConnector (TypeError)")
    return problems


@dataclasses.dataclass(frozen=True)
class Known:
    """An out-of-tree connector class: its family, whether it wraps children, whether it is SupportsHMA."""

    modules: tuple[str, ...]  # kv_connector_module_path values it is imported from
    name: str
    kind: str  # family: nixl, kvbm, lmcache, ... (a P/D transfer family only if it moves KV between P and D)
    composite: bool
    hma: Callable[[Release], bool | None]  # None: depends on the project's own release
    source: str
    check: Callable[[list[str]], list[str]] | None = None  # problems of its children's families
    hint: str = ""


KNOWN: tuple[Known, ...] = (
    Known(("kvbm.vllm_integration.connector", "kvbm.vllm_integration.connector.pd_connector",
           "dynamo.llm.vllm_integration.connector"), "PdConnector", "pd", True,
          lambda release: release >= _WRAPPER_HMA,
          _DYNAMO + ("pd_connector.py: class PdConnector(MultiConnector), children in kv_connector_extra_config."
                     "connectors (KVBM/LMCache offload first, NixlConnector second, which does the P/D transfer); it "
                     "adds no SupportsHMA of its own but inherits vLLM's MultiConnector's from 0.21.0"),
          _pd_children, "list DynamoConnector (or LMCacheConnectorV1) first and NixlConnector second"),
    Known(("kvbm.vllm_integration.connector", "kvbm.vllm_integration.connector.dynamo_connector",
           "dynamo.llm.vllm_integration.connector"), "DynamoConnector", "kvbm", False, lambda release: False,
          _DYNAMO + ("dynamo_connector.py: class DynamoConnector(KVConnectorBase_V1): KVBM offload/onboard, no P/D "
                     "transfer, no SupportsHMA")),
    Known(("lmcache.integration.vllm.lmcache_connector_v1",), "LMCacheConnectorV1Dynamic", "lmcache", False,
          lambda release: None, _LMCACHE + ("lmcache_connector_v1.py: class LMCacheConnectorV1Dynamic; SupportsHMA "
                                            "in some LMCache releases only")),
    Known(("lmcache.integration.vllm.lmcache_mp_connector",), "LMCacheMPConnector", "lmcache", False,
          lambda release: None, _LMCACHE + ("lmcache_mp_connector.py: class LMCacheMPConnector; SupportsHMA in "
                                            "recent LMCache releases only")),
)
_BY_NAME = {(m, k.name): k for k in KNOWN for m in k.modules}


def loaded_from_module(name: str | None, module_path: str | None, release: Release) -> bool:
    """vLLM imports name from module_path rather than its registry (factory.py get_connector_class)."""
    if not name or not module_path or not registry.module_path_honoured(release):
        return False
    if module_path.startswith("vllm."):
        return False  # vLLM's own module: the in-tree class
    return release >= registry.UNKNOWN_NAME.steps[-1].since or not registry.registered(name, release)


def lookup(name: str | None, module_path: str | None) -> Known | None:
    return _BY_NAME.get((module_path or "", name or ""))

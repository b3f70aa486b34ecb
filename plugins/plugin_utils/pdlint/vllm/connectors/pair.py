"""What a release does with one prefill/decode pair: every independent problem, each with its vLLM source.

Rules ask `problems(prefill, decode)` and report the problems with their rule id (the
family modules register their checks when the package is imported: vllm/__init__.py);
hints vary one side's TP and ask again (rules/hints.py), so a hint never
suggests a value that another check of the same release rejects.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...topology.types import Instance
from ..model import hma
from ..releases import Release
from . import composite, registry


@dataclasses.dataclass(frozen=True)
class Side:
    """One engine of a pair as the connector code sees it (hashable: results are cached per shape)."""

    role: str  # prefill | decode
    release: Release
    connector: str | None  # the class name the kv_connector resolves to (aliases folded)
    tp: int = 1
    pp: int = 1
    dp: int = 1
    block_size: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    mla: bool | None = None
    ssm: bool | None = None
    sliding_window: int | None = None
    kv_role: str | None = None
    disable_hma: bool | None = None
    hma: bool | None = None  # the engine runs the hybrid KV cache manager (hma.enabled); None: not given
    kv_buffer_device: str | None = None
    extra: tuple[tuple[str, str], ...] = ()  # kv_connector_extra_config, values as str()
    env: tuple[tuple[str, str], ...] = ()  # the PAIR_ENV variables only: a per-host one would make every Side distinct
    layer_kinds: tuple[str, ...] | None = None  # each layer's kind (vllm/model/layers.py), for each PP stage's mix
    unread_env: bool = False  # a PAIR_ENV variable (or vllm_env) is an unrendered template: no verdict is guessed

    @classmethod
    def of(cls, inst: Instance) -> Side:
        """The engine as its transfer connector sees it: a composite's transfer child (composite.py), else itself."""
        release = registry.release(inst)
        view = composite.effective(inst)
        disable = inst.disable_hma if inst.disable_hma is not None or view is inst else not hma.enabled(inst)
        if hma.dynamo_turns_off(inst):
            disable = True  # Dynamo sets scheduler_config.disable_hybrid_kv_cache_manager itself
        return cls(
            role=inst.role, release=release, connector=registry.canonical(view.connector),
            tp=inst.tp, pp=inst.pp, dp=inst.dp, block_size=inst.block_size, heads=inst.facts.heads,
            kv_heads=inst.facts.kv_heads, mla=inst.facts.mla, ssm=inst.facts.ssm,
            sliding_window=inst.facts.sliding_window, hma=hma.enabled(inst),
            kv_role=view.kv_role if isinstance(view.kv_role, str) else None,  # any other is kv-role[invalid]s
            disable_hma=disable, extra=_items(view.extra), env=_items(pair_env(inst.env)),
            kv_buffer_device=view.kv_buffer_device if isinstance(view.kv_buffer_device, str) else None,
            layer_kinds=inst.facts.layer_kinds, unread_env=not inst.knows(*_PAIR_ENV))

    @property
    def hma_on(self) -> bool:
        """HMA runs (an unresolved Side, as tests build it, follows disable_hma)."""
        return self.hma if self.hma is not None else not self.disable_hma

    @property
    def non_full_attention(self) -> bool:
        """The model has layers whose KV cache spec is not a FullAttentionSpec (sliding window, chunked local
        attention: ChunkedLocalAttentionSpec, Mamba/SSM)."""
        return bool(self.ssm) or bool(self.sliding_window) or "chunked" in (self.layer_kinds or ())

    def get(self, key: str, default: str | None = None) -> str | None:
        """A kv_connector_extra_config value as text."""
        return dict(self.extra).get(key, default)

    def getenv(self, name: str, default: str | None = None) -> str | None:
        return dict(self.env).get(name, default)


# The vllm_env variables the family checks read off a Side (nixl_layout, moriio read mode, nixl_pp's partition):
# the only ones a pair verdict reads. Every other variable (the side channel host and port, UCX/NCCL devices, ...)
# is read per host, by the per-host rules (rules/placement/network.py, rules/per_engine/env.py, ports.py): keeping it out of the Side
# and out of the pair class (rules/pair/pairs.py pair_key) is what lets engines that differ only there be judged once.
PAIR_ENV = ("VLLM_KV_CACHE_LAYOUT", "VLLM_MORIIO_CONNECTOR_READ_MODE", "VLLM_PP_LAYER_PARTITION",
            "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE")  # the last: whether HMA runs (vllm/model/chunked.py)
_PAIR_ENV = tuple(f"env.{name}" for name in PAIR_ENV)


def pair_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """The PAIR_ENV variables of env."""
    return {name: env[name] for name in PAIR_ENV if name in env}


def _items(mapping: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), _text(v)) for k, v in mapping.items()))


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One way the pair fails (or cannot work) in the side's release."""

    rule: str  # the rule id that reports it
    side: str  # prefill | decode: whose value the finding points at
    fields: tuple[str, ...]  # contract variables (without vllm_) that set it, first set one is the location
    message: str
    source: str  # vLLM file and function (or why no check exists)
    hint: str | None = None  # a concrete fix; None: rules/hints.py searches TP sizes
    tp_fix: bool = True  # a TP change can fix it (hints search TP sizes)


PairCheck = Callable[[Side, Side], Iterable[Problem]]  # a connector family's check (families.py FAMILIES)

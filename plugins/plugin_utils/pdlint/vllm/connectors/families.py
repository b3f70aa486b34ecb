"""The pair check of each connector family, one explicit table: what pairs a prefill and a decode side.

Each family's check lives with its connector (nixl/, moriio/, mooncake.py, p2p.py); the table names them here, so
what runs does not depend on which modules were imported first.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping

from . import mooncake, moriio, nixl, p2p, registry
from .pair import PairCheck, Problem, Side

# registry.kind_of(connector name) -> the family's check
FAMILIES: Mapping[str, PairCheck] = {"nixl": nixl.pair, "moriio": moriio.pair, "mooncake": mooncake.pair,
                                     "p2p-nccl": p2p.pair}


@functools.lru_cache(maxsize=65536)
def problems(prefill: Side, decode: Side) -> tuple[Problem, ...]:
    """Every problem of the pair (empty: this release pairs them); both sides must use the same class."""
    if prefill.unread_env or decode.unread_env:  # the unresolved finding says so; the verdict is not guessed
        return ()
    check = FAMILIES.get(registry.kind_of(prefill.connector) or "")
    return tuple(check(prefill, decode)) if check else ()

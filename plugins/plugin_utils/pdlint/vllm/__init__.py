"""What pdlint knows about vLLM, release by release: each fact keyed by the span where it holds, citing its source.

Importing the package registers every rule's timelines (the connector families' pair checks are a table:
connectors/families.py FAMILIES).
"""
from .connectors import composite, kvconfig, mooncake, moriio, nixl, p2p  # noqa: F401 - their timelines register on import
from .connectors.nixl import channel as nixl_channel  # noqa: F401 - each registers on import

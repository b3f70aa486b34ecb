"""pdlint: lint vLLM prefill/decode disaggregated topologies kept in Ansible inventories."""
from __future__ import annotations

__version__ = "0.1.0"

# The vLLM release whose source the rules follow (see docs/rules-provenance.md).
NEWEST_VLLM = "0.32.0"

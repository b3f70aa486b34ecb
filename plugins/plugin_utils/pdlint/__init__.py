"""pdlint: lint vLLM prefill/decode disaggregated topologies kept in Ansible inventories."""
from __future__ import annotations

__version__ = "0.1.0"

# The newest vLLM release whose source the rules follow, applied where no vllm_version is set
# (vllm/releases.py lists every release covered; docs/rules-provenance.md cites the source).
NEWEST_VLLM = "0.33.0"

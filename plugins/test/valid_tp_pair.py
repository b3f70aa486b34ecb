"""Test: is a prefill/decode TP pair valid for a connector (the core's tp-ratio and kv-heads rules)."""
from __future__ import annotations

from typing import Any

from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.engine import tp_pair as pairing


def valid_tp_pair(prefill_tp: int, decode_tp: int, connector: str = "moriio", num_kv_heads: int | None = None,
                  is_mla: bool = False, read_mode: bool = True, vllm_version: str | None = None) -> bool:
    return not pairing.tp_pair_findings(int(prefill_tp), int(decode_tp), connector, num_kv_heads, is_mla, read_mode,
                                        vllm_version)


class TestModule:
    def tests(self) -> dict[str, Any]:
        return {"valid_tp_pair": valid_tp_pair}

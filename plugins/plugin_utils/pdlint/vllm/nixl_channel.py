"""NIXL's side channel per release: the listeners each instance binds, and what the handshake's compatibility hash
compares between prefill and decode (pd-mismatch rules)."""
from __future__ import annotations

from .history import history
from .releases import R, Release, Timeline

_OLD = "v1/nixl_connector.py NixlConnectorWorker"

# compute_nixl_compatibility_hash factors (checked by the handshaking side unless enforce_handshake_compat is off).
HASHED: Timeline[frozenset[str]] = Timeline(
    "NIXL compatibility hash factors pdlint compares",
    ("0.9.0", frozenset(), f"{_OLD}.add_remote_agent", "no hash (only the attention backend is asserted equal)"),
    ("0.13.0", frozenset({"version", "model", "dtype", "kv_cache_dtype"}),
     "v1/nixl_connector.py compute_nixl_compatibility_hash", "vLLM version, model string, dtype, kv cache dtype"),
    ("0.18.0", frozenset({"version", "model", "dtype", "kv_cache_dtype", "hma"}),
     "v1/nixl_connector.py compute_nixl_compatibility_hash", "+ is_hma_enabled"),
    ("0.20.0", frozenset({"version", "model", "dtype", "kv_cache_dtype", "hma"}),
     "v1/nixl/metadata.py compute_nixl_compatibility_hash", "same factors"),
    ("0.28.0", frozenset({"version", "model", "dtype", "kv_cache_dtype", "hma", "mode"}),
     "v1/nixl/metadata.py compute_nixl_compatibility_hash", "+ transfer_mode (pull/push)"),
)
for _rule, _fact in (("pd-mismatch[vllm-version]", "version"), ("pd-mismatch[model]", "model"),
                     ("pd-mismatch[dtype]", "dtype"), ("pd-mismatch[kv-cache-dtype]", "kv_cache_dtype"),
                     ("pd-mismatch[hma]", "hma")):
    history(_rule, HASHED)
HANDSHAKE_PAYLOAD = R("0.13.0")  # NixlHandshakePayload (hash + metadata) replaces bare NixlAgentMetadata
# VLLM_NIXL_SIDE_CHANNEL_PORT: (default, layout) - envs.py and where the listener binds.
SIDE_CHANNEL: Timeline[tuple[int, str]] = Timeline(
    "NIXL side-channel listeners",
    ("0.9.0", (5557, "worker"), f"{_OLD}._nixl_handshake_listener", "one per worker at PORT + tp_rank (DP ignored)"),
    ("0.9.1", (5557, "worker-dp-local"), f"{_OLD}.__init__ (side_channel_port), _nixl_handshake_listener",
     "one per worker at PORT + data_parallel_rank_local * TP + tp_rank"),
    ("0.9.2", (5557, "worker-dp"), f"{_OLD}.__init__ (side_channel_port), _nixl_handshake_listener",
     "one per worker at PORT + data_parallel_rank * TP + tp_rank"),
    ("0.11.1", (5600, "engine"), "v1/nixl_connector.py NixlConnectorScheduler.__init__",
     "one per engine core at PORT + data_parallel_rank"),
    ("0.14.0", (5600, "engine"), "NixlConnectorScheduler.__init__ (v1/nixl/base_scheduler.py from 0.24.0)",
     "one per engine core at PORT + data_parallel_index"),
)


def hash_checked(release: Release, enforce: bool, fact: str) -> bool:
    """True when the handshaking side's release hashes fact and enforce_handshake_compat is on."""
    return enforce and fact in HASHED.at(release)


def side_channel_ports(release: Release, base: int, dp_start: int, dp_local: int, tp: int) -> list[tuple[int, str]]:
    """(port, what) of each side-channel listener the instance binds, per its release's layout."""
    layout = SIDE_CHANNEL.at(release)[1]
    binds: list[tuple[int, str]] = []
    for dp_index in range(dp_start, dp_start + dp_local):
        if layout == "engine":
            binds.append((base + dp_index, f"NIXL side channel (DP rank {dp_index})"))
            continue
        offset = {"worker": 0, "worker-dp-local": (dp_index - dp_start) * tp, "worker-dp": dp_index * tp}[layout]
        binds.extend((base + offset + t, f"NIXL side channel (DP rank {dp_index}, TP rank {t})") for t in range(tp))
    return binds


def default_side_channel_port(release: Release) -> int:
    return SIDE_CHANNEL.at(release)[0]

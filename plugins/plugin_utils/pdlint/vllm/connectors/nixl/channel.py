"""NIXL's side channel per release: the listeners each instance binds, and what the handshake's compatibility hash
compares between prefill and decode (pd-mismatch rules)."""
from __future__ import annotations

import functools
import re

from ....topology.types import Instance
from ...history import history
from ...releases import R, Release, Timeline, resolve
from .. import view
from ..registry import release as release_of

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


def checkers(prefill: Instance, decode: Instance) -> tuple[Instance, ...]:
    """The sides that compare the compatibility hash: decode in pull mode; in push mode both handshake."""
    return (prefill, decode) if view.is_push(prefill) else (decode,)


def hashed_by(prefill: Instance, decode: Instance, fact: str) -> Release | None:
    """The release that rejects a difference in fact at the NIXL handshake, if one does (HASHED)."""
    if view.kind(prefill) != "nixl":
        return None
    for inst in checkers(prefill, decode):
        if hash_checked(release_of(inst), view.enforces_compat_hash(inst), fact):
            return release_of(inst)
    return None


# PEP 440, as setuptools_scm normalizes what it writes to vllm/_version.py (`__version__ = version = '...'`).
_PEP440 = re.compile(
    r"^\s*[vV]?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:-(?P<post_implicit>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>\d*)(?P<post>))?"
    r"(?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PRE = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}


@functools.lru_cache(maxsize=1024)  # asked for both sides of every NIXL pair: a fleet has a few versions
def reported_version(text: str) -> str | None:
    """What `vllm.__version__` is for an engine whose vllm_version is text (None: not a version).

    compute_nixl_compatibility_hash (0.13.0+) hashes vllm.__version__ verbatim, so this, not the release whose
    rules apply, is what two sides must share: 0.32.0.post1 and 0.32.0+cu129 differ from 0.32.0; v0.32.0 and
    0.32.0 do not (the `v` is no part of a version). `0.32` names the series' newest known release.
    """
    found = _PEP440.match(text)
    if not found:
        return None
    parts = [int(n) for n in found["release"].split(".")]
    if len(parts) == 2:
        series = resolve(found["release"]).release  # the contract: `0.25` means the series' newest release
        if series is not None and list(series.key[:2]) == parts:
            parts = [n for i, n in enumerate(series.key) if i < 3 or n]
        else:
            parts.append(0)  # a series pdlint does not know: its first release
    out = ".".join(str(n) for n in parts)
    if found["pre"]:
        out += _PRE.get(found["pre"].lower(), found["pre"].lower()) + str(int(found["pre_n"] or 0))
    if found["post_implicit"] is not None or found["post"] is not None:
        out += f".post{int(found['post_implicit'] or found['post_n'] or 0)}"
    if found["dev"]:
        out += f".dev{int(found['dev_n'] or 0)}"
    if found["local"]:
        out += "+" + re.sub(r"[-_]", ".", found["local"].lower())
    return out


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

"""The kv_connector_extra_config keys each connector reads (vllm/data/extra_keys.json) are what each release's own
kv_connector/v1/ source reads."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import vllm_source

from pdlint.vllm.connectors import extra_read
from pdlint.vllm.releases import KNOWN, R

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import vllm_extra_keys  # the generator lives in tools/

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = vllm_source.roots(KNOWN)


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_table_is_the_wheels(release):
    table = {f: sorted(extra_read.reads(f, release)) for f in extra_read.FAMILIES
             if extra_read.reads(f, release) is not None}
    assert table == vllm_extra_keys.read(ROOTS[release])


@pytest.mark.parametrize(("family", "release", "key", "hint"), [
    ("nixl", "0.33.0", "http_port", "it is MoRIIO's key"),  # P2pNccl is gone from 0.24.0
    ("nixl", "0.20.0", "http_port", "it is MoRIIO and P2pNccl's key (left from another connector?): remove it"),
    ("nixl", "0.33.0", "num_thread", "did you mean num_threads?"),
    ("nixl", "0.20.0", "kv_lease_duration", "NIXL reads it in vLLM 0.22.0+; remove it, or pin that release"),
    ("moriio", "0.20.0", "read_mode", "MoRIIO reads it in vLLM 0.23.0+; remove it, or pin that release"),
    ("mooncake", "0.33.0", "whatever", "remove it"),
])
def test_a_key_the_release_never_reads(family, release, key, hint):
    message, got = extra_read.no_effect(family, key, R(release))
    assert message.startswith(f"kv_connector_extra_config key {key!r} has no effect: ")
    assert got.startswith(hint)


def test_read_keys_and_unknown_families_say_nothing():
    assert extra_read.no_effect("nixl", "backends", R("0.33.0")) is None
    assert extra_read.no_effect("lmcache", "anything", R("0.33.0")) is None  # the lmcache package reads its own
    assert extra_read.no_effect("moriio", "http_port", R("0.13.0")) is None  # no MoRIIO in 0.13.0: not pdlint's say

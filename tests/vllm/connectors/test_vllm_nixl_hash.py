"""pd-mismatch[vllm-version] against each release's own compute_nixl_compatibility_hash.

The hash function is lifted from every release that has it (v1/nixl_connector.py 0.13.0 - 0.19.1,
v1/nixl/metadata.py 0.20.0+), with hash_factors from that release's vllm/config/utils.py and a `vllm` module
whose __version__ is what setuptools_scm writes for the build: the PEP 440 normal form of the vllm_version
string (packaging.version, independent of pdlint's own normalizer). Two engines pair iff their hashes are
equal; pdlint must report the pair iff they are not, for every spelling of every release and their neighbours.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import itertools
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import vllm_source
from packaging.version import Version

from pdlint.hostvars import HostVars
from pdlint.rules import REGISTRY
from pdlint.topology.build import build
from pdlint.vllm.connectors.nixl import channel as nixl_channel
from pdlint.vllm.releases import KNOWN, R, Release, resolve

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if r >= R("0.9.0")]
ROOTS = vllm_source.roots(RELEASES)
KV = vllm_source.KV
NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}


class Fake:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


def _hash_file(root: Path) -> str | None:
    for rel in (f"{KV}/v1/nixl/metadata.py", f"{KV}/v1/nixl_connector.py"):
        if vllm_source.has(root, rel, "compute_nixl_compatibility_hash"):
            return rel
    return None


@functools.cache
def _compute(root: Path) -> Any:
    """The release's compute_nixl_compatibility_hash (None before 0.13.0), ready to call without torch."""
    rel = _hash_file(root)
    if rel is None:
        return None
    tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    consts = {}
    for node in tree.body:  # NIXL_CONNECTOR_VERSION: a module-level literal
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name) and target.id == "NIXL_CONNECTOR_VERSION" and node.value is not None:
                consts[target.id] = ast.literal_eval(node.value)
    env = {**consts, "logger": Fake(debug=lambda *a, **k: None, info=lambda *a, **k: None),
           "_get_speculative_compatibility_factors": lambda config: None}
    return vllm_source.lift(root, rel, {"compute_nixl_compatibility_hash"}, env=env)[
        "compute_nixl_compatibility_hash"]


@functools.cache
def _hash_factors(root: Path) -> Any:
    return vllm_source.lift(root, "vllm/config/utils.py", {"hash_factors"},
                            env={"hashlib": hashlib, "json": json})["hash_factors"]


def dunder_version(text: str) -> str:
    """vllm.__version__ of a build named text: setuptools_scm's PEP 440 normal form (a series: its newest release)."""
    text = text.strip().lstrip("vV")
    if text.count(".") == 1 and text.replace(".", "").isdigit():
        text = str(resolve(text).release)
    return str(Version(text))


def vllm_hash(release: Release, version_text: str, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The compatibility hash an engine of release, built as version_text, sends (None: no hash)."""
    root = ROOTS[release]
    compute = _compute(root)
    if compute is None:
        return None
    fake = types.ModuleType("vllm")
    fake.__version__ = dunder_version(version_text)  # type: ignore[attr-defined]
    config_utils = types.ModuleType("vllm.config.utils")
    config_utils.hash_factors = _hash_factors(root)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.config", types.ModuleType("vllm.config"))
    monkeypatch.setitem(sys.modules, "vllm.config.utils", config_utils)
    model = Fake(model="m", dtype="bfloat16", get_total_num_kv_heads=lambda: 8, get_head_size=lambda: 128,
                 get_total_num_hidden_layers=lambda: 32)
    config = Fake(model_config=model, cache_config=Fake(cache_dtype="auto"),
                  scheduler_config=Fake(disable_hybrid_kv_cache_manager=True), speculative_config=None)
    params = list(inspect.signature(compute).parameters.values())[2:]
    extra = {p.name: False for p in params if p.default is inspect.Parameter.empty}  # e.g. cross_layers_blocks
    return str(compute(config, "FLASH_ATTN", **extra))


def vllm_fails(rp: Release, vp: str, rd: Release, vd: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    hp, hd = vllm_hash(rp, vp, monkeypatch), vllm_hash(rd, vd, monkeypatch)
    if hp is None and hd is None:
        return False  # before 0.13.0 no release compares versions
    if hp is None or hd is None:
        return True  # one side sends a NixlHandshakePayload the other cannot decode (or expects one)
    return hp != hd  # decode (pull) raises "NIXL compatibility hash mismatch"


def pdlint_reports(vp: str, vd: str) -> bool:
    def hv(name: str, role: str, version: str) -> HostVars:
        return HostVars(name, {"vllm_pd_deployment": "x", "vllm_pd_role": role, "vllm_version": version,
                               "vllm_kv_transfer_config": NIXL, "vllm_disable_hybrid_kv_cache_manager": True})

    topo, _ = build([hv("p", "prefill", vp), hv("d", "decode", vd)])
    return bool(list(REGISTRY["pd-mismatch[vllm-version]"].check(topo)))


def spellings(release: Release) -> list[str]:
    """Ways an inventory names a build of release: the plain release, its v-form, rebuilds, local builds."""
    t = release.text
    found = [t, f"v{t}", f" {t} ", f"{t}.post1", f"{t}-post1", f"{t}.post2", f"{t}+cu129", f"{t}+CU129", f"{t}+cpu"]
    series = f"{release.key[0]}.{release.key[1]}"
    if resolve(series).release == release:
        found.append(series)
    return found


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_builds_of_one_release(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = []
    for vp, vd in itertools.product(spellings(release), repeat=2):
        if vllm_fails(release, vp, release, vd, monkeypatch) != pdlint_reports(vp, vd):
            wrong.append((vp, vd))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:5]}"


@pytest.mark.parametrize("release", RELEASES[1:], ids=str)
def test_neighbouring_releases(release: Release, monkeypatch: pytest.MonkeyPatch) -> None:
    before = RELEASES[RELEASES.index(release) - 1]
    wrong = []
    for (rp, vp), (rd, vd) in itertools.product(
            [(r, v) for r in (before, release) for v in spellings(r)[:4]], repeat=2):
        if vllm_fails(rp, vp, rd, vd, monkeypatch) != pdlint_reports(vp, vd):
            wrong.append((vp, vd))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:5]}"


def test_the_oracle_agrees_with_pdlints_normal_form() -> None:
    for release in RELEASES:
        for text in spellings(release):
            assert nixl_channel.reported_version(text) == dunder_version(text), text


def test_hash_uses_the_version_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lifted code itself tells 0.32.0 from 0.32.0.post1 (no normalisation inside vLLM)."""
    assert vllm_hash(R("0.32.0"), "0.32.0", monkeypatch) != vllm_hash(R("0.32.0"), "0.32.0.post1", monkeypatch)
    assert vllm_hash(R("0.12.0"), "0.12.0", monkeypatch) is None

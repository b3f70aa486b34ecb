"""pd-mismatch[*] for what NIXL's compatibility hash compares (model, dtype, kv-cache-dtype, vllm-version, hma).

The same model, dtype and kv-cache-dtype differences are reported for every paired connector (a different
KV cache layout); what NIXL's handshake hashes is vllm/connectors/nixl/channel.py HASHED. Block sizes: pd_mismatch_layout.py.
"""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology
from ...vllm.connectors import composite, registry, view
from ...vllm.connectors.nixl import channel as nixl_channel

# the rule below is called hma
from ...vllm.model import hma as hybrid
from ..base import Hit, hit, rule
from .pairs import Block, always, by_body

_DTYPE = {"half": "float16", "float": "float32"}
_PAIRED = ("nixl", "moriio", "mooncake", "p2p-nccl", "lmcache")


_release = registry.release


def _why(lp: Instance, ld: Instance, fact: str) -> str:
    """What the NIXL release does with the difference (empty for other connectors)."""
    if view.kind(lp) != "nixl":
        return ""
    hashed = nixl_channel.hashed_by(lp, ld, fact)
    if hashed is not None:
        return f" (NIXL in vLLM {hashed} hashes it at handshake: \"NIXL compatibility hash mismatch\")"
    rel = _release(nixl_channel.checkers(lp, ld)[0])
    if fact == "model":
        return f" (NIXL in vLLM {rel} does not check it: the KV cache is only right if both load the same weights)"
    return (f" (NIXL in vLLM {rel} does not check it: the KV cache layouts differ, so the transfer fails or "
            "reads garbage)")


def _differ(topo: Topology, field: str, attr: str, what: str) -> Iterator[Hit]:
    for group in by_body(topo, _PAIRED):  # the verdict reads the leads' settings: once per pair of bodies
        lp, ld = group[0].leads
        if not (lp.knows(field) and ld.knows(field)):
            continue
        a, b = getattr(lp, attr), getattr(ld, attr)
        if attr == "dtype":
            if "auto" in (a, b):
                continue  # resolved from the model: may well be equal
            a, b = _DTYPE.get(a, a), _DTYPE.get(b, b)
        if a is None or b is None or a == b:
            continue
        say = always(f"decode {what} {b!r} differs from prefill {what} {a!r}{_why(lp, ld, attr)}",
                     f"use the same {what} on both sides")
        for block in group:
            yield from block.spread("decode", (field,), say)


@rule("pd-mismatch[model]")
def model(topo: Topology) -> Iterator[Hit]:
    """Prefill and decode serve different --model strings.

    The KV cache of one model is meaningless to another; NIXL from 0.13.0
    hashes the exact model string at handshake (compute_nixl_compatibility_hash,
    unless enforce_handshake_compat is false), so a Hugging Face id and a local
    path to the same weights do not match either. Before 0.13.0 vLLM does not
    compare models; the message says so.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: Qwen/Qwen3-8B
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_model: Qwen/Qwen3-8B}
            d1: {vllm_pd_role: decode, vllm_model: /models/qwen3-8b}
    """
    yield from _differ(topo, "model", "model", "model")


@rule("pd-mismatch[dtype]")
def dtype(topo: Topology) -> Iterator[Hit]:
    """Prefill and decode set different explicit --dtype values.

    NIXL hashes the resolved model dtype from 0.13.0 (before, unequal element
    sizes fail the block-length assert, equal ones go unnoticed); for every
    connector a different dtype means a different KV cache layout. "auto" is
    not compared (it resolves from the model), and half/float16, float/float32
    are the same.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_dtype: half}
            d1: {vllm_pd_role: decode, vllm_dtype: float16}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_dtype: bfloat16}
            d1: {vllm_pd_role: decode, vllm_dtype: float16}
    """
    yield from _differ(topo, "dtype", "dtype", "dtype")


@rule("pd-mismatch[kv-cache-dtype]")
def kv_cache_dtype(topo: Topology) -> Iterator[Hit]:
    """Prefill and decode set different --kv-cache-dtype strings.

    NIXL hashes the unresolved string (`str(cache_config.cache_dtype)`) from
    0.13.0, so "auto" and "bfloat16" differ even when they mean the same;
    older NIXL releases and other connectors copy raw blocks, so the element
    types must match.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_cache_dtype: fp8
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_kv_cache_dtype: fp8}
            d1: {vllm_pd_role: decode}
    """
    yield from _differ(topo, "kv_cache_dtype", "kv_cache_dtype", "kv_cache_dtype")


@rule("pd-mismatch[vllm-version]")
def vllm_version(topo: Topology) -> Iterator[Hit]:
    """NIXL prefill and decode run different vLLM versions.

    From 0.13.0 compute_nixl_compatibility_hash includes vllm.__version__ (and
    the NIXL connector version) verbatim, so the handshake fails with "NIXL
    compatibility hash mismatch" unless enforce_handshake_compat is false on
    the side that checks (decode in pull mode). Builds of one release differ
    too: 0.32.0.post1 or a local 0.32.0+cu129 does not pair with 0.32.0 (v0.32.0
    and 0.32.0 do; the rules of both follow release 0.32.0). A pair across the
    0.13.0 boundary also fails: the new NixlHandshakePayload cannot be decoded
    by the older release. Two versions before 0.13.0 are not compared by vLLM
    and are not reported.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_version: "0.32.0"
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_version: "0.32.0"}
            d1: {vllm_pd_role: decode, vllm_version: "0.31.1"}
    """
    for group in by_body(topo, "nixl"):  # the verdict reads the leads' settings: once per pair of bodies
        lp, ld = group[0].leads
        if not (lp.knows("version") and ld.knows("version")):
            continue
        vp, vd = nixl_channel.reported_version(lp.version), nixl_channel.reported_version(ld.version)
        if vp is None or vd is None or vp == vd:
            continue  # an unparsable version is version[unknown]'s
        rp, rd = _release(lp), _release(ld)
        hashed = nixl_channel.hashed_by(lp, ld, "version")
        if hashed is not None and rp == rd:
            why = (f"NIXL in vLLM {hashed} hashes vllm.__version__ verbatim at handshake ({vd!r} vs {vp!r}), so "
                   "builds of one release do not pair: \"NIXL compatibility hash mismatch\"")
        elif hashed is not None:
            why = f"NIXL in vLLM {hashed} hashes the vLLM version at handshake: \"NIXL compatibility hash mismatch\""
        elif min(rp, rd) < nixl_channel.HANDSHAKE_PAYLOAD <= max(rp, rd):
            why = (f"vLLM {nixl_channel.HANDSHAKE_PAYLOAD}+ sends a NixlHandshakePayload that older releases cannot "
                   "decode (vLLM does not check this: \"Failed to decode ...\")")
        else:
            continue  # not hashed: before 0.13.0, or enforce_handshake_compat is off
        say = always(f"decode vLLM version {ld.version!r} differs from prefill vLLM version {lp.version!r}: {why}",
                     "use the same vLLM build on both sides" if rp == rd else "use the same vLLM version on both sides")
        for block in group:
            yield from block.spread("decode", ("version",), say)


@rule("pd-mismatch[hma]")
def hma(topo: Topology) -> Iterator[Hit]:
    """NIXL prefill and decode differ in the hybrid KV cache manager being on or off.

    compute_nixl_compatibility_hash includes `is_hma_enabled` from 0.18.0
    (when NIXL became SupportsHMA): not disable_hybrid_kv_cache_manager,
    resolved per connector in VllmConfig.__post_init__, whatever the model's
    layers are.

    PASS:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_disable_hybrid_kv_cache_manager: true
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars:
            vllm_pd_deployment: chat
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1: {vllm_pd_role: prefill, vllm_disable_hybrid_kv_cache_manager: true}
            d1: {vllm_pd_role: decode}
    """
    field = "disable_hybrid_kv_cache_manager"
    for group in by_body(topo, _PAIRED):  # whether to report reads the leads' settings: once per pair of bodies
        lp, ld = group[0].leads
        hashed = nixl_channel.hashed_by(lp, ld, "hma")
        if hashed is None or not (lp.knows(field) and ld.knows(field)):
            continue
        if not (hybrid.known(lp) and hybrid.known(ld)):
            continue  # an out-of-tree class pdlint cannot see decides it
        if hybrid.enabled(lp) != hybrid.enabled(ld):
            yield from _hma_hits(group, hashed, field)


def _hma_hits(group: list[Block], hashed: object, field: str) -> Iterator[Hit]:
    """The hits of one group's pairs (the leads' HMA differs): spread over its Blocks, or pair by pair when the
    message names the side that cannot run HMA and the hint the side to change."""
    lp, ld = group[0].leads
    a, b = hybrid.enabled(lp), hybrid.enabled(ld)
    on = {True: "on", False: "off"}
    msg = (f"hybrid KV cache manager is {on[a]} on prefill but {on[b]} on decode (NIXL in vLLM {hashed} "
           "hashes it at handshake: \"NIXL compatibility hash mismatch\")")
    if not _cannot_run_hma(lp if a is False else ld):  # whether it can is the body's (its release and classes)
        side = "decode" if ld.disable_hma is not None else "prefill"
        for block in group:
            yield from block.spread(side, (field,), always(msg, f"set vllm_{field} the same on both sides"))
        return
    for block in group:
        for p, d, lp, ld in block.each():
            # the side that has it on must turn it off: the other side cannot run it
            stuck = _cannot_run_hma(lp if a is False else ld)
            where, lead = (d, ld) if a is False else (p, lp)
            yield hit(where, (field, "kv_transfer_config"), f"{msg}; {stuck}",
                      f"set vllm_{field}: true on {lead.label}", also=(p, d))


def _cannot_run_hma(inst: Instance) -> str:
    """Why inst cannot run the hybrid KV cache manager in its release (empty: it can)."""
    release = _release(inst)
    if composite.is_composite(inst):
        if composite.children_hma(inst) is False or composite.class_hma(inst.connector, inst.module_path,
                                                                        release) is False:
            lacking = " and ".join(hybrid.lacking(inst)) or "a child connector"
            return (f"{inst.label} cannot turn it on: {lacking} in its {inst.connector} lacks SupportsHMA in "
                    f"vLLM {release}")
        return ""
    if inst.connector and not registry.supports_hma(registry.canonical(inst.connector, release), release):
        return f"{inst.label} cannot turn it on: {inst.connector} lacks SupportsHMA in vLLM {release}"
    return ""


# The rules of this module judge a prefill/decode pair (explain attaches their findings to the pair they name).
PAIR_RULES = tuple(r.id for r in (model, dtype, kv_cache_dtype, vllm_version, hma))

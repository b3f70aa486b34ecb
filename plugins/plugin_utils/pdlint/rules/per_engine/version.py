"""vllm-version[unknown]: vllm_version names a release pdlint has no rules of its own for."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology
from ...vllm.releases import resolve
from ..base import Hit, each_body, hit, rule


@rule("vllm-version[unknown]", "warning")
def unknown(topo: Topology) -> Iterator[Hit]:
    """vllm_version is not a release pdlint knows; the rules of the nearest known release were applied.

    pdlint applies each vLLM release's own behaviour (`pdlint versions` lists
    them). A release newer than the newest known one gets the newest known
    rules, one that falls between known releases gets the rules of the one
    before it; the message names the release whose rules were used. A value
    that is not a release at all is a `schema` error.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_version: "0.25.1.post1"}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_version: "0.99.0"}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, note in each_body(topo, _note):  # the engine's own settings: once per body
        yield hit(inst, ("version",), note, "pin a release `pdlint versions` lists, or update pdlint")


@rule("vllm-version[pre-release]", "info")
def pre_release(topo: Topology) -> Iterator[Hit]:
    """vllm_version names an rc or dev build of a known release; that release's rules were applied.

    `vllm.__version__` of a release candidate reads like 0.14.0rc1, of a
    source build like 0.14.0rc1.dev12+g0123abc (setuptools-scm). pdlint
    applies the rules of the release the build leads to (0.14.0) and says
    so, since the build's code may still differ from it.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat, vllm_version: "0.14.0"}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat, vllm_version: "0.14.0rc1"}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
    """
    for inst, note in each_body(topo, _prerelease):  # the engine's own settings: once per body
        yield hit(inst, ("version",), note, "pin the final release once it is out, to get its exact rules")


def _note(inst: Instance) -> tuple[str, ...]:
    # which names the origins cover is part of the body (share_bodies)
    if not inst.knows("version") or "version" not in inst.origins:
        return ()
    note = resolve(inst.version).note
    return (note,) if note else ()


def _prerelease(inst: Instance) -> tuple[str, ...]:
    if not inst.knows("version") or "version" not in inst.origins:
        return ()
    note = resolve(inst.version).prerelease
    return (note,) if note else ()

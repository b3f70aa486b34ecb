"""deployment[*]: every deployment needs both sides, speaking one connector."""
from __future__ import annotations

from collections.abc import Iterator

from ...topology.types import Instance, Topology
from ...vllm.connectors import composite, registry
from ..base import Hit, hit, rule
from .pairs import always, by_body


@rule("deployment[incomplete]")
def incomplete(topo: Topology) -> Iterator[Hit]:
    """A deployment has no prefill or no decode instance.

    KV cache produced by prefill must be consumed by a decode instance of the
    same deployment (vllm_pd_deployment); a one-sided deployment serves nothing.
    A host whose vllm_pd_role or vllm_pd_deployment cannot be rendered
    statically may be the missing side: the rule is skipped then (never
    guessed), and `unresolved` names the template.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill}
            p2: {vllm_pd_role: prefill}
    """
    for dep in topo.deployments:
        present = dep.prefill or dep.decode
        if dep.prefill and dep.decode:
            continue
        missing = "decode" if dep.prefill else "prefill"
        if any(u.may_be(dep.name, missing) for u in topo.undecided):
            continue  # a host whose role or deployment is unresolved may be that side (its `unresolved` says so)
        yield hit(present[0], ("pd_deployment",),
                  f"deployment {dep.name!r} has no {missing} instance",
                  f"add a host with vllm_pd_role: {missing} and vllm_pd_deployment: {dep.name}",
                  also=present[1:], deployment=dep.name)


@rule("deployment[connector]")
def connector(topo: Topology) -> Iterator[Hit]:
    """Prefill and decode of a deployment use different kv_connector classes.

    Aliases count as the same class in the releases that define them: from
    vLLM 0.24.0 `NixlConnector` is `NixlPullConnector` (before, only
    NixlConnector exists); `NixlPushConnector` is a different protocol and
    never pairs with either (the transfer mode is part of NIXL's handshake
    hash). A composite connector pairs through its transfer child: vLLM's
    MultiConnector (0.9.0+) and Dynamo's PdConnector wrap children in
    kv_connector_extra_config.connectors, and the P/D child among them (NIXL,
    MoRIIO, Mooncake, P2pNccl) is what the other side must speak; a prefill on
    PdConnector(DynamoConnector + NixlConnector) pairs with a NIXL decode.

    PASS:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: NixlPullConnector, kv_role: kv_consumer}

    FAIL:

        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_producer}
            d1:
              vllm_pd_role: decode
              vllm_kv_transfer_config: {kv_connector: MooncakeConnector, kv_role: kv_consumer}
    """
    for group in by_body(topo, None):  # the verdict reads the leads' settings (per_body): once per pair of bodies
        p, d = group[0].leads
        if not (p.knows("kv_connector") and d.knows("kv_connector")):
            continue
        # What pairs is a composite's transfer child (MultiConnector, PdConnector), not the wrapper's name.
        vp, vd = composite.effective(p), composite.effective(d)
        pc, dc = vp.connector, vd.connector
        if pc == dc or registry.same_class(pc, dc, p, d):
            continue
        say = always(f"decode uses kv_connector {_named(vd, d)} but prefill uses {_named(vp, p)}",
                     f"use kv_connector {pc} on decode too" if pc else "set the same kv_connector on both sides")
        for block in group:
            yield from block.spread("decode", ("kv_connector", "kv_transfer_config"), say, block.deployment)


def _named(view: Instance, inst: Instance) -> str:
    """The connector that pairs, naming the composite it sits in."""
    if view is inst:
        return str(inst.connector or "none")
    return f"{view.connector} (the transfer child of {inst.connector})"

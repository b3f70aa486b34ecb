"""The P/D systems' own kinds: each says which pods are prefill and decode and which of them serve together.

- NVIDIA Dynamo's DynamoGraphDeployment: each worker service (`subComponentType: prefill|decode`) is a workload
  of its `extraPodSpec`, its `mainContainer` the engine, `resources.limits.gpu` its GPUs and
  `multinode.nodeCount` its nodes; the graph is the deployment.
- KServe's LLMInferenceService: `spec.template` is decode and `spec.prefill.template` prefill, each with its
  `parallelism` (tensor, data, dataLocal); the model is `spec.model.name`; the container's command comes from an
  LLMInferenceServiceConfig, so the container's env `VLLM_ADDITIONAL_ARGS` is the launch line read.
- AIBrix's StormService (and RoleSet): `roles[]`, a role named prefill or decode is that side.
- llm-d's DisaggregatedSet: `roles[]`, each an embedded leaderWorkerTemplate, `replicas` per one of `slices`.
"""
from __future__ import annotations

from collections.abc import Iterator

from .documents import Document, Node
from .workloads import Decided, Workload, count, leader_workers, name_of


def workloads(doc: Document) -> Iterator[Workload]:
    kind = doc.kind
    if kind == "DynamoGraphDeployment":
        yield from _dynamo(doc)
    elif kind == "LLMInferenceService":
        yield from _kserve(doc)
    elif kind in ("StormService", "RoleSet"):
        yield from _aibrix(doc)
    elif kind == "DisaggregatedSet":
        yield from _disaggregated(doc)


def _tie(doc: Document) -> Decided:
    root = doc.root
    node = root.get("metadata", "name") or root
    return Decided(name_of(root), node.origin, f"the {doc.kind} {name_of(root)} ties its services")


def _side(name: str, node: Node | None, note: str) -> Decided | None:
    if node is None or name not in ("prefill", "decode"):
        return None
    return Decided(name, node.origin, note)


def _dynamo(doc: Document) -> Iterator[Workload]:
    for service, spec in doc.root.mapping("spec", "services").items():
        kind = (spec.text("componentType") or "").lower()
        sub = (spec.text("subComponentType") or "").lower()
        if kind in ("frontend", "planner", "router") or spec.get("extraPodSpec") is None:
            continue
        pod = spec.get("extraPodSpec")
        if pod is None:
            continue
        gpu = spec.get("resources", "limits", "gpu") or spec.get("resources", "requests", "gpu")
        nodes = spec.get("multinode", "nodeCount")
        work = Workload(f"{name_of(doc.root)}-{service.lower()}", doc, pod, spec.get("extraPodSpec", "metadata"),
                        count(spec.get("replicas")), container=pod.get("mainContainer"),
                        deployment=_tie(doc),
                        side=_side(sub, spec.get("subComponentType"), f"Dynamo service {service}: subComponentType "
                                   f"{sub}"))
        if gpu is not None and count(gpu, -1) >= 0:
            work.gpus = Decided(count(gpu), gpu.origin, f"Dynamo service {service}: resources gpu")
        if nodes is not None and count(nodes) > 1:
            work.nodes = Decided(count(nodes), nodes.origin, f"Dynamo service {service}: multinode.nodeCount")
        yield work


_PARALLEL = (("tensor", "tensor_parallel_size", "--tensor-parallel-size"),
             ("data", "data_parallel_size", "--data-parallel-size"),
             ("dataLocal", "data_parallel_size_local", "--data-parallel-size-local"),
             ("pipeline", "pipeline_parallel_size", "--pipeline-parallel-size"))


def parallelism(section: Node | None, owner: str) -> dict[str, Decided]:
    """A `parallelism:` mapping's sizes as the contract's variables (KServe's and llm-d's spelling)."""
    out: dict[str, Decided] = {}
    for field, name, flag in _PARALLEL:
        node = section.get(field) if section is not None else None
        if node is not None and node.kind == "scalar" and node.value is not None:
            out[name] = Decided(node.value, node.origin, f"{owner} parallelism.{field}: {flag}")
    return out


def _kserve(doc: Document) -> Iterator[Workload]:
    spec = doc.root.get("spec")
    if spec is None:
        return
    model = spec.get("model", "name")
    given: dict[str, Decided] = {}
    if model is not None and model.kind == "scalar":
        given["model"] = Decided(str(model.value), model.origin, "LLMInferenceService spec.model.name: --model")
    name = name_of(doc.root)
    for side, section in (("decode", spec), ("prefill", spec.get("prefill"))):
        template = section.get("template") if section is not None else None
        if section is None or template is None:
            continue
        marker = section.get("template") if side == "decode" else spec.get("prefill")
        note = "LLMInferenceService spec.template is decode" if side == "decode" else \
            "LLMInferenceService spec.prefill is prefill"
        work = Workload(f"{name}-{side}", doc, template, None, count(section.get("replicas")),
                        deployment=_tie(doc), side=Decided(side, (marker or template).origin, note),
                        given={**given, **parallelism(section.get("parallelism"), f"LLMInferenceService {side}")},
                        launched_elsewhere=True)
        yield work


def _aibrix(doc: Document) -> Iterator[Workload]:
    root = doc.root
    roles = root.items("spec", "template", "spec", "roles") or root.items("spec", "roles")
    outer = count(root.get("spec", "replicas")) if doc.kind == "StormService" else 1
    for role in roles:
        name = (role.text("name") or "").lower()
        template = role.get("template")
        if template is None or template.get("spec") is None:
            continue
        side = next((s for s in ("prefill", "decode") if s in name), "")
        yield Workload(f"{name_of(root)}-{name or 'role'}", doc, template.get("spec") or template,
                       template.get("metadata"), outer * count(role.get("replicas")), deployment=_tie(doc),
                       side=_side(side, role.get("name"), f"{doc.kind} role {role.text('name')}"))


def _disaggregated(doc: Document) -> Iterator[Workload]:
    """llm-d's DisaggregatedSet: `roles[]`, each `spec` a leaderWorkerTemplate and its replicas per slice."""
    root = doc.root
    slices = count(root.get("spec", "slices"))
    for role in root.items("spec", "roles"):
        name = role.text("name") or ""
        spec = role.get("spec") or role
        side = next((s for s in ("prefill", "decode") if s in name.lower()), "")
        for work in leader_workers(f"{name_of(root)}-{name.lower() or 'role'}", doc, spec.get("leaderWorkerTemplate"),
                                   slices * count(spec.get("replicas"))):
            work.deployment = _tie(doc)
            work.side = _side(side, role.get("name"), f"DisaggregatedSet role {name}")
            yield work

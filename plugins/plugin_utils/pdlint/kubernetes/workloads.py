"""The pods a manifest runs vLLM in, as Workloads: a pod template and what the object around it says of it.

Core and apps kinds (Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet, Job) and LeaderWorkerSet (`size` pods
per group: one engine over several nodes) are read here; the P/D systems' own kinds in systems.py, llm-d's
modelservice Helm values in helm_values.py. A Workload keeps every value it was given as a Decided: the value,
where it is written, and how pdlint decided it (explain shows the note).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from ..finding import Origin
from .documents import Document, Node

# the pod annotations and labels a user writes when no system says it
DEPLOYMENT = "pdlint.io/deployment"
ROLE = "pdlint.io/role"
VERSION = "pdlint.io/vllm-version"
LLMD_ROLE = "llm-d.ai/role"


@dataclasses.dataclass(frozen=True)
class Decided:
    """A value pdlint takes from a manifest: the value, where it is written, and how it was decided."""

    value: Any
    origin: Origin
    note: str


@dataclasses.dataclass
class Workload:
    """One pod template that may run vLLM, and what its object says: how many pods, which side, which deployment."""

    name: str
    doc: Document
    pod: Node  # the pod spec: containers, and the rest
    metadata: Node | None  # the pod template's metadata (labels, annotations)
    replicas: int = 1
    nodes: Decided | None = None  # pods per engine (LeaderWorkerSet size, Dynamo multinode.nodeCount)
    side: Decided | None = None
    deployment: Decided | None = None
    gpus: Decided | None = None  # GPUs the system grants each pod (Dynamo's resources.limits.gpu)
    container: Node | None = None  # the container the system names (Dynamo's mainContainer)
    # contract variables the system sets itself (KServe's model and parallelism, the chart's parallelism)
    given: dict[str, Decided] = dataclasses.field(default_factory=dict)
    # words of the launch line the system writes itself before the container's (the chart's `vllm serve MODEL`)
    head: list[tuple[str, Origin]] = dataclasses.field(default_factory=list)
    launched_elsewhere: bool = False  # the command comes from another object (KServe's config): args are flags

    def annotation(self, name: str) -> Decided | None:
        """An annotation (or label) on the pod template, else on the object."""
        for where, owner in ((self.metadata, "pod template"), (self.doc.root.get("metadata"), self.doc.kind)):
            if where is None:
                continue
            for field in ("annotations", "labels"):
                node = where.get(field, name)
                if node is not None and node.kind == "scalar" and node.value is not None:
                    return Decided(str(node.value), node.origin, f"{field[:-1]} {name} on the {owner}")
        return None

    def label(self, name: str) -> str | None:
        node = self.metadata.get("labels", name) if self.metadata is not None else None
        return node.text() if node is not None else None

    def labels(self) -> dict[str, str]:
        if self.metadata is None:
            return {}
        return {k: str(v.value) for k, v in self.metadata.mapping("labels").items() if v.kind == "scalar"}


_APPS = frozenset(("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"))


def count(node: Node | None, default: int = 1) -> int:
    """A replica count as written (a missing or odd value is the default)."""
    value = node.value if node is not None and node.kind == "scalar" else None
    if isinstance(value, bool):
        return default
    try:
        return max(0, int(str(value))) if value is not None else default
    except ValueError:
        return default


def name_of(root: Node) -> str:
    return root.text("metadata", "name") or root.text("metadata", "generateName") or "unnamed"


def plain(doc: Document) -> Iterator[Workload]:
    """The workloads of a core, apps or LeaderWorkerSet object (nothing for other kinds)."""
    root, kind = doc.root, doc.kind
    name = name_of(root)
    if kind == "Pod" and root.get("spec") is not None:
        yield Workload(name, doc, root.get("spec") or root, root.get("metadata"))
        return
    if kind in _APPS:
        template = root.get("spec", "template")
        if template is not None and template.get("spec") is not None:
            yield Workload(name, doc, template.get("spec") or template, template.get("metadata"),
                           count(root.get("spec", "replicas")))
        return
    if kind == "LeaderWorkerSet":
        yield from leader_workers(name, doc, root.get("spec", "leaderWorkerTemplate"), count(root.get("spec", "replicas")))


def leader_workers(name: str, doc: Document, lwt: Node | None, replicas: int) -> Iterator[Workload]:
    """A leaderWorkerTemplate: one engine per group over `size` pods; the leader's template runs the server (the
    worker's when there is no leaderTemplate)."""
    if lwt is None:
        return
    template = lwt.get("leaderTemplate") or lwt.get("workerTemplate")
    if template is None or template.get("spec") is None:
        return
    size = lwt.get("size")
    nodes = Decided(count(size), size.origin, "LeaderWorkerSet size: the pods of one engine") \
        if size is not None and count(size) > 1 else None
    yield Workload(name, doc, template.get("spec") or template, template.get("metadata"), replicas, nodes)

"""llm-d's modelservice chart values (`prefill:` / `decode:` sections, recognised by shape) as the chart renders them.

The chart's templates (llm-d-modelservice `_helpers.tpl`) start each section's container with `modelCommand:
vllmServe` as `vllm serve MODEL --tensor-parallel-size T --data-parallel-size D --data-parallel-size-local L` (each
size only when above 1, T from `parallelism.tensor`, D from `data` or dataLocal x workers) followed by the
container's own `args`; `nvidia.com/gpu` is filled as tensor x dataLocal unless the container sets a limit (an
explicit one wins, the chart only warns). The model is `modelArtifacts.name`; the values file is one release, so
its two sections are one deployment.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

from ..finding import Origin
from .documents import Document, Node
from .workloads import Decided, Workload, count

SIDES = ("prefill", "decode")
_COMMANDS = ("vllmServe", "imageDefault")


def is_values(root: Node) -> bool:
    """A modelservice values document: a `prefill:` or `decode:` mapping holding `containers`."""
    return root.kind == "map" and not root.text("apiVersion") and any(
        root.get(side, "containers") is not None and root.get(side, "containers").kind == "seq"  # type: ignore[union-attr]
        for side in SIDES)


def workloads(doc: Document) -> Iterator[Workload]:
    root = doc.root
    model = root.get("modelArtifacts", "name")
    release = str(model.value) if model is not None and model.kind == "scalar" else \
        os.path.splitext(os.path.basename(doc.file))[0]
    for side in SIDES:
        section = root.get(side)
        if section is None or section.kind != "map" or section.scalar("create") is False:
            continue
        containers = section.items("containers")
        if not containers:
            continue
        chosen = next((c for c in containers if c.text("modelCommand") in _COMMANDS), containers[0])
        where = root.key_origins.get(side, section.origin)
        work = Workload(f"{release.replace('/', '-').lower()}-{side}", doc, section, section.get("podTemplate", "metadata"),
                        count(section.get("replicas")), container=chosen,
                        side=Decided(side, where, f"modelservice values section `{side}:`"),
                        deployment=Decided(release, model.origin if model is not None else where,
                                           "modelservice values: one release, its prefill and decode serve together"))
        parallel = section.get("parallelism")
        if chosen.text("modelCommand") in _COMMANDS:
            work.head = _head(chosen, model, parallel)
        tensor, local = _size(parallel, "tensor"), _size(parallel, "dataLocal")
        if tensor is not None or local is not None:
            origin = (tensor or local or (1, Origin()))[1]
            work.gpus = Decided((tensor or (1, origin))[0] * (local or (1, origin))[0], origin,
                                "modelservice: the chart fills nvidia.com/gpu as tensor x dataLocal")
        workers = _size(parallel, "workers")
        if workers is not None and workers[0] > 1:
            work.nodes = Decided(workers[0], workers[1], "modelservice parallelism.workers: pods of one engine")
        yield work


def _size(parallel: Node | None, field: str) -> tuple[int, Origin] | None:
    node = parallel.get(field) if parallel is not None else None
    if node is None or node.kind != "scalar" or isinstance(node.value, bool):
        return None
    try:
        return int(str(node.value)), node.origin
    except ValueError:
        return None


def _head(container: Node, model: Node | None, parallel: Node | None) -> list[tuple[str, Origin]]:
    """The words the chart writes before the container's args."""
    at = (container.get("modelCommand") or container).origin
    words: list[tuple[str, Origin]] = []
    if container.text("modelCommand") == "vllmServe":
        words += [("vllm", at), ("serve", at)]
    if model is not None and model.kind == "scalar":
        words += ([("--model", model.origin)] if not words else []) + [(str(model.value), model.origin)]
    tensor, data, local, workers = (_size(parallel, f) for f in ("tensor", "data", "dataLocal", "workers"))
    if data is None and local is not None and workers is not None:
        data = (local[0] * workers[0], local[1])
    elif data is None and local is not None:
        data = local
    for flag, size in (("--tensor-parallel-size", tensor), ("--data-parallel-size", data),
                       ("--data-parallel-size-local", local)):
        if size is not None and size[0] > 1:
            words += [(flag, size[1]), (str(size[0]), size[1])]
    return words

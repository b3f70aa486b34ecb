"""Kubernetes manifests as the hosts the rules judge: the load stage beside the inventory loaders (detect.py says
which paths are manifests). Every document is read, the InferencePools first known, then each workload's pods
made hosts."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence

from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..load.errors import LoadError, load_error
from ..load.preflight import guard
from ..paths import display_path
from . import documents, helm_values, pods, systems, workloads


@dataclasses.dataclass(frozen=True)
class Manifests:
    hosts: list[HostVars]
    findings: list[Finding]
    files: tuple[str, ...]  # the files read (absolute)


def load(files: Sequence[str], limits: guard.Limits, overlay: Mapping[str, str] | None = None) -> Manifests:
    """The hosts the manifests run vLLM in, and the findings on reading them. Raises LoadError (exit 2).
    overlay ({absolute path: text}, an editor's unsaved buffers) is read before the files on disk."""
    docs: list[documents.Document] = []
    for path in files:
        try:
            text = (overlay or {}).get(os.path.abspath(path))
            if text is None:
                with open(path, "rb") as handle:
                    data = handle.read(limits.max_file_bytes + 1)
                text = guard.text_of(data, path, limits)
            elif len(text.encode("utf-8")) > limits.max_file_bytes:
                raise guard.oversize(path, len(text.encode("utf-8")), limits)
        except guard.Refused as exc:
            raise LoadError(exc.finding) from None
        except OSError as exc:
            raise LoadError(load_error(Origin(display_path(path)), f"cannot read the file: {exc.strerror}")) from None
        docs += documents.read(path, text)
    pools = [_pool(d) for d in docs if d.kind == "InferencePool"]
    made: list[HostVars] = []
    for doc in docs:
        for work in _workloads(doc):
            made += pods.hosts(work, pools)
    made = _unique(made)
    return Manifests(made, _sideless(made), tuple(os.path.abspath(f) for f in files))


def _sideless(made: list[HostVars]) -> list[Finding]:
    """Never a silent pass: a pod whose line names a KV connector but no side (kv_both, no system marker) takes no
    part, and is said so once per line."""
    found: dict[Origin, list[str]] = {}
    for hv in made:
        line = hv.values.get(pods.ARGS)
        text = " ".join(line) if isinstance(line, list) else str(line or "")
        if "vllm_pd_role" in hv.values or "vllm_instances" in hv.values or "kv_transfer_config" not in \
                text.replace("-", "_") or "dynamo.vllm" in text:
            continue
        found.setdefault(pods.kv_origin(line, hv.origins), []).append(hv.host)
    return [Finding(origin, "unresolved", "warning", "the pod's --kv-transfer-config names no side (kv_role "
                    "kv_both) and nothing else says whether it is prefill or decode: it is not checked",
                    f"set the pod template's label {workloads.LLMD_ROLE} or annotation {workloads.ROLE} to prefill "
                    "or decode", tuple(sorted(names))) for origin, names in found.items()]


def _workloads(doc: documents.Document) -> list[workloads.Workload]:
    if helm_values.is_values(doc.root):
        return list(helm_values.workloads(doc))
    if not documents.is_manifest(doc.root):
        return []
    return [*workloads.plain(doc), *systems.workloads(doc)]


def _pool(doc: documents.Document) -> tuple[str, dict[str, str], Origin]:
    """An InferencePool's name and the labels it selects (v1's matchLabels, v1alpha2's plain mapping)."""
    selector = doc.root.get("spec", "selector", "matchLabels") or doc.root.get("spec", "selector")
    labels = {k: str(v.value) for k, v in (selector.mapping() if selector else {}).items() if v.kind == "scalar"}
    origin = selector.origin if selector is not None else doc.root.origin
    return workloads.name_of(doc.root), labels, origin


def _unique(made: list[HostVars]) -> list[HostVars]:
    """Host names made unique: two workloads of one name (in two namespaces, two files) get a suffix."""
    seen: dict[str, int] = {}
    out: list[HostVars] = []
    for hv in made:
        count = seen.get(hv.host, 0)
        seen[hv.host] = count + 1
        out.append(hv if not count else dataclasses.replace(hv, host=f"{hv.host}~{count + 1}"))
    return out

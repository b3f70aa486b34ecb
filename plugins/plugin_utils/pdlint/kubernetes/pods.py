"""A Workload's pods as the hosts the rules judge: each pod a host, its vLLM container's launch line `vllm_args`.

The launch line is the container's `command` + `args` in exec form, each item a word at its own line and column;
a `sh -c` / `bash -c` string is the line itself, read as a shell reads it (the launch stage finds each word inside
it); a container whose command comes from elsewhere (KServe) is the env `VLLM_ADDITIONAL_ARGS`. The side, the
deployment, the release and the GPUs each come from the first place that says them, and the note on the value
says which (explain prints it).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..finding import Origin
from ..hostvars import KEY, HostVars, Path, Unresolved, in_item
from ..topology.coerce import kv_config
from ..vllm.arguments import cmdline
from .documents import Node
from .workloads import DEPLOYMENT, LLMD_ROLE, ROLE, VERSION, Decided, Workload, name_of

ARGS = "vllm_args"
GPUS = ("nvidia.com/gpu", "amd.com/gpu")
MAX_REPLICAS = 32  # pods modelled per workload: more replicas of one template add nothing a rule reads
_SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh"))
_VLLM_IMAGES = ("vllm-openai", "vllm-tpu", "vllm-cpu")
_TAG = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+)?)(?:$|[-_+])")
_KV_FLAGS = ("--kv-transfer-config", "--kv_transfer_config")
_SIDES = {"kv_producer": "prefill", "kv_consumer": "decode"}
ADDITIONAL = "VLLM_ADDITIONAL_ARGS"


class _Vars:
    """The host's variables being written: values, origins and notes."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.origins: dict[Path, Origin] = {}
        self.notes: dict[Path, str] = {}

    def put(self, name: str, value: Any, origin: Origin, note: str | None = None) -> None:
        self.values[name] = value
        self.origins[(name,)] = self.origins[(name, KEY)] = origin
        if note:
            self.notes[(name,)] = f"{name} {value} <- {note} ({origin})"

    def decided(self, name: str, found: Decided | None) -> None:
        if found is not None:
            self.put(name, found.value, found.origin, found.note)


def engines(work: Workload) -> list[Node]:
    """The containers of the workload that run vLLM (the one the system names, else each whose line starts it)."""
    if work.container is not None:
        return [work.container]
    containers = [c for c in work.pod.items("containers") if c.kind == "map"]
    if work.launched_elsewhere:
        main = [c for c in containers if c.text("name") == "main"]
        return main or containers[:1]
    return [c for c in containers if _runs_vllm(c)]


def _runs_vllm(container: Node) -> bool:
    words = [n.text() or "" for n in (*container.items("command"), *container.items("args"))]
    if not container.items("command"):
        return _vllm_image(container.text("image") or "") is not None
    return any("vllm" in w for w in words[:3]) or (
        len(words) > 2 and os.path.basename(words[0]) in _SHELLS and "vllm" in words[2])


def _vllm_image(image: str) -> str | None:
    """The tag of a vLLM image (vllm/vllm-openai:v0.20.1), '' when it names none, None for another image."""
    image = image.split("@", 1)[0]
    repo, _unused, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    base = repo.rsplit("/", 1)[-1]
    if not (base.startswith(_VLLM_IMAGES) or base == "vllm"):
        return None
    return tag


def launch_line(work: Workload, container: Node) -> tuple[Any, dict[Path, Origin]] | None:
    """vllm_args of the container (a list of words, or a shell string) and its origins; None without a line."""
    written = [n for n in (*container.items("command"), *container.items("args")) if n.kind == "scalar"]
    env = _literal_env(container)
    words = [(_expanded(n.text() or "", env), n.origin) for n in written]
    if len(words) >= 3 and os.path.basename(words[0][0]) in _SHELLS and words[1][0].startswith("-") and \
            "c" in words[1][0]:
        return words[2][0], {(ARGS,): words[2][1]}
    if not container.items("command") and not work.head and not work.launched_elsewhere:
        image = container.get("image")
        at = image.origin if image is not None else container.origin
        words = [("vllm", at), ("serve", at), *words]  # the vLLM image's entrypoint
    words = [*work.head, *words]
    extra = _env_node(container, ADDITIONAL)
    if extra is not None and extra.kind == "scalar" and extra.text():
        words.append((extra.text() or "", extra.origin))
    if not words:
        return None
    origins: dict[Path, Origin] = {(ARGS,): words[0][1]}
    origins.update({(ARGS, i): origin for i, (_unused, origin) in enumerate(words)})
    return [w for w, _unused in words], origins


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def _literal_env(container: Node) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in container.items("env"):
        name, value = item.text("name"), item.get("value")
        if name and value is not None and value.kind == "scalar" and value.value is not None:
            found[name] = str(value.value).lower() if isinstance(value.value, bool) else str(value.value)
    return found


def _expanded(text: str, env: Mapping[str, str]) -> str:
    """A command or args item as Kubernetes hands it over: `$(NAME)` replaced by the container's env value (a
    name it does not set stays as written), `$$` an escaped `$`."""
    if "$" not in text:
        return text
    return _REFERENCE.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def _env_node(container: Node, name: str) -> Node | None:
    for item in container.items("env"):
        if item.text("name") == name:
            return item.get("value")
    return None


def _env(out: _Vars, container: Node, host: str) -> None:
    """The container's env as vllm_env: literal values, the pod's own address for status.podIP (as
    `{{ inventory_hostname }}` stands for a host), a VLLM_ variable set from elsewhere as unknown."""
    env: dict[str, Any] = {}
    for item in container.items("env"):
        name = item.text("name")
        if not name:
            continue
        value = item.get("value")
        field = item.get("valueFrom", "fieldRef", "fieldPath")
        path: Path = ("vllm_env", name)
        if value is not None and value.kind == "scalar":
            raw = value.value
            env[name] = "" if raw is None else str(raw).lower() if isinstance(raw, bool) else str(raw)
            out.origins[path] = out.origins[(*path, KEY)] = value.origin
        elif field is not None and field.text() in ("status.podIP", "status.hostIP"):
            env[name] = host
            out.origins[path] = out.origins[(*path, KEY)] = field.origin
            out.notes[path] = f"vllm_env.{name} <- valueFrom fieldRef {field.text()} ({field.origin}): the pod's own " \
                f"address (pdlint names it {host})"
        elif name.startswith("VLLM_") and item.get("valueFrom") is not None:
            source = item.get("valueFrom")
            env[name] = Unresolved(f"{name} is set from {'/'.join(item.mapping('valueFrom'))} when the pod starts")
            out.origins[path] = out.origins[(*path, KEY)] = source.origin if source is not None else item.origin
    if env:
        whole = container.get("env")
        origin = whole.origin if whole is not None else container.origin
        out.values["vllm_env"] = env
        out.origins[("vllm_env",)] = out.origins[("vllm_env", KEY)] = origin


def _tokens(value: Any) -> list[cmdline.Token]:
    try:
        return cmdline.argv(value)
    except cmdline.SplitError:
        return []


def kv_side(value: Any, origins: Mapping[Path, Origin]) -> Decided | None:
    """The side --kv-transfer-config's kv_role names (kv_both names none)."""
    tokens = _tokens(value)
    for index, token in enumerate(tokens):
        text = None
        if token.text in _KV_FLAGS and index + 1 < len(tokens):
            text, at = tokens[index + 1].text, tokens[index + 1]
        elif token.text.startswith(tuple(f + "=" for f in _KV_FLAGS)):
            text, at = token.text.split("=", 1)[1], token
        if text is None:
            continue
        config, _error = kv_config(text)  # the one reader of a --kv-transfer-config value
        role = config.get("kv_role") if config is not None else None
        if role in _SIDES:
            origin = origins.get((ARGS, at.item) if at.item is not None else (ARGS,), origins.get((ARGS,), Origin()))
            return Decided(_SIDES[role], origin, f"kv_role {role} in --kv-transfer-config")
    return None


def kv_origin(value: Any, origins: Mapping[Path, Origin]) -> Origin:
    """Where the line's --kv-transfer-config is written (the line's start when it names none)."""
    whole = origins.get((ARGS,), Origin())
    for token in _tokens(value):
        if token.text.startswith(_KV_FLAGS):
            return origins.get((ARGS, token.item), whole) if token.item is not None else whole
    return whole


def _gpus(work: Workload, container: Node) -> Decided | None:
    """GPUs the pod gets: Dynamo's grant on the service, else every container's nvidia.com/gpu or amd.com/gpu
    (limits first), else what the system fills in (the modelservice chart's tensor x dataLocal)."""
    if work.gpus is not None and work.doc.kind == "DynamoGraphDeployment":
        return work.gpus
    found: list[tuple[int, Origin, str, bool]] = []
    for each in work.pod.items("containers") or [container]:
        for kind in ("limits", "requests"):
            hit = next(((g, n) for g in GPUS for n in [each.get("resources", kind, g)] if n is not None), None)
            if hit is None:
                continue
            try:
                found.append((int(str(hit[1].value)), hit[1].origin, f"resources.{kind} {hit[0]}", each is container))
            except ValueError:
                pass
            break
    if not found:
        return work.gpus
    first = next((f for f in found if f[3]), found[0])
    return Decided(sum(f[0] for f in found), first[1], f"{first[2]}: the pod's GPUs" +
                   (" (every container's)" if len(found) > 1 else ""))


def version(work: Workload, container: Node) -> Decided | None:
    image = container.get("image")
    tag = _vllm_image(image.text() or "") if image is not None else None
    match = _TAG.match(tag) if tag else None
    if match and image is not None:
        return Decided(match.group(1), image.origin, f"the image tag {tag}")
    found = work.annotation(VERSION)
    return Decided(found.value.lstrip("vV"), found.origin, found.note) if found else None


def side(work: Workload, value: Any, origins: Mapping[Path, Origin]) -> Decided | None:
    if work.side is not None:
        return work.side
    for name in (ROLE, LLMD_ROLE):
        found = work.annotation(name)
        if found is not None and found.value in ("prefill", "decode"):
            return found
    return kv_side(value, origins)


def deployment(work: Workload, pools: Sequence[tuple[str, dict[str, str], Origin]]) -> Decided:
    if work.deployment is not None:
        return work.deployment
    labels = work.labels()
    for name, selector, origin in pools:
        if selector and all(labels.get(k) == v for k, v in selector.items()):
            return Decided(name, origin, f"the InferencePool {name} selects its pods")
    found = work.annotation(DEPLOYMENT)
    if found is not None:
        return found
    root = work.doc.root
    namespace = root.text("metadata", "namespace") or "default"
    where = root.get("metadata", "name") or root
    return Decided(namespace, where.origin, f"nothing ties {work.doc.kind} {name_of(root)} to others: every "
                   f"workload of namespace {namespace} is one deployment (annotation {DEPLOYMENT} names another)")


def _engine(work: Workload, container: Node, value: Any, origins: Mapping[Path, Origin], name: str) -> _Vars:
    """One container's engine: its launch line, env, side and the variables its system sets."""
    made = _Vars()
    made.decided("vllm_pd_role", side(work, value, origins))
    for key, given in work.given.items():
        made.decided("vllm_" + key, given)
    _env(made, container, name)
    if value is None:
        return made
    _dynamo_side_channel(made, value, origins, name)
    made.values[ARGS] = value
    made.origins.update(origins)
    made.origins[(ARGS, KEY)] = origins[(ARGS,)]
    return made


def _dynamo_side_channel(made: _Vars, value: Any, origins: Mapping[Path, Origin], host: str) -> None:
    """Dynamo's launcher sets VLLM_NIXL_SIDE_CHANNEL_HOST itself when the env leaves it unset (the pod's hostname
    or IP: dynamo/vllm args.py set_side_channel_host_and_port), so a worker pod advertises its own address."""
    words = [t.text for t in _tokens(value)]
    env = made.values.get("vllm_env")
    if "dynamo.vllm" not in words[:6] or (isinstance(env, dict) and "VLLM_NIXL_SIDE_CHANNEL_HOST" in env):
        return
    at = origins.get((ARGS,), Origin())
    if not isinstance(env, dict):
        env = made.values["vllm_env"] = {}
        made.origins[("vllm_env",)] = made.origins[("vllm_env", KEY)] = at
    env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = host
    path: Path = ("vllm_env", "VLLM_NIXL_SIDE_CHANNEL_HOST")
    made.origins[path] = made.origins[(*path, KEY)] = at
    made.notes[path] = f"vllm_env.VLLM_NIXL_SIDE_CHANNEL_HOST <- Dynamo's launcher sets it to the pod's own address " \
        f"({at}; pdlint names it {host})"


def _items(host: _Vars, engines: list[_Vars]) -> None:
    """Several vLLM containers in one pod: its vllm_instances (they share the pod's network and GPUs), each item the
    engine's variables without the vllm_ prefix."""
    items: list[dict[str, Any]] = []
    for index, engine in enumerate(engines):
        items.append({k[5:]: v for k, v in engine.values.items()})
        for path, origin in engine.origins.items():
            host.origins[in_item(index, path)] = origin
        for path, note in engine.notes.items():
            host.notes[in_item(index, path)] = note
    host.values["vllm_instances"] = items
    first = host.origins.get(("vllm_instances", 0, "args"), Origin())
    host.origins[("vllm_instances",)] = host.origins[("vllm_instances", KEY)] = first


def hosts(work: Workload, pools: Sequence[tuple[str, dict[str, str], Origin]]) -> list[HostVars]:
    """The pods of the workload that run vLLM, as hosts (none when no container runs it)."""
    # a container whose command comes from another object (KServe's config) is an engine without a line of its own
    lines = [(c, line if line is not None else (None, {})) for c in engines(work)
             for line in [launch_line(work, c)] if line is not None or work.launched_elsewhere]
    if not lines:
        return []
    container, (value, origins) = lines[0]
    nodes = work.nodes.value if work.nodes is not None and len(lines) == 1 else 1
    words = {t.text for t in _tokens(value)}
    out: list[HostVars] = []
    for replica in range(min(work.replicas, MAX_REPLICAS)):
        for rank in range(nodes):
            name = f"{work.name}-{replica}" + (f"-{rank}" if nodes > 1 else "")
            made = _Vars()
            made.decided("vllm_pd_deployment", deployment(work, pools))
            made.decided("vllm_version", version(work, container))
            made.decided("vllm_host_gpu_count", _gpus(work, container))
            if len(lines) > 1:
                _items(made, [_engine(work, c, v, o, name) for c, (v, o) in lines])
                out.append(HostVars(name, made.values, made.origins, notes=made.notes))
                continue
            if work.nodes is not None:
                made.put("vllm_instance_id", f"{work.name}-{replica}", work.nodes.origin, work.nodes.note)
                if "--nnodes" not in words:
                    made.decided("vllm_nnodes", work.nodes)
                if "--node-rank" not in words:
                    made.put("vllm_node_rank", rank, work.nodes.origin, f"pod {rank} of the engine's {nodes}")
            engine = _engine(work, container, value, origins, name)
            made.values.update(engine.values)
            made.origins.update(engine.origins)
            made.notes.update(engine.notes)
            out.append(HostVars(name, made.values, made.origins, notes=made.notes))
    return out

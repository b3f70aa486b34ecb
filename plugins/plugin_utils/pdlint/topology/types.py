"""The topology: instances (one `vllm serve` engine on one host), engines, deployments."""
from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from ..finding import UNKNOWN, Origin


@dataclasses.dataclass(frozen=True)
class ModelFacts:
    """Attention shape of the model; None where unknown."""

    heads: int | None = None
    kv_heads: int | None = None
    mla: bool | None = None
    ssm: bool | None = None
    sliding_window: int | None = None
    layers: int | None = None  # hidden layers (vLLM's total_num_hidden_layers)
    layer_kinds: tuple[str, ...] | None = None  # each layer's kind: full, sliding, chunked, mamba, linear, none
    attention_chunk_size: int | None = None  # ModelConfig.attention_chunk_size (vllm/model/chunked.py); None: not set
    head_size: int | None = None  # ModelConfig.get_head_size (MLA: kv_lora_rank + qk_rope_head_dim)
    max_len: int | None = None  # the config's length (max_model_len's default, a lower bound)
    weight_bytes: int | None = None  # the checkpoint's weights, all ranks together
    weight_source: str = ""  # where weight_bytes comes from
    source: str = ""  # where the facts came from, in words (one source, or each fact's)
    where: tuple[tuple[str, str], ...] = ()  # (attribute, where it came from) for each known fact
    looked: tuple[str, ...] = ()  # every place asked, in order (the model-facts warning lists them)


@dataclasses.dataclass(frozen=True)
class Instance:
    """One engine process (or one node's share of a multi-node engine) on one host."""

    host: str
    index: int | None
    deployment: str | None
    role: str
    instance_id: str
    node: str
    version: str
    model: str | None = None
    revision: str | None = None  # --revision: which snapshot of a cached model gives its facts
    tp: int = 1
    pp: int = 1
    dp: int = 1
    dp_local: int = 1
    dp_start: int = 0
    nnodes: int = 1
    node_rank: int = 0
    port: int | None = 8000
    block_size: int | None = None
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    disable_hma: bool | None = None
    launcher: str = "vllm"  # vllm (vllm serve) or dynamo (python -m dynamo.vllm)
    connector: str | None = None
    kv_role: str | None = None
    kv_port: int | None = None
    engine_id: str | None = None
    module_path: str | None = None
    kv_buffer_device: str | None = None  # KVTransferConfig.kv_buffer_device, when set
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    kv_config_set: bool = False
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    facts: ModelFacts = ModelFacts()
    gpu_count: int | None = None
    gpu_type: str | None = None  # vllm_host_gpu_type as written (topology/gpus.py finds it)
    gpu_memory_gib: float | None = None  # vllm_host_gpu_memory_gib
    # the engine arguments the memory rules read (SIZING), as the inventory gives them: the vllm layer converts
    # each as the host's release parses it (human-readable ints, `auto`)
    sizing: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    skip: frozenset[str] = frozenset()
    origins: Mapping[str, Origin] = dataclasses.field(default_factory=dict)
    unresolved: frozenset[str] = frozenset()
    # What the vllm layer derived from this (immutable) instance (per_instance below), asked ~35 times per
    # instance by the rules: its effective connector, family, release. Not compared, copied or shown.
    memo: dict[str, Any] = dataclasses.field(default_factory=dict, init=False, compare=False, repr=False)
    # The same for what depends on the engine alone (per_body below): build() gives every instance of one body
    # (all but host, node, instance id, deployment and the origins' places) one dict, computed once.
    shared: dict[str, Any] = dataclasses.field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def label(self) -> str:
        """Host name, with the vllm_instances index when the host runs several."""
        return self.host if self.index is None else f"{self.host}[{self.index}]"

    def at(self, *fields: str) -> Origin:
        """Origin of the first of fields that was set in the inventory, else of the instance."""
        for name in (*fields, "pd_role", "pd_deployment"):
            found = self.origins.get(name)
            if found is not None:
                return found
        return UNKNOWN

    def knows(self, *fields: str) -> bool:
        """True when none of fields is unresolved (templated or vaulted); a dotted field (`env.CUDA_VISIBLE_DEVICES`)
        is unresolved too when what holds it is (`vllm_env` as a whole)."""
        if not self.unresolved:
            return True
        return not any(f in self.unresolved or ("." in f and f.split(".", 1)[0] in self.unresolved) for f in fields)

    def as_host(self, host: str) -> Instance:
        """This instance as another host with the same values builds it: its id and node default to the host."""
        own_id = "instance_id" in self.origins and "instance_id" not in self.unresolved
        own_node = "node" in self.origins and "node" not in self.unresolved
        # a copy of the fields as they are (dataclasses.replace runs __init__ again: ~10x the cost), with memos
        # of its own: per_instance functions may read the host; share_bodies gives it its body's shared dict
        label = host if self.index is None else f"{host}[{self.index}]"
        copy = object.__new__(Instance)
        copy.__dict__.update(self.__dict__, host=host, memo={}, shared={}, node=self.node if own_node else host,
                             instance_id=self.instance_id if own_id else label)
        return copy

    @property
    def gpus_per_node(self) -> int:
        """GPUs this instance uses on its node: TP x PP x local DP, split over nnodes."""
        return self.tp * self.pp * self.dp_local // max(self.nnodes, 1)


T = TypeVar("T")


def per_instance(fn: Callable[[Instance], T]) -> Callable[[Instance], T]:
    """fn(inst) computed once per instance and kept in inst.memo (fn must not return inst itself: a cycle)."""
    key = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def remembered(inst: Instance) -> T:
        memo = inst.memo
        if key not in memo:
            memo[key] = fn(inst)
        return memo[key]

    return remembered


def per_body(fn: Callable[[Instance], T]) -> Callable[[Instance], T]:
    """fn(inst) computed once per engine body: fn must not read host, node, instance_id or label (nor return inst).

    Instances that build() made from one host profile share inst.shared, so a thousand identical decode hosts
    ask the vllm layer once; any other instance has a dict of its own."""
    key = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def remembered(inst: Instance) -> T:
        memo = inst.shared
        if key not in memo:
            memo[key] = fn(inst)
        return memo[key]

    return remembered


# What an engine is besides where it runs and where its values are written: per_body functions read these.
_NOT_BODY = frozenset(("host", "instance_id", "node", "deployment", "origins", "memo", "shared"))
_BODY = tuple(f.name for f in dataclasses.fields(Instance) if f.name not in _NOT_BODY)


Bodies = dict[bytes, dict[str, Any]]  # a digest of each body's key (share_bodies) -> its shared memo


def share_bodies(instances: Iterable[Instance], copies: Iterable[tuple[Instance, Instance]] = (),
                 known: Bodies | None = None) -> Bodies:
    """Give instances of one body one shared memo. The key is the repr of every body field and of the names
    the origins cover (shape_of asks which are set): repr tells 1, 1.0 and True apart, and a repr that two equal
    values do not share (a set's order) only costs a second computation. copies: (copy, instance) pairs, each
    Instance.as_host of an instance among instances (not repeated in them). known: the bodies of an earlier
    build (the language server's last check): a body it had keeps its memo, so what per_body functions found
    for an engine an edit did not change is not asked again. Returns the bodies of these instances when known
    is given (keyed by a digest: the keys of 10,000 bodies are 14 MB), else {}."""
    bodies: dict[str, dict[str, Any]] = {}
    carried: Bodies = {}
    get = operator.attrgetter(*_BODY)
    if known is not None:  # only the language server carries bodies: a CLI run imports no hashing for it
        try:
            from _blake2 import blake2b
        except ImportError:  # a Python built without it
            from hashlib import blake2b
    for inst in instances:
        key = repr((get(inst), tuple(inst.origins)))
        memo = bodies.get(key)
        if memo is None:
            if known is None:
                memo = bodies[key] = inst.shared
            else:
                digest = blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).digest()
                memo = bodies[key] = carried[digest] = known.get(digest, inst.shared)
        if memo is not inst.shared:
            object.__setattr__(inst, "shared", memo)
    for inst, first in copies:  # as_host's copies: the body of the instance they copy, whose repr is theirs
        object.__setattr__(inst, "shared", first.shared)
    return carried


@dataclasses.dataclass(frozen=True)
class Engine:
    """Instances sharing an instance id in a deployment: one engine, maybe multi-node."""

    instances: tuple[Instance, ...]

    @functools.cached_property
    def lead(self) -> Instance:
        """The node-rank-0 instance, whose settings describe the engine."""
        return min(self.instances, key=lambda i: (i.node_rank, i.host, i.index or 0))

    @functools.cached_property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({i.host for i in self.instances}))


@dataclasses.dataclass(frozen=True)
class Deployment:
    name: str
    prefill: tuple[Engine, ...]
    decode: tuple[Engine, ...]  # no list of prefill x decode pairs: rules/pair/pairs.py groups them into Blocks


@dataclasses.dataclass(frozen=True)
class Undecided:
    """A host (or vllm_instances item) whose vllm_pd_role or vllm_pd_deployment is a template pdlint cannot render:
    it may be a side of a deployment, never guessed which (None: unknown)."""
    host: str
    deployment: str | None
    role: str | None

    def may_be(self, deployment: str, role: str) -> bool:
        return self.deployment in (None, deployment) and self.role in (None, role)


@dataclasses.dataclass(frozen=True)
class Topology:
    instances: tuple[Instance, ...]
    deployments: tuple[Deployment, ...]
    undecided: tuple[Undecided, ...] = ()
    # the bodies' memos by key, when build() was asked to carry them to a later build (Bodies)
    bodies_known: Bodies | None = dataclasses.field(default=None, compare=False, repr=False)

    def engines(self) -> Iterator[Engine]:
        for dep in self.deployments:
            yield from dep.prefill
            yield from dep.decode

    @functools.cached_property
    def rule_memo(self) -> dict[object, object]:
        """What rules computed for this topology and share with each other (the pair rules' blocks and verdicts,
        rules/pair/pairs.py memo_of): one per topology, never compared or shown."""
        return {}

    @functools.cached_property
    def bodies(self) -> tuple[list[int], dict[int, list[int]]]:
        """The first position in instances of each engine body (one shared memo, share_bodies), in order, and the
        positions of each body that has more than one instance, by its first: a rule that reads only an engine's
        own settings decides once per body (rules/base.py each_body). Lone bodies cost no list of their own."""
        first: dict[int, int] = {}
        more: dict[int, list[int]] = {}
        for position, inst in enumerate(self.instances):
            seen = first.setdefault(id(inst.shared), position)
            if seen != position:
                more.setdefault(seen, [seen]).append(position)
        return list(first.values()), more

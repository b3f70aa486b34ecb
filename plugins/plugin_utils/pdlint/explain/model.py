"""The explain model: what vLLM will build for each deployment, as frozen values every format renders."""
from __future__ import annotations

import dataclasses

from ..finding import Finding


@dataclasses.dataclass(frozen=True)
class Worker:
    """One GPU worker of an engine: its DP/PP/TP rank and the CUDA device it takes on its host."""

    host: str
    node: str
    dp: int
    pp: int
    tp: int
    gpu: str | None  # None: CUDA_VISIBLE_DEVICES lists fewer devices than the workers


@dataclasses.dataclass(frozen=True)
class Port:
    """One listener: the host, the port, what binds it, and the instance that binds it."""

    host: str
    port: int | str  # str: <vaulted>
    what: str
    instance: str


@dataclasses.dataclass(frozen=True)
class MemoryView:
    """One worker's memory as the memory rules size it (vllm/model/memory.py); None where pdlint cannot tell."""

    gpu_gib: float
    budget_gib: float  # gpu x gpu_memory_utilization
    utilization: float
    weights_gib: float | None  # per rank
    kv_bytes_per_token: int | None  # per rank
    kv_capacity_tokens: int | None
    max_model_len: int | None
    fits_max_model_len: int | None  # the longest max_model_len whose one sequence fits

    @property
    def text(self) -> str:
        def gib(value: float | None) -> str:
            return "?" if value is None else f"{value:.2f} GiB"

        def num(value: int | None) -> str:
            return "?" if value is None else f"{value:,}"

        return (f"GPU {gib(self.gpu_gib)} x {self.utilization} = budget {gib(self.budget_gib)}; weights "
                f"{gib(self.weights_gib)} per rank; KV {num(self.kv_bytes_per_token)} bytes per token per rank; KV "
                f"capacity {num(self.kv_capacity_tokens)} tokens; max_model_len {num(self.max_model_len)}, "
                f"{num(self.fits_max_model_len)} fits")


@dataclasses.dataclass(frozen=True)
class EngineView:
    """One engine (maybe over several hosts) as vLLM will start it."""

    name: str
    role: str
    release: str
    connector: str | None
    tp: int | str  # str: <vaulted> (so are any of these sizes, and release, name, connector)
    pp: int | str
    dp: int | str
    nnodes: int | str
    hosts: tuple[str, ...]
    workers: tuple[Worker, ...]
    ports: tuple[Port, ...]
    findings: tuple[Finding, ...]
    memory: MemoryView | None = None  # None: the GPU's memory is unknown (or vaulted)


@dataclasses.dataclass(frozen=True)
class Link:
    """KV moves between one decode TP rank and one prefill TP rank: which of the model's KV heads."""

    decode_rank: int
    prefill_rank: int
    heads: tuple[int, ...]  # empty: MLA (one latent, replicated) or KV heads unknown (see kv)
    kv: str  # "heads" | "mla" | "unknown"
    replicated: bool  # a head held by more ranks than one on the larger side (TP > K)

    @property
    def text(self) -> str:
        return head_text(self.heads, self.kv, self.replicated)


def head_text(heads: tuple[int, ...], kv: str, replicated: bool = False) -> str:
    """`heads 0-3`, `head 2 (replicated)`, `MLA latent (replicated)`, `unknown KV heads`."""
    if kv == "mla":
        return "MLA latent (replicated)"
    if kv == "unknown" or not heads:
        return "unknown KV heads" if kv == "unknown" else "none"
    runs: list[str] = []
    start = prev = heads[0]
    for h in [*heads[1:], None]:
        if h is not None and h == prev + 1:
            prev = h
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if h is not None:
            start = prev = h
    word = "head" if len(heads) == 1 else "heads"
    return f"{word} {','.join(runs)}" + (" (replicated)" if replicated else "")


VERDICTS = {"works": "works", "fails": "fails", "undetected": "vLLM will not detect"}


@dataclasses.dataclass(frozen=True)
class WhyLine:
    """One line of a pair's why-block: a fact (verdict "") or a verdict, with the vLLM source that decides it."""

    verdict: str  # "" (a fact) | "works" | "fails" | "undetected" (the pair cannot work and vLLM does not say so)
    text: str
    source: str  # vLLM file and function; "" for a fact read from the inventory

    @property
    def shown(self) -> str:
        """`fails: decode pipeline_parallel_size 2: ... [v1/nixl/base_worker.py ...]`."""
        head = f"{VERDICTS[self.verdict]}: " if self.verdict else ""
        return head + self.text + (f" [{self.source}]" if self.source else "")


@dataclasses.dataclass(frozen=True)
class Dimension:
    """Why a pair works or not in one dimension: "HMA", "model kind" or "PP/DP"."""

    name: str
    lines: tuple[WhyLine, ...]


@dataclasses.dataclass(frozen=True)
class PairView:
    """A prefill/decode engine pair: the rank map vLLM computes for it, or why it has none."""

    prefill: str
    decode: str
    connector: str | None
    release: str  # the release whose code maps the ranks (the reading or writing side's)
    mode: str  # "decode reads" | "prefill writes" | "" (no rank map)
    status: str  # "ok" | "rejected"
    links: tuple[Link, ...]
    acks: int | None  # what a prefill rank waits for per request before freeing its blocks
    acks_what: str | None  # singular: "completion notification", "MoRIIO release ack"
    note: str | None  # why links is empty, or a caveat
    findings: tuple[Finding, ...]
    why: tuple[Dimension, ...] = ()  # per dimension, why the pair works or not (explain/why.py); () when unjudged
    # A class of pairs (rules/pair/pairs.py Block: one verdict for all): every prefill and decode engine of it; prefill
    # and decode name the first of each, whose rank map and why-block stand for all. Empty: one pair.
    prefill_engines: tuple[str, ...] = ()
    decode_engines: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many engine pairs the view stands for."""
        return max(len(self.prefill_engines), 1) * max(len(self.decode_engines), 1)


def acks_text(pair: PairView) -> str:
    """`2 completion notifications`; empty when the connector has no such count."""
    if pair.acks is None:
        return ""
    return f"{pair.acks} {pair.acks_what}{'' if pair.acks == 1 else 's'}"


def rank_rows(pair: PairView, by: str = "decode") -> list[tuple[int, tuple[int, ...], str]]:
    """The rank map grouped by one side ("decode" or "prefill"): (rank, the other side's ranks, KV heads moved)."""
    groups: dict[int, list[Link]] = {}
    for link in pair.links:
        groups.setdefault(link.decode_rank if by == "decode" else link.prefill_rank, []).append(link)
    return [(rank, tuple(x.prefill_rank if by == "decode" else x.decode_rank for x in links),
             head_text(tuple(sorted({h for x in links for h in x.heads})), links[0].kv, links[0].replicated))
            for rank, links in sorted(groups.items())]


@dataclasses.dataclass(frozen=True)
class ModelView:
    """The model some engines of a deployment serve: the facts the rules used and where they came from."""

    model: str | None  # None: vllm_model unset; <vaulted> when vaulted (and then the source is masked too)
    engines: tuple[str, ...]
    heads: int | None
    kv_heads: int | None
    mla: bool | None
    ssm: bool | None
    sliding_window: int | None
    source: str  # empty: unknown (see looked)
    looked: tuple[str, ...]

    @property
    def facts(self) -> str:
        """`24 heads, 4 KV heads, MLA false, SSM ?, sliding window none` (? where unknown)."""
        def shown(value: object) -> str:
            return "?" if value is None else str(value).lower() if isinstance(value, bool) else str(value)

        window = "none" if self.sliding_window is None and self.source else shown(self.sliding_window)
        return (f"{shown(self.heads)} heads, {shown(self.kv_heads)} KV heads, MLA {shown(self.mla)}, "
                f"SSM {shown(self.ssm)}, sliding window {window}")

    @property
    def where(self) -> str:
        """`from SOURCE`, or where pdlint looked."""
        return f"from {self.source}" if self.source else f"unknown; looked in: {'; '.join(self.looked)}"

    @property
    def text(self) -> str:
        return f"{self.facts} ({self.where})"


@dataclasses.dataclass(frozen=True)
class DeploymentView:
    name: str
    releases: tuple[str, ...]
    engines: tuple[EngineView, ...]
    pairs: tuple[PairView, ...]
    findings: tuple[Finding, ...]  # those that concern the deployment, not one engine or pair
    models: tuple[ModelView, ...] = ()

    @property
    def ports(self) -> tuple[Port, ...]:
        return tuple(sorted((p for e in self.engines for p in e.ports),
                            key=lambda p: (p.host, isinstance(p.port, str), str(p.port).zfill(5), p.what)))


@dataclasses.dataclass(frozen=True)
class Explanation:
    deployments: tuple[DeploymentView, ...]
    findings: tuple[Finding, ...]  # those of no deployment (schema, load notes, ...)
    # where the config file's `variables:` mapping set a value: "p1: vllm_tensor_parallel_size mapped by ..."
    mapped: tuple[str, ...] = ()

    def all_findings(self) -> list[Finding]:
        """Every attached finding, once: the model drops none."""
        found = list(self.findings)
        for dep in self.deployments:
            found.extend(dep.findings)
            found.extend(f for e in dep.engines for f in e.findings)
            found.extend(f for p in dep.pairs for f in p.findings)
        return sorted(found)

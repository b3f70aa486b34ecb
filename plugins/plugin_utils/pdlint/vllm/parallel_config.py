"""What a release validates about one engine's DP and node shape (EngineArgs.create_engine_config, ParallelConfig).

Only the constraints pdlint's variables can break are here: TP, PP, DP, local DP, the DP start rank, nnodes and
the node rank. Each is a Timeline keyed by the releases whose source was read, citing file and function; a
release without the check (or without the flag) has None. tests/vllm/arguments/test_vllm_parallel_config.py lifts each
release's own checks and runs them over a grid of values against `violations`.
"""
from __future__ import annotations

import dataclasses
import functools

from ..topology.types import Instance
from .history import history
from .releases import Release, Timeline

_PC = "config.py ParallelConfig"  # 0.8.5 - 0.10.0; config/parallel.py from 0.10.1 on
_NEW = "config/parallel.py ParallelConfig"
_ARGS = "engine/arg_utils.py EngineArgs.create_engine_config"

DP_LOCAL_MAX: Timeline[bool] = history("parallel[dp-local]", Timeline(
    "--data-parallel-size-local <= --data-parallel-size",
    ("0.8.5", False, "engine/arg_utils.py EngineArgs", "no --data-parallel-size-local yet"),
    ("0.9.0", True, f"{_PC}.__post_init__", "ValueError: data_parallel_size_local must be <= data_parallel_size"),
    ("0.10.1", True, f"{_NEW}.__post_init__", "the same ValueError"),
    ("0.11.1", True, f"{_NEW}._validate_parallel_config", "the same ValueError"),
))
DP_RANK_RANGE: Timeline[bool] = history("parallel[dp-rank]", Timeline(
    "0 <= data_parallel_rank < --data-parallel-size",
    ("0.8.5", False, f"{_PC}.__post_init__", "no range check of data_parallel_rank"),
    ("0.9.2", True, f"{_PC}.__post_init__",
     "with DP > 1 or local DP 0: ValueError: data_parallel_rank must be in the range [0, DP)"),
    ("0.10.1", True, f"{_NEW}.__post_init__", "the same ValueError"),
))
START_RANK: Timeline[str] = history("parallel[dp-rank]", Timeline(
    "--data-parallel-start-rank as ParallelConfig.data_parallel_rank",
    ("0.8.5", "", "entrypoints/cli/serve.py run_headless", "the start rank only numbers headless engines"),
    ("0.10.0", "or", _ARGS, ("data_parallel_rank = start rank or 0 (or the rank inferred from the node rank, "
                             "0.11.1 on), when --data-parallel-size-local is given")),
    ("0.28.0", "given", _ARGS, "data_parallel_rank = the start rank when given (0 included), else inferred"),
))
ENGINE_RANKS: Timeline[bool] = history("parallel[dp-rank]", Timeline(
    "start rank + local DP <= --data-parallel-size",
    ("0.8.5", False, "v1/engine/core.py", "not read for 0.8.5"),
    ("0.9.0", True, "v1/engine/core.py DPEngineCoreProc._init_data_parallel",
     "each local engine core asserts 0 <= local_dp_rank <= dp_rank < dp_size (dp_rank = start rank + i)"),
))
NNODES: Timeline[bool] = history("parallel[nnodes]", history("parallel[node-rank]", Timeline(
    "--nnodes / --node-rank",
    ("0.8.5", False, "engine/arg_utils.py EngineArgs", "no --nnodes / --node-rank (multi-node needs Ray)"),
    ("0.11.1", True, _ARGS, "assert world_size % nnodes == 0 and node_rank < nnodes"),
    ("0.27.0", True, _ARGS, "ValueError: --nnodes must evenly divide the world size; 0 <= --node-rank < nnodes"),
)))
NNODES_BACKEND: Timeline[bool] = history("parallel[nnodes]", Timeline(
    "--nnodes > 1 needs the mp executor (TP x PP > 1)",
    ("0.8.5", False, _NEW, "no --nnodes"),
    ("0.11.1", True, f"{_NEW}.__post_init__",
     "TP x PP = 1 picks the uni executor, and ValueError: nnodes > 1 can only be set when the backend is mp"),
    ("0.12.0", False, f"{_NEW}.__post_init__", "uni is allowed with nnodes > 1"),
))
NNODES_WITHIN_DP: Timeline[bool] = history("parallel[nnodes]", Timeline(
    "nnodes % (DP // local DP) == 0",
    ("0.8.5", False, _NEW, "no ParallelConfig.nnodes_within_dp"),
    ("0.31.0", True, f"{_NEW}.nnodes_within_dp",
     "ValueError: nnodes must be divisible by the number of data-parallel node groups"),
))


@dataclasses.dataclass(frozen=True)
class Shape:
    """The engine-shape flags of one `vllm serve` (None: the flag is not given)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    dp_local: int | None = None
    dp_start: int | None = None
    nnodes: int = 1
    node_rank: int = 0


def shape_of(inst: Instance) -> Shape:
    """The flags the instance's `vllm serve` gets (None where the inventory leaves vLLM its default)."""
    return Shape(tp=inst.tp, pp=inst.pp, dp=inst.dp,
                 dp_local=inst.dp_local if "data_parallel_size_local" in inst.origins else None,
                 dp_start=inst.dp_start if "data_parallel_start_rank" in inst.origins else None,
                 nnodes=inst.nnodes, node_rank=inst.node_rank)


def dp_ranks(release: Release, inst: Instance) -> range:
    """The DP ranks inst's `vllm serve` runs, as release computes them (EngineArgs.create_engine_config)."""
    start = dp_rank(release, shape_of(inst))
    return range(start, start + local_dp(release, shape_of(inst)))


@dataclasses.dataclass(frozen=True)
class Violation:
    rule: str  # parallel[dp-local] | parallel[dp-rank] | parallel[nnodes] | parallel[node-rank]
    fields: tuple[str, ...]  # contract variables that set it (the first set one is the location)
    message: str
    source: str


def local_dp(release: Release, shape: Shape) -> int:
    """The local DP vLLM uses: the flag, else inferred from nnodes (0.11.1 on), else DP (create_engine_config)."""
    if shape.dp_local is not None:
        return shape.dp_local
    if NNODES.at(release) and shape.nnodes > 1:
        return max(shape.dp * shape.tp * shape.pp // shape.nnodes // (shape.tp * shape.pp), 1)
    return shape.dp


def dp_rank(release: Release, shape: Shape) -> int:
    """ParallelConfig.data_parallel_rank: the start rank where create_engine_config takes it, else from the node rank.

    The start rank counts only with --data-parallel-size-local (which 0.11.1 on infers itself when nnodes > 1).
    """
    nodes = NNODES.at(release) and shape.nnodes > 1
    inferred = 0
    if nodes:
        world = shape.dp * shape.tp * shape.pp
        inferred = shape.node_rank * (world // shape.nnodes) // (shape.tp * shape.pp)
    how = START_RANK.at(release)
    if how and (shape.dp_local is not None or nodes):
        if how == "given" and shape.dp_start is not None:
            return shape.dp_start
        return (shape.dp_start or inferred) if how == "or" else inferred
    if nodes:
        return inferred
    return 0


def violations(release: Release, shape: Shape) -> tuple[Violation, ...]:
    """Every check of release that shape fails at startup (empty: the engine starts); asked once per distinct
    (release, shape), as a fleet repeats a few shapes over thousands of engines and four rules ask each."""
    return _violations(release, shape)


@functools.lru_cache(maxsize=4096)
def _violations(release: Release, shape: Shape) -> tuple[Violation, ...]:
    return tuple(_checked(release, shape))


def _checked(release: Release, shape: Shape) -> list[Violation]:
    found = _nodes(release, shape)
    if found:  # the node checks run first in create_engine_config; the DP rank below depends on them
        return found
    local = local_dp(release, shape)
    if not DP_LOCAL_MAX.at(release) and shape.dp_local is not None:
        found.append(Violation("parallel[dp-local]", ("data_parallel_size_local",),
                               f"vLLM {release} has no --data-parallel-size-local (added in 0.9.0)",
                               DP_LOCAL_MAX.step(release).source))
        return found
    if DP_LOCAL_MAX.at(release) and local > shape.dp:
        found.append(Violation("parallel[dp-local]", ("data_parallel_size_local", "data_parallel_size"),
                               f"local DP {local} is more than DP {shape.dp}", DP_LOCAL_MAX.step(release).source))
        return found  # the ranks below are meaningless then
    rank = dp_rank(release, shape)
    if DP_RANK_RANGE.at(release) and (shape.dp > 1 or local == 0) and not 0 <= rank < shape.dp:
        found.append(Violation("parallel[dp-rank]", ("data_parallel_start_rank", "data_parallel_size"),
                               f"DP start rank {rank} is outside the engine's DP ranks 0..{shape.dp - 1}",
                               DP_RANK_RANGE.step(release).source))
    elif ENGINE_RANKS.at(release) and shape.dp > 1 and rank + local > shape.dp:
        found.append(Violation(
            "parallel[dp-rank]", ("data_parallel_start_rank", "data_parallel_size_local", "data_parallel_size"),
            f"DP ranks {rank}..{rank + local - 1} (start rank {rank} + local DP {local}) run past the engine's DP "
            f"ranks 0..{shape.dp - 1}", ENGINE_RANKS.step(release).source))
    return found


def _nodes(release: Release, shape: Shape) -> list[Violation]:
    source = NNODES.step(release).source
    if not NNODES.at(release):
        if shape.nnodes > 1 or shape.node_rank:
            return [Violation("parallel[nnodes]", ("nnodes", "node_rank"),
                              f"vLLM {release} has no --nnodes / --node-rank (added in 0.11.1)",
                              source)]
        return []
    if shape.nnodes <= 1:
        return []
    world = shape.dp * shape.tp * shape.pp
    if world % shape.nnodes:
        return [Violation("parallel[nnodes]", ("nnodes", "tensor_parallel_size", "pipeline_parallel_size"),
                          f"nnodes {shape.nnodes} does not divide the world size DP {shape.dp} x TP {shape.tp} "
                          f"x PP {shape.pp} = {world}", source)]
    if not 0 <= shape.node_rank < shape.nnodes:
        return [Violation("parallel[node-rank]", ("node_rank", "nnodes"),
                          f"node rank {shape.node_rank} is not below nnodes {shape.nnodes}", source)]
    if NNODES_BACKEND.at(release) and shape.tp * shape.pp == 1:
        return [Violation("parallel[nnodes]", ("nnodes", "tensor_parallel_size"),
                          f"nnodes {shape.nnodes} with TP x PP = 1: vLLM {release} picks the uni executor, which "
                          "refuses nnodes > 1", NNODES_BACKEND.step(release).source)]
    local = local_dp(release, shape)
    groups = shape.dp // local if local else 0
    if NNODES_WITHIN_DP.at(release) and groups and shape.nnodes % groups:
        return [Violation("parallel[nnodes]", ("nnodes", "data_parallel_size_local", "data_parallel_size"),
                          f"nnodes {shape.nnodes} is not a multiple of DP / local DP = {groups} node groups",
                          NNODES_WITHIN_DP.step(release).source)]
    return []

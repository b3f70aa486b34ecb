"""Differential: what each release's EngineArgs and ParallelConfig reject about an engine's DP / node shape.

For every known release, the release's own code is run over a grid of TP, PP, DP, local DP, DP start rank,
nnodes and node rank, and must agree with pdlint.vllm.parallel_config.violations:
- `engine/arg_utils.py EngineArgs.create_engine_config`: the statements that resolve the DP rank and local DP
  (from its first DP / nnodes statement to the `if data_parallel_external_lb:` chain), executed as they are;
  an assert or raise there rejects the shape. A flag EngineArgs has no field for is rejected too (argparse).
- `ParallelConfig` (`config.py`, later `config/parallel.py`): every `raise` / `assert` of `__post_init__` and
  `_validate_parallel_config` whose test and enclosing tests read only the shape (plus defaults of a plain
  `vllm serve`), evaluated on the resolved values; and `nnodes_within_dp`, lifted whole, where nnodes > 1.
- `v1/engine/core.py DPEngineCoreProc._init_data_parallel`'s rank assert, in the releases that have it.
"""
from __future__ import annotations

import ast
import itertools
import types
from pathlib import Path
from typing import Any

import pytest
from vllm_source import lift, roots

from pdlint.vllm import parallel_config as pc
from pdlint.vllm.releases import KNOWN, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

ROOTS = roots(KNOWN)
SHAPE = {"data_parallel_size", "data_parallel_size_local", "data_parallel_rank", "nnodes", "node_rank",
         "tensor_parallel_size", "pipeline_parallel_size", "prefill_context_parallel_size", "world_size"}
# A plain `vllm serve` (no Ray, no external LB, no EPLB): what the lifted code reads besides the shape.
DEFAULTS = {"data_parallel_external_lb": False, "data_parallel_hybrid_lb": False, "data_parallel_backend": "mp",
            "enable_fault_tolerance": False, "enable_elastic_ep": False, "enable_eplb": False,
            "distributed_executor_backend": None, "prefill_context_parallel_size": 1,
            "decode_context_parallel_size": 1, "is_moe_model": None}


class _Quiet:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


def _config_file(root: Path) -> str:
    return "vllm/config/parallel.py" if (root / "vllm/config/parallel.py").exists() else "vllm/config.py"


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)


def _fields(cls: ast.ClassDef) -> set[str]:
    return {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def _arg_block(root: Path) -> tuple[types.CodeType, set[str]]:
    """create_engine_config's DP-resolution statements compiled as one function body, and EngineArgs' fields."""
    tree = ast.parse((root / "vllm/engine/arg_utils.py").read_text(encoding="utf-8"))
    cls = _class(tree, "EngineArgs")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "create_engine_config")
    keys = ("data_parallel_hybrid_lb", "inferred_data_parallel_rank", "data_parallel_external_lb",
            "data_parallel_size_local", "nnodes")
    start = next((i for i, st in enumerate(fn.body) if any(k in ast.unparse(st).split("\n")[0] for k in keys)),
                 None)
    if start is None:  # 0.8.5: no DP resolution at all
        return compile("", "<empty>", "exec"), _fields(cls)
    end = next((i for i, st in enumerate(fn.body) if isinstance(st, ast.If) and isinstance(st.test, ast.Name)
                and st.test.id == "data_parallel_external_lb"), start)
    body = fn.body[start:end + 1]
    module = ast.Module(body=body, type_ignores=[])
    return compile(module, f"{root.name}/arg_utils.py", "exec"), _fields(cls)


def _guarded_checks(root: Path) -> list[tuple[list[tuple[ast.expr, bool]], ast.stmt]]:
    """(enclosing tests with the branch taken, the raising If or Assert) of ParallelConfig's validators."""
    tree = ast.parse((root / _config_file(root)).read_text(encoding="utf-8"))
    cls = _class(tree, "ParallelConfig")
    found: list[tuple[list[tuple[ast.expr, bool]], ast.stmt]] = []

    def walk(stmts: list[ast.stmt], guards: list[tuple[ast.expr, bool]]) -> None:
        for st in stmts:
            if isinstance(st, ast.Assert):
                found.append((guards, st))
            elif isinstance(st, ast.If):
                if any(isinstance(b, ast.Raise) for b in st.body):
                    found.append((guards, st))
                walk(st.body, [*guards, (st.test, True)])
                walk(st.orelse, [*guards, (st.test, False)])

    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in ("__post_init__", "_validate_parallel_config"):
            walk(fn.body, [])
    return found


def _reads_only_shape(node: ast.AST) -> bool:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return names <= {"self"} and attrs <= SHAPE | set(DEFAULTS)


def _evaluate(expr: ast.expr, ns: dict[str, Any]) -> Any:
    return eval(compile(ast.Expression(expr), "<lifted>", "eval"), ns)  # noqa: S307 - vLLM's own expression


class Release_:  # one release's lifted code
    def __init__(self, release: Release) -> None:
        root = ROOTS[release]
        self.release = release
        self.block, self.arg_fields = _arg_block(root)
        checks = [(g, c) for g, c in _guarded_checks(root)
                  if all(_reads_only_shape(t) for t, _ in g) and _reads_only_shape(c.test)]
        self.checks = checks
        cfg = ast.parse((root / _config_file(root)).read_text(encoding="utf-8"))
        methods = {n.name for n in _class(cfg, "ParallelConfig").body if isinstance(n, ast.FunctionDef)}
        self.within = (lift(root, _config_file(root), {"nnodes_within_dp"}, "ParallelConfig")["nnodes_within_dp"]
                       if "nnodes_within_dp" in methods else None)
        core = root / "vllm/v1/engine/core.py"
        self.core_assert = None
        if core.exists():
            tree = ast.parse(core.read_text(encoding="utf-8"))
            self.core_assert = next((n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                                     and f.name == "_init_data_parallel" for n in ast.walk(f)
                                     if isinstance(n, ast.Assert) and "dp_rank < dp_size" in ast.unparse(n.test)), None)

    def rejects(self, shape: pc.Shape) -> bool:
        # (--data-parallel-start-rank was a serve.py flag before it was an EngineArgs field: not checked here.)
        given = {"data_parallel_size_local": shape.dp_local,
                 "nnodes": shape.nnodes if shape.nnodes != 1 else None,
                 "node_rank": shape.node_rank if shape.node_rank else None}
        if any(v is not None and k not in self.arg_fields for k, v in given.items()):
            return True  # argparse: unrecognized arguments
        args = types.SimpleNamespace(
            tensor_parallel_size=shape.tp, pipeline_parallel_size=shape.pp, data_parallel_size=shape.dp,
            data_parallel_size_local=shape.dp_local, data_parallel_start_rank=shape.dp_start,
            data_parallel_rank=None, nnodes=shape.nnodes, node_rank=shape.node_rank, **DEFAULTS)
        ns: dict[str, Any] = {"self": args, "headless": False, "logger": _Quiet(),
                              "envs": types.SimpleNamespace(VLLM_RAY_DP_PACK_STRATEGY="strict"),
                              "model_config": types.SimpleNamespace(is_moe=True)}
        try:
            exec(self.block, ns)  # noqa: S102 - vLLM's own statements
        except (AssertionError, ValueError):
            return True
        local = ns.get("data_parallel_size_local", shape.dp if shape.dp_local is None else shape.dp_local)
        config = {**DEFAULTS, "tensor_parallel_size": shape.tp, "pipeline_parallel_size": shape.pp,
                  "data_parallel_size": shape.dp, "data_parallel_size_local": local,
                  "data_parallel_rank": args.data_parallel_rank or 0, "nnodes": shape.nnodes,
                  "node_rank": shape.node_rank, "world_size": shape.tp * shape.pp,
                  # what __post_init__ picks on a CUDA host: mp for TP x PP > 1 (or nnodes > 1), else uni
                  "distributed_executor_backend": "mp" if shape.tp * shape.pp > 1 else "uni"}
        me = types.SimpleNamespace(**config)
        for guards, check in self.checks:
            env = {"self": me}
            if all(bool(_evaluate(t, env)) is taken for t, taken in guards):
                if isinstance(check, ast.Assert) and not _evaluate(check.test, env):
                    return True
                if isinstance(check, ast.If) and _evaluate(check.test, env):
                    return True
        if self.within is not None and shape.nnodes > 1 and local:
            try:
                self.within(me)
            except ValueError:
                return True
        if self.core_assert is not None and shape.dp > 1:
            for i in range(local):
                env = {"local_dp_rank": i, "dp_rank": config["data_parallel_rank"] + i, "dp_size": shape.dp}
                if not _evaluate(self.core_assert.test, env):
                    return True
        return False


GRID = [pc.Shape(tp, pp, dp, local, start, nnodes, rank)
        for tp, pp, dp, local, start, nnodes, rank in itertools.product(
            (1, 2, 3), (1, 2), (1, 2, 4), (None, 0, 1, 2, 3, 5), (None, 0, 1, 3, 4), (1, 2, 4), (0, 1, 2, 4))
        if not (nnodes == 1 and rank)]  # a node rank without nnodes: covered by the nnodes cases


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_pdlint_agrees_with_the_releases_parallel_checks(release: Release) -> None:
    lifted = Release_(release)
    assert lifted.checks or release < pc.DP_LOCAL_MAX.steps[1].since, "no ParallelConfig check was lifted"
    def pdlint(shape: pc.Shape) -> bool:
        found = pc.violations(release, shape)
        if lifted.core_assert is None:  # v1/engine/core.py not unpacked for this release: compare the rest
            found = [v for v in found if not v.source.startswith("v1/engine/core.py")]
        return bool(found)

    wrong = [(shape, pdlint(shape)) for shape in GRID if pdlint(shape) != lifted.rejects(shape)]
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. (shape, pdlint rejects) {wrong[:3]}"

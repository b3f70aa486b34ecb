"""NIXL with pipeline parallelism against each release's own NixlBaseConnectorWorker.__init__.

The statements of __init__ that decide PP (`self.pp_size`, `self._is_hma_required`, `self._has_mamba` and every
`if ... self.pp_size > 1` block, v1/nixl/base_worker.py 0.24.0+) are lifted from each release and run on a fake
worker whose layer specs follow pdlint's model table (a sliding window adds a SlidingWindowSpec layer, a hybrid
SSM model a MambaSpec layer), with the class's own `_supports_pp_hma`. vLLM raising NotImplementedError on a
side must be exactly what pdlint reports as a NotImplementedError for that side, in every release, and every
change a hint offers must pass the same lifted code.
"""
from __future__ import annotations

import ast
import functools
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import vllm_source

from pdlint.hostvars import HostVars
from pdlint.topology.build import build
from pdlint.vllm.connectors import families
from pdlint.vllm.connectors import pair as vpair
from pdlint.vllm.connectors.registry import registered
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if r >= R("0.9.0")]  # 0.8.5 has no NIXL
ROOTS = vllm_source.roots(RELEASES)
NIXL_DIR = f"{vllm_source.KV}/v1/nixl"
TABLE = json.loads((Path(vpair.__file__).parents[2] / "topology/data/model-attention-facts.json").read_text())
MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "openai/gpt-oss-20b", "google/gemma-3-4b-it", "Qwen/Qwen3.5-35B-A3B",
          "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"]
WORKER_CLASS = {"pull": ("pull_worker.py", "NixlPullConnectorWorker"), "push": ("push_worker.py",
                                                                             "NixlPushConnectorWorker")}


class Fake:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


class FullAttentionSpec:
    pass


class SlidingWindowSpec:  # not a FullAttentionSpec subclass in any release
    pass


class MambaSpec:
    pass


def _class(root: Path, file: str, name: str) -> ast.ClassDef | None:
    path = root / NIXL_DIR / file
    if not path.exists():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _class_attr(cls: ast.ClassDef | None, name: str) -> Any:
    for node in cls.body if cls else ():
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                return ast.literal_eval(node.value)
    return None


@functools.cache
def _pp_check(root: Path) -> Any:
    """fn(self, vllm_config, kv_cache_config): the PP statements of the release's __init__ (None: no PP check)."""
    base = _class(root, "base_worker.py", "NixlBaseConnectorWorker")
    if base is None:
        return None
    init = next(n for n in base.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    keep = []
    for stmt in init.body:
        text = ast.unparse(stmt)
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) in (
                "self.pp_size", "self._is_hma_required", "self._has_mamba") or isinstance(stmt, ast.If) and (
                "self.pp_size > 1" in ast.unparse(stmt.test) or "self.pp_size > 1" in text and "NotImplementedError" in text):
            keep.append(stmt)
    if not any(isinstance(s, ast.If) for s in keep):
        return None
    fn = ast.parse("def check(self, vllm_config, kv_cache_config):\n    pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = keep
    namespace = {"FullAttentionSpec": FullAttentionSpec, "MambaSpec": MambaSpec}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), str(root), "exec"),  # noqa: S102
         namespace)
    return namespace["check"]


@functools.cache
def _supports_pp_hma(root: Path, mode: str) -> bool:
    own = _class_attr(_class(root, *WORKER_CLASS[mode]), "_supports_pp_hma")
    base = _class_attr(_class(root, "base_worker.py", "NixlBaseConnectorWorker"), "_supports_pp_hma")
    return bool(own if own is not None else base)


def _specs(model: str) -> list[Any]:
    entry = TABLE[model]
    specs: list[Any] = [FullAttentionSpec()]
    if entry.get("sliding_window"):
        specs.append(SlidingWindowSpec())
    if entry.get("hybrid_ssm"):
        specs.append(MambaSpec())
    return specs


def vllm_raises(release: Release, model: str, pp: int, kv_role: str, mode: str, disable_hma: bool) -> bool:
    """The release's own __init__ PP statements raise NotImplementedError for this worker."""
    check = _pp_check(ROOTS[release])
    if check is None:
        return False
    specs = _specs(model)
    groups = [Fake(kv_cache_spec=s, layer_names=[f"layer.{i}"]) for i, s in enumerate(specs)]
    worker = Fake(_layer_specs={f"layer.{i}": s for i, s in enumerate(specs)},
                  _supports_pp_hma=_supports_pp_hma(ROOTS[release], mode))
    config = Fake(parallel_config=Fake(pipeline_parallel_size=pp), kv_transfer_config=Fake(kv_role=kv_role),
                  scheduler_config=Fake(disable_hybrid_kv_cache_manager=disable_hma))
    try:
        check(worker, config, Fake(kv_cache_groups=groups, transfer_groups=groups,
                                   has_mamba_layers=any(isinstance(s, MambaSpec) for s in specs)))
    except NotImplementedError:
        return True
    return False


def _sides(release: Release, model: str, connector: str, p_pp: int, d_pp: int, d_role: str,
           disable_hma: bool) -> tuple[vpair.Side, vpair.Side]:
    common = {"vllm_pd_deployment": "x", "vllm_version": release.text, "vllm_model": model,
              "vllm_disable_hybrid_kv_cache_manager": disable_hma}
    p = HostVars("p", {**common, "vllm_pd_role": "prefill", "vllm_pipeline_parallel_size": p_pp,
                       "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": "kv_producer"}})
    d = HostVars("d", {**common, "vllm_pd_role": "decode", "vllm_pipeline_parallel_size": d_pp,
                       "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": d_role}})
    topo, _ = build([p, d])
    by_role = {i.role: i for i in topo.instances}
    return vpair.Side.of(by_role["prefill"]), vpair.Side.of(by_role["decode"])


def _pp_problems(sp: vpair.Side, sd: vpair.Side) -> dict[str, vpair.Problem]:
    return {x.side: x for x in families.problems(sp, sd) if "pipeline_parallel_size" in x.fields}


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_pp_with_hybrid_layouts(release: Release) -> None:
    connectors = ["NixlConnector", *(["NixlPushConnector"] if registered("NixlPushConnector", release) else [])]
    wrong = []
    for model, connector, p_pp, d_pp, d_role, disable in itertools.product(
            MODELS, connectors, (1, 2, 4), (1, 2), ("kv_consumer", "kv_both"), (False, True)):
        sp, sd = _sides(release, model, connector, p_pp, d_pp, d_role, disable)  # pdlint reads the inventory
        mode = "push" if sp.connector == "NixlPushConnector" else "pull"
        found = _pp_problems(sp, sd)
        for side, pp, role in (("prefill", p_pp, "kv_producer"), ("decode", d_pp, d_role)):
            raises = vllm_raises(release, model, pp, role, mode, disable)
            says = side in found and "NotImplementedError" in found[side].message
            if raises != says:
                wrong.append((model, connector, side, pp, role, disable, raises, found.get(side)))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:3]}"


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.24.0")], ids=str)
def test_pp_hints_offer_only_what_passes(release: Release) -> None:
    """Every alternative a PP hint offers makes the release's own __init__ statements pass on that side."""
    offered = 0
    for model, p_pp in itertools.product(MODELS, (2, 4)):
        sp, sd = _sides(release, model, "NixlConnector", p_pp, 1, "kv_consumer", False)
        problem = _pp_problems(sp, sd).get("prefill")
        if problem is None or problem.hint is None:
            continue
        assert problem.hint.startswith("use pipeline_parallel_size 1"), problem.hint
        push = "NixlPushConnector" in problem.hint
        off = "vllm_disable_hybrid_kv_cache_manager: true" in problem.hint
        for fix in problem.hint.split(", or ")[1:]:
            offered += 1
            mode = "push" if "NixlPushConnector" in fix else "pull"
            disable = "vllm_disable_hybrid_kv_cache_manager: true" in fix
            assert not vllm_raises(release, model, p_pp, "kv_producer", mode, disable), (model, fix)
        if TABLE[model].get("hybrid_ssm"):
            assert not off, problem.hint  # Mamba layers need HMA: turning it off is no fix
        if release >= R("0.31.0") and TABLE[model].get("sliding_window"):
            assert push and off, problem.hint
    if release >= R("0.26.0"):
        assert offered, release


def test_the_issue_case_is_an_error() -> None:
    """gpt-oss-20b, prefill PP 2, NIXL pull, 0.32/0.33: pull + HMA + sliding-window layers raise."""
    for version in ("0.32.0", "0.33.0"):
        sp, sd = _sides(R(version), "openai/gpt-oss-20b", "NixlConnector", 2, 1, "kv_consumer", False)
        assert "NotImplementedError" in _pp_problems(sp, sd)["prefill"].message
        sp, sd = _sides(R(version), "openai/gpt-oss-20b", "NixlPushConnector", 2, 1, "kv_consumer", False)
        assert "prefill" not in _pp_problems(sp, sd)

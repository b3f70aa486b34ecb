"""NIXL with pipeline parallelism on real layer mixes against each release's own code (vllm/connectors/nixl/pp.py,
vllm/model/pp_stages.py).

Each side's PP stages hold the layers the release's own get_pp_indices (vllm/distributed/utils.py, lifted, with
VLLM_PP_LAYER_PARTITION) gives it, of the model's kinds in pdlint's table (test_vllm_model_layers holds those to
each release's get_num_layers_by_block_type); a stage registers one region per K/V tensor of each KV-holding layer
(MLA: one, else two). Then, lifted from every NIXL release:
- the `if xfer_handshake_metadata:` block of EngineCore.__init__ (v1/engine/core.py) merges the workers' replies
  in rank order (PP-major, TP-minor: parallel_state's reshape(..., pp, tp)); up to 0.22 a reply is
  {tp_rank: metadata}, so one stage's metadata is what the prefill serves; 0.23.0+ calls
  KVConnectorBase_V1.set_xfer_handshake_metadata_pp_aware, lifted too, unless NixlConnector overrides it;
- the decode asks (pp_rank, tp_rank) for pp_rank in range(pp_size) where the pull scheduler sends pp_size
  (0.29.0+), else the one stage it gets;
- the layer-count assert of _validate_remote_agent_handshake is evaluated on each decode stage's regions against
  each asked prefill stage's.
The grid: five models (full attention 32 layers, MLA 61, 94 and 27 layers: uneven splits; gpt-oss with HMA off,
its sliding layers made full) x PP 1-4 per side (+ an uneven VLLM_PP_LAYER_PARTITION on a PP-2 side) x TP 1, 2 x
DP 1, 2 x HMA unset / on / off x pull (and push from 0.24.0). pdlint must report the ValueError at engine start
and the handshake's AssertionError exactly where these raise.
"""
from __future__ import annotations

import ast
import functools
import itertools
import json
import types
from pathlib import Path
from typing import Any

import pytest
import vllm_source

from pdlint.engine import core as engine
from pdlint.hostvars import HostVars
from pdlint.vllm.connectors import pair as vpair
from pdlint.vllm.connectors import registry
from pdlint.vllm.model import layers as model_layers
from pdlint.vllm.model import pp_stages
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if registry.registered("NixlConnector", r)]
ROOTS = vllm_source.roots(RELEASES)
KV = vllm_source.KV
TABLE = json.loads((Path(vpair.__file__).parents[2] / "topology/data/model-attention-facts.json").read_text())
# model -> the vllm_disable_hybrid_kv_cache_manager values tried (None: unset)
MODELS = {"meta-llama/Llama-3.1-8B-Instruct": (None, False, True), "deepseek-ai/DeepSeek-V3": (None, True),
          "meta-llama/Llama-3.2-3B": (None,),
          "Qwen/Qwen3-235B-A22B": (None,), "deepseek-ai/DeepSeek-V2-Lite-Chat": (None,),
          "openai/gpt-oss-20b": (True,)}
_WORKERS = ("v1/nixl_connector.py", "v1/nixl/worker.py", "v1/nixl/base_worker.py")
_CONNECTORS = ("v1/nixl_connector.py", "v1/nixl/connector.py")


def _kinds(model: str) -> tuple[str, ...]:
    kinds = model_layers.from_run_length(TABLE[model]["layer_kinds"])
    assert kinds is not None
    return kinds


def _partition(model: str) -> str:
    """An uneven two-stage VLLM_PP_LAYER_PARTITION for model."""
    n = len(_kinds(model))
    return f"{n // 2 + 2},{n - n // 2 - 2}"


@functools.cache
def _pp_indices(release: Release, partition: str | None) -> Any:
    envs = types.SimpleNamespace(VLLM_PP_LAYER_PARTITION=partition)
    logger = types.SimpleNamespace(info=lambda *a, **k: None)
    return vllm_source.lift(ROOTS[release], "vllm/distributed/utils.py", {"get_pp_indices"},
                            env={"envs": envs, "logger": logger})["get_pp_indices"]


def stage_regions(release: Release, model: str, pp: int, partition: str | None) -> list[int]:
    """The regions each stage registers: the release's own stage split of the model's KV-holding layers."""
    kinds, per_layer = _kinds(model), 1 if TABLE[model].get("mla") else 2
    spans = [_pp_indices(release, partition)(len(kinds), rank, pp) for rank in range(pp)]
    return [per_layer * sum(1 for k in kinds[start:end] if k != "none") for start, end in spans]


@functools.cache
def _pp_aware(release: Release) -> Any:
    """The base class's set_xfer_handshake_metadata_pp_aware, or None (absent, or NixlConnector overrides it)."""
    root = ROOTS[release]
    base = f"{KV}/v1/base.py"
    if not vllm_source.has(root, base, "set_xfer_handshake_metadata_pp_aware", "KVConnectorBase_V1"):
        return None
    if any(vllm_source.has(root, f"{KV}/{rel}", "set_xfer_handshake_metadata_pp_aware", cls)
           for rel in _CONNECTORS for cls in ("NixlConnector", "NixlBaseConnector")):
        return None
    lifted = vllm_source.lift(root, base, {"set_xfer_handshake_metadata_pp_aware"}, "KVConnectorBase_V1")
    return lifted["set_xfer_handshake_metadata_pp_aware"]


@functools.cache
def vllm_rejects_at_start(release: Release, pp: int, tp: int) -> bool:
    fn = _pp_aware(release)
    if fn is None:
        return False
    me = type("NixlConnector", (), {"set_xfer_handshake_metadata": lambda self, m: None})()
    try:
        fn(me, {(p, t): object() for p in range(pp) for t in range(tp)})
    except ValueError:
        return True
    return False


@functools.cache
def _merge(release: Release) -> Any:
    """fn(replies) -> the metadata dict the prefill serves: EngineCore.__init__'s own `if xfer_handshake_metadata:`."""
    tree = ast.parse((ROOTS[release] / "vllm/v1/engine/core.py").read_text(encoding="utf-8"))
    block = next(n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "xfer_handshake_metadata")
    fn = ast.parse("def merge(xfer_handshake_metadata, kv_connector):\n    pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = [block]
    namespace: dict[str, Any] = {"Any": Any}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), "core", "exec"), namespace)  # noqa: S102
    return namespace["merge"]


@functools.cache
def served(release: Release, pp: int, tp: int) -> dict[Any, int]:
    """key -> the prefill stage whose metadata the side channel serves under it."""
    pp_keys = "set_xfer_handshake_metadata_pp_aware" in (ROOTS[release] / "vllm/v1/engine/core.py").read_text(
        encoding="utf-8")
    replies = [{((p, t) if pp_keys else t): p} for p in range(pp) for t in range(tp)]  # rank order: PP-major
    got: dict[str, Any] = {}
    sink = types.SimpleNamespace(set_xfer_handshake_metadata=lambda m: got.update(m),
                                 set_xfer_handshake_metadata_pp_aware=lambda m: got.update(m))
    _merge(release)(replies, sink)
    return got


@functools.cache
def _sends_pp_size(release: Release) -> bool:
    """The pull-side scheduler puts the prefill's pp_size into kv_transfer_params (else the decode asks stage 0)."""
    folder = ROOTS[release] / KV / "v1/nixl"
    return folder.is_dir() and any("pp_size=self.vllm_config.parallel_config.pipeline_parallel_size" in
                                   f.read_text(encoding="utf-8") for f in folder.glob("*.py")
                                   if not f.name.startswith("push"))


@functools.cache
def asked(release: Release, pp: int, tp: int) -> frozenset[int]:
    """The prefill stages whose registered regions some decode worker compares with its own."""
    table = served(release, pp, tp)
    if all(isinstance(k, int) for k in table):
        return frozenset(table.values())
    return frozenset(table[(p, t)] for p in range(pp if _sends_pp_size(release) else 1) for t in range(tp))


@functools.cache
def _layer_assert(release: Release) -> ast.Expression | None:
    """The test of the layer-count assert in _validate_remote_agent_handshake (None: no such assert)."""
    for rel in _WORKERS:
        path = ROOTS[release] / KV / rel
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "_validate_remote_agent_handshake":
                for stmt in ast.walk(node):
                    text = ast.unparse(stmt) if isinstance(stmt, ast.Assert) else ""
                    if "Number of KV layers must match" in text or \
                            "len(nixl_agent_meta.kv_caches_base_addr) == len(self.block_len_per_layer)" in text:
                        assert isinstance(stmt, ast.Assert)
                        return ast.Expression(stmt.test)
    return None


@functools.cache
def vllm_handshake_fails(release: Release, local: int, remote: int) -> bool:
    test = _layer_assert(release)
    if test is None:
        return False
    mine, theirs = [1] * local, [1] * remote
    scope = {"self": types.SimpleNamespace(block_len_per_layer=mine), "local_regions": mine,
             "nixl_agent_meta": types.SimpleNamespace(kv_caches_base_addr=theirs, block_lens=theirs)}
    return not eval(compile(test, "assert", "eval"), scope)  # noqa: S307


def vllm_pull_fails(release: Release, model: str, p: tuple[int, str | None], d: tuple[int, str | None],
                    tp: int) -> bool:
    """Some decode stage's handshake with an asked prefill stage fails the release's layer-count assert (up to
    0.11.0 there is none, and no merged metadata: each worker listens on its own port)."""
    if _layer_assert(release) is None:
        return False
    mine, theirs = stage_regions(release, model, *d), stage_regions(release, model, *p)
    return any(vllm_handshake_fails(release, local, theirs[stage])
               for local in mine for stage in asked(release, p[0], tp))


def _hosts(release: Release, connector: str, model: str, sides: tuple[tuple[int, str | None], ...], tp: int,
           dp: int, disable: bool | None) -> list[HostVars]:
    common = {"vllm_pd_deployment": "x", "vllm_version": release.text, "vllm_model": model,
              "vllm_tensor_parallel_size": tp, "vllm_data_parallel_size": dp,
              **({} if disable is None else {"vllm_disable_hybrid_kv_cache_manager": disable})}
    return [HostVars(name, {**common, "vllm_pd_role": role, "vllm_pipeline_parallel_size": pp,
                            **({"vllm_env": {"VLLM_PP_LAYER_PARTITION": part}} if part else {}),
                            "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": "kv_both"}})
            for name, role, (pp, part) in zip("pd", ("prefill", "decode"), sides)]


def _pp(found: list[Any], host: str) -> list[str]:
    role = {"p": "prefill", "d": "decode"}[host]
    return [f.message for f in found if f.rule == "tp-ratio[nixl]" and f.message.startswith(f"{role} pipeline")]


def _stages(model: str) -> list[tuple[int, str | None]]:
    """PP 1-4 evenly split, an uneven PP-2 partition and, where a third of the layers is whole, the PP-2
    partitions whose first or last stage matches an even PP-3 stage (which stage the decode checks decides)."""
    n = len(_kinds(model))
    thirds = [(2, f"{n - n // 3},{n // 3}"), (2, f"{n // 3},{n - n // 3}")] if n % 3 == 0 else []
    return [(1, None), (2, None), (3, None), (4, None), (2, _partition(model)), *thirds]


def _grid(release: Release) -> Any:
    connectors = ["NixlConnector", *(["NixlPushConnector"] if registry.registered("NixlPushConnector", release)
                                     else [])]
    for model, disables in MODELS.items():
        for connector, p, d, tp, dp, disable in itertools.product(connectors, _stages(model), _stages(model),
                                                                  (1, 2), (1, 2), disables):
            yield model, connector, p, d, tp, dp, disable


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_nixl_pp_on_real_layer_mixes(release: Release) -> None:
    wrong, cases = [], 0
    for model, connector, p, d, tp, dp, disable in _grid(release):
        found = engine.lint(_hosts(release, connector, model, (p, d), tp, dp, disable)).findings
        rejected = False
        for host, pp in (("p", p[0]), ("d", d[0])):
            theirs = vllm_rejects_at_start(release, pp, tp)
            rejected |= theirs
            cases += theirs
            if any("ValueError at engine start" in m for m in _pp(found, host)) != theirs:
                wrong.append(("start", connector, model, p, d, tp, dp, host, _pp(found, host)))
        if connector == "NixlConnector" and not rejected and (p[0] > 1 or d[0] > 1):
            cases += 1
            says = any("AssertionError" in m for m in _pp(found, "p") + _pp(found, "d"))
            if says != vllm_pull_fails(release, model, p, d, tp):
                wrong.append(("handshake", model, p, d, tp, dp, disable, _pp(found, "p") + _pp(found, "d")))
    assert cases  # some shapes reach the handshake, or vLLM rejects them at start
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:3]}"


def test_pull_with_prefill_pp_fails_from_0_29_too() -> None:
    """The issue's correction: 0.29.0+ pull asks every prefill stage, and each fails the layer-count assert."""
    llama = "meta-llama/Llama-3.1-8B-Instruct"
    for version in ("0.29.0", "0.33.0"):
        assert asked(R(version), 2, 1) == {0, 1} and vllm_pull_fails(R(version), llama, (2, None), (1, None), 1)
        found = engine.lint(_hosts(R(version), "NixlConnector", llama, ((2, None), (1, None)), 1, 1, None)).findings
        assert any("Number of KV layers must match" in m for m in _pp(found, "p")), found
        push = engine.lint(_hosts(R(version), "NixlPushConnector", llama, ((2, None), (1, None)), 1, 1, None)).findings
        assert not _pp(push, "p")


def test_equal_pp_on_an_odd_model_fails_the_assert_up_to_0_22() -> None:
    """Equal PP 2 on DeepSeek-V3's 61 layers: decode stage 0 holds 31, the served (last) prefill stage 30."""
    release = R("0.22.0")
    assert asked(release, 2, 2) == {1}
    assert vllm_pull_fails(release, "deepseek-ai/DeepSeek-V3", (2, None), (2, None), 2)
    assert not vllm_pull_fails(release, "meta-llama/Llama-3.1-8B-Instruct", (2, None), (2, None), 2)
    found = engine.lint(_hosts(release, "NixlConnector", "deepseek-ai/DeepSeek-V3", ((2, None), (2, None)), 2, 1,
                                None)).findings
    assert any("AssertionError" in m and "31" in m for m in _pp(found, "p")), found


def test_layers_holding_no_kv_count_for_no_stage() -> None:
    """A "none" layer (MLP/MoE-only, no-op attention) registers no region; Mamba and HMA-pooled mixes are unknown."""
    kinds = ("full", "none") * 4 + ("full",) * 4
    assert pp_stages.kv_counts(kinds, 2, {}, False) == (3, 5)  # six layers a stage, not six KV layers
    assert pp_stages.kv_counts(kinds, 2, {"VLLM_PP_LAYER_PARTITION": "4,8"}, False) == (2, 6)
    assert pp_stages.kv_counts(("full", "mamba"), 2, {}, False) is None
    assert pp_stages.kv_counts(("full", "sliding"), 2, {}, True) is None
    assert pp_stages.kv_counts(("full", "sliding"), 2, {}, False) == (1, 1)

"""NIXL push by layer region with decode TP > prefill TP, against each release's own code.

From v1/nixl/base_worker.py of every release that has it (0.24.0 - 0.33.0) are run as vLLM wrote them: the
`self._is_hma_required = ...` and `self._has_packed_cache = ...` statements of NixlBaseConnectorWorker, its
_set_region_layers, _tracks_region_layers and _requires_layer_name_routing, and the `if
self._transfer_layer_region_indices:` block of add_remote_agent (the push prefill handshaking with a decode; its
PP-slice `elif` dropped); `_supports_pp_hma` is read from v1/nixl/push_worker.py NixlPushConnectorWorker, the layout
enum from v1/kv_cache_layout.py and VLLM_KV_CACHE_LAYOUT's aliases from config/cache.py. The layer specs are the
release's own classes (test_vllm_unify_ssm.specs). Grid: sliding-window models of two families (gpt-oss: alternating;
Gemma 3: 5 sliding to 1 full), a full-attention and an MLA model x HMA on / off x layouts (backend-chosen, HND,
BLHNC, BHLNC) x prefill PP 1 / 2 x TP pairs (1->2, 2->4, 2->2, 4->2). pdlint's tp-ratio[nixl] must report the
NotImplementedError exactly where the code raises it.
"""
from __future__ import annotations

import ast
import functools
import itertools
import types
from typing import Any

import pytest
import vllm_source
from test_vllm_unify_ssm import _make, specs

from pdlint.vllm.connectors import nixl, pair
from pdlint.vllm.releases import KNOWN, R, Release

RELEASES = [r for r in KNOWN if r >= R("0.24.0")]  # v1/nixl/base_worker.py
ROOTS = vllm_source.roots(RELEASES)
_BASE = f"{vllm_source.KV}/v1/nixl/base_worker.py"
_PUSH = f"{vllm_source.KV}/v1/nixl/push_worker.py"
_MESSAGE = "Attention-HMA push does not support decode TP greater than prefill TP yet"


def _class(release: Release, rel: str, name: str) -> ast.ClassDef:
    tree = ast.parse((ROOTS[release] / rel).read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _assigned(cls: ast.ClassDef, target: str) -> ast.stmt | None:
    """The first statement of cls's methods that assigns target (self._x = ...)."""
    return next((n for n in ast.walk(cls) if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and ast.unparse(n.targets[0]) == target), None)


def _region_block(cls: ast.ClassDef) -> ast.If | None:
    method = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "add_remote_agent")
    found = next((n for n in ast.walk(method) if isinstance(n, ast.If)
                  and ast.unparse(n.test) == "self._transfer_layer_region_indices"), None)
    if found is not None:
        found.orelse = []  # the PP-slice branch for region-index routing: not the check under test
    return found


@functools.cache
def _layouts(release: Release) -> tuple[Any, dict[str, str]]:
    ns: dict[str, Any] = {}
    path = ROOTS[release] / "vllm/v1/kv_cache_layout.py"
    if path.exists():
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)  # noqa: S102
    cache = ast.parse((ROOTS[release] / "vllm/config/cache.py").read_text(encoding="utf-8"))
    aliases = next((ast.literal_eval(n.value) for n in cache.body if isinstance(n, ast.Assign)
                    and ast.unparse(n.targets[0]) == "_LAYOUT_COMPAT_ALIASES"), {})
    return ns.get("KVCacheLayout"), aliases


@functools.cache
def _worker(release: Release) -> Any:
    """fn(layer specs, hma_on, layout name, prefill PP, prefill TP, decode TP, mla) -> the error the prefill's
    add_remote_agent raises (None: it does not)."""
    cls = _class(release, _BASE, "NixlBaseConnectorWorker")
    block = _region_block(cls)
    if block is None:
        return None
    spec_ns = specs(release)
    layout_enum, _aliases = _layouts(release)
    env = {"FullAttentionSpec": spec_ns["FullAttentionSpec"], "KVCacheLayout": layout_enum}
    lines = [s for s in (_assigned(cls, "self._is_hma_required"), _assigned(cls, "self._has_packed_cache")) if s]
    setup = ast.parse("def setup(self, vllm_config):\n    pass").body[0]
    assert isinstance(setup, ast.FunctionDef) and len(lines) == 2
    setup.body = lines
    check = ast.parse("def check(self, nixl_agent_meta, remote_tp_size, transfer_topo):\n    pass").body[0]
    assert isinstance(check, ast.FunctionDef)
    check.body = [block]
    module = ast.fix_missing_locations(ast.Module(body=[setup, check], type_ignores=[]))
    exec(compile(module, str(release), "exec"), env)  # noqa: S102
    methods = vllm_source.lift(ROOTS[release], _BASE, {"_set_region_layers", "_tracks_region_layers",
                                                       "_requires_layer_name_routing"}, "NixlBaseConnectorWorker")
    push = _class(release, _PUSH, "NixlPushConnectorWorker")
    supports = _assigned(push, "_supports_pp_hma")
    worker_cls = type("Worker", (), {**methods, "_supports_pp_hma": supports is not None
                                     and ast.literal_eval(supports.value)})

    def run(layers: dict[str, Any], hma_on: bool, layout: str, pp: int, p_tp: int, d_tp: int, mla: bool) -> str | None:
        self = worker_cls()
        self._layer_specs, self.pp_size, self.use_mla, self.block_size = layers, pp, mla, 16
        self._has_mamba = False
        self.kv_cache_layout = layout
        self._transfer_layer_region_indices = ()
        self.kv_cache_config = types.SimpleNamespace(transfer_group_index_by_layer=dict.fromkeys(layers, 0))
        self._align_remote_regions_by_layer = lambda meta: None
        env["setup"](self, types.SimpleNamespace(
            scheduler_config=types.SimpleNamespace(disable_hybrid_kv_cache_manager=not hma_on)))
        self._set_region_layers([[name] for name in layers])
        try:
            env["check"](self, types.SimpleNamespace(block_size=16), d_tp, types.SimpleNamespace(tp_size=p_tp))
        except NotImplementedError as error:
            return str(error)
        return None
    return run


# layer kinds of each model, and the facts pdlint has for it (sliding window, MLA)
MODELS: dict[str, tuple[tuple[str, ...], int | None, bool]] = {
    "gpt-oss": (tuple("sliding" if i % 2 == 0 else "full" for i in range(24)), 128, False),
    "gemma-3": (tuple("full" if (i + 1) % 6 == 0 else "sliding" for i in range(34)), 1024, False),
    "llama": (("full",) * 32, None, False),
    "deepseek": (("mla",) * 8, None, True),
}
LAYOUTS = (None, "HND", "BLHNC", "BHLNC")  # None: unset, the backend chooses (LBHNC for NIXL here)
TP_PAIRS = ((1, 2), (2, 4), (2, 2), (4, 2))


def _layer_specs(release: Release, model: str) -> dict[str, Any]:
    ns = specs(release)
    made = {"full": lambda: _make(ns["FullAttentionSpec"]), "sliding": lambda: _make(ns["SlidingWindowSpec"]),
            "mla": lambda: _make(ns["MLAAttentionSpec"], use_mla=True, num_kv_heads=1)}
    return {f"model.layers.{i}": made[k]() for i, k in enumerate(MODELS[model][0])}


def _side(release: Release, role: str, tp: int, pp: int, model: str, hma_on: bool, layout: str | None) -> pair.Side:
    _kinds, window, mla = MODELS[model]
    return pair.Side(role=role, release=release, connector="NixlPushConnector", tp=tp, pp=pp, block_size=16,
                     heads=64, kv_heads=1 if mla else 8, mla=mla, ssm=False, sliding_window=window,
                     kv_role="kv_producer" if role == "prefill" else "kv_consumer", hma=hma_on,
                     disable_hma=not hma_on, env=(("VLLM_KV_CACHE_LAYOUT", layout),) if layout else ())


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_push_region_tp_is_the_release_s_check(release: Release) -> None:
    run = _worker(release)
    assert (run is not None) == (release >= R("0.31.0")), "the check's first release moved"
    _enum, aliases = _layouts(release)
    wrong, raised = [], 0
    for model, hma_on, layout, pp, (p_tp, d_tp) in itertools.product(MODELS, (True, False), LAYOUTS, (1, 2),
                                                                      TP_PAIRS):
        if run is None:
            theirs = None
        else:
            name = aliases.get(layout, layout) if layout else "LBHNC"
            theirs = run(_layer_specs(release, model), hma_on, name, pp, p_tp, d_tp, MODELS[model][2])
        p = _side(release, "prefill", p_tp, pp, model, hma_on, layout)
        d = _side(release, "decode", d_tp, 1, model, hma_on, layout)
        ours = [pr for pr in nixl.pair(p, d) if _MESSAGE in pr.message]
        raised += theirs is not None
        if (theirs is not None) != bool(ours) or theirs is not None and theirs != _MESSAGE:
            wrong.append((model, hma_on, layout, pp, p_tp, d_tp, theirs, [pr.message for pr in ours]))
        for found in ours:
            assert (found.rule, found.side, found.fields) == ("tp-ratio[nixl]", "decode", ("tensor_parallel_size",))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:3]}"
    assert raised or release < R("0.31.0")  # the grid reaches the raise where the release has it


def _hosts(version: str, model: str, p_tp: int, d_tp: int, extra: str = "") -> str:
    kv = "vllm_kv_transfer_config: {kv_connector: NixlPushConnector, kv_role: "
    return f"""\
all:
  vars:
    vllm_pd_deployment: push
    vllm_version: "{version}"
    vllm_model: {model}
{extra}  hosts:
    p1: {{vllm_pd_role: prefill, vllm_pipeline_parallel_size: 2, vllm_tensor_parallel_size: {p_tp}, {kv}kv_producer}}}}
    d1: {{vllm_pd_role: decode, vllm_tensor_parallel_size: {d_tp}, {kv}kv_consumer}}}}
"""


_SAID = ("NotImplementedError at its first push (\"Attention-HMA push does not support decode TP greater than "
         "prefill TP yet\")")
LINT_CASES = [
    # (release, model, prefill TP, decode TP, extra vars, why the push routes by region, decode TP's column)
    ("0.31.0", "openai/gpt-oss-20b", 1, 2, "",
     "the hybrid KV cache manager on a model with sliding-window (128) layers", 59),
    ("0.33.0", "google/gemma-3-4b-it", 2, 4, "",
     "the hybrid KV cache manager on a model with sliding-window (1024) layers", 59),
    ("0.32.0", "meta-llama/Llama-3.1-8B-Instruct", 2, 4, "    vllm_env: {VLLM_KV_CACHE_LAYOUT: BLHNC}\n",
     "the block-outermost VLLM_KV_CACHE_LAYOUT BLHNC", 59),
]


@pytest.mark.parametrize(("version", "model", "p_tp", "d_tp", "extra", "why", "col"), LINT_CASES,
                         ids=[c[1] for c in LINT_CASES])
def test_tp_ratio_nixl_reports_push_region(version: str, model: str, p_tp: int, d_tp: int, extra: str, why: str,
                                           col: int, lint) -> None:
    found = [f for f in lint(_hosts(version, model, p_tp, d_tp, extra)) if _MESSAGE in f.message]
    message = (f"decode TP {d_tp} is larger than prefill TP {p_tp} with NixlPushConnector, prefill "
               f"pipeline_parallel_size 2 and {why}: the prefill pushes KV by layer region, and NIXL in vLLM {version} "
               f"raises {_SAID}")
    line = 8 + extra.count("\n")  # d1, at its vllm_tensor_parallel_size
    assert [(f.rule, f.severity, f.message, f.origin.line, f.origin.column) for f in found] == \
        [("tp-ratio[nixl]", "error", message, line, col)]
    assert found[0].origin.file.endswith("hosts.yml")


@pytest.mark.parametrize(("version", "extra"), [
    ("0.31.0", "    vllm_disable_hybrid_kv_cache_manager: true\n"),  # HMA off: routed by region index
    ("0.30.0", ""),  # no layer-region routing yet (PP + HMA is refused in __init__ instead)
])
def test_no_push_region_finding(version: str, extra: str, lint) -> None:
    assert not [f for f in lint(_hosts(version, "openai/gpt-oss-20b", 1, 2, extra)) if _MESSAGE in f.message]

"""vllm/model/hma.py against each release's own code: how HMA resolves, and which models start with it off.

For every release with the disable_hybrid_kv_cache_manager option (0.9.1+) the statements of
VllmConfig.__post_init__ that set it are lifted and run on a stand-in config (GPU platform, no chunked local
attention, no KV events) for each connector, with the option unset, true and false; then the release's
unify_hybrid_kv_cache_specs (kv_cache_utils.py, with _promote_local_kv_cache_specs from 0.27.0; kv_cache_planning.py
in 0.33.0) runs on the layer specs of four model kinds (full attention, sliding window, Mamba hybrid, MLA), and for
NIXL the worker's `if self._has_mamba: assert self._is_hma_required` (0.18.0+) is read from its __init__. The spec
classes are stand-ins: one spec type per kind, equal when their fields are.
"""
from __future__ import annotations

import ast
import functools
import itertools
import types
from typing import Any, ClassVar

import pytest
import vllm_source
from test_vllm_registry import hma_classes as _hma_classes
from test_vllm_registry import vllm_config_file

from pdlint.hostvars import HostVars
from pdlint.topology.build import build
from pdlint.topology.types import Instance
from pdlint.vllm.connectors import registry
from pdlint.vllm.model import hma
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if r >= R("0.9.1")]  # the first with disable_hybrid_kv_cache_manager
ROOTS = vllm_source.roots(RELEASES)
hma_classes = functools.cache(_hma_classes)
CONNECTORS = ("NixlConnector", "NixlPushConnector", "MooncakeConnector", "MoRIIOConnector", "LMCacheConnectorV1",
              "P2pNcclConnector", "OffloadingConnector", "ExampleConnector", "SharedStorageConnector")
MODELS = {"full": "meta-llama/Llama-3.1-8B-Instruct", "sliding": "openai/gpt-oss-20b",
          "mamba": "Qwen/Qwen3.5-35B-A3B", "mla": "deepseek-ai/DeepSeek-V3"}
_NIXL_WORKERS = ("v1/nixl_connector.py", "v1/nixl/worker.py", "v1/nixl/base_worker.py")


class _Log:
    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


class _NoImports(ast.NodeTransformer):
    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.Pass:
        return ast.Pass()


def _statements(release: Release) -> list[ast.stmt]:
    """The top-level statements of VllmConfig.__post_init__ that read or set disable_hybrid_kv_cache_manager."""
    tree = ast.parse(vllm_config_file(release).read_text(encoding="utf-8"))
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "VllmConfig")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__")
    return [_NoImports().visit(s) for s in init.body if "hybrid_kv_cache_manager" in ast.unparse(s)]


def post_init(release: Release, signature: str, **names: Any) -> Any:
    """The release's __post_init__ statements on HMA as a function `resolve(signature)`, run with its own
    KVConnectorFactory.supports_hma_config where it has one (else supports_hma by connector class), a logger that
    drops everything, a CUDA platform, and names."""
    fn = ast.parse(f"def resolve({signature}):\n    pass").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = _statements(release) or [ast.Pass()]
    supported = hma_classes(release)
    factory = types.SimpleNamespace(get_connector_class=lambda ktc: type(ktc.kv_connector, (), {}))
    env = {"supports_hma": lambda cls: cls.__name__ in supported, "KVConnectorFactory": factory}
    if vllm_source.has(ROOTS[release], f"{vllm_source.KV}/factory.py", "supports_hma_config", "KVConnectorFactory"):
        lifted = vllm_source.lift(ROOTS[release], f"{vllm_source.KV}/factory.py", {"supports_hma_config"},
                                  "KVConnectorFactory", env)
        factory.supports_hma_config = lambda ktc: lifted["supports_hma_config"](factory, ktc)
    namespace = {**env, "logger": _Log(), "current_platform": types.SimpleNamespace(
        is_cuda=lambda: True, is_rocm=lambda: False, support_hybrid_kv_cache=lambda: True), **names}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), str(release), "exec"),  # noqa: S102
         namespace)
    return namespace["resolve"]


@functools.cache
def _resolver(release: Release) -> Any:
    return post_init(release, "self", envs=types.SimpleNamespace(
        VLLM_USE_V1=True, VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=False))


def vllm_hma(release: Release, connector: str, disable: bool | None) -> bool | str:
    """HMA on after the release's __post_init__ (True/False), or the ValueError it raises."""
    ktc = types.SimpleNamespace(kv_connector=connector, kv_connector_extra_config={}, kv_role="kv_both")
    default = False if release < R("0.13.0") else None  # a plain bool until the option became tri-state
    me = types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(disable_hybrid_kv_cache_manager=default if disable is None else disable),
        kv_transfer_config=ktc, kv_events_config=None, model_config=None, speculative_config=None,
        attention_config=types.SimpleNamespace(hisparse_config=None))
    try:
        _resolver(release)(me)
    except ValueError as error:
        return str(error)
    return not me.scheduler_config.disable_hybrid_kv_cache_manager


def _instance(release: Release, connector: str, disable: bool | None, model: str = MODELS["full"]) -> Instance:
    values: dict[str, Any] = {"vllm_pd_deployment": "x", "vllm_pd_role": "prefill", "vllm_version": release.text,
                              "vllm_model": model,
                              "vllm_kv_transfer_config": {"kv_connector": connector, "kv_role": "kv_producer"}}
    if disable is not None:
        values["vllm_disable_hybrid_kv_cache_manager"] = disable
    topo, _ = build([HostVars("p", values)])
    return topo.instances[0]


def _connectors(release: Release) -> list[str]:
    return [c for c in CONNECTORS if registry.registered(c, release)]


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_hma_resolves_as_the_release_s_post_init(release: Release) -> None:
    wrong = []
    for connector, disable in itertools.product(_connectors(release), (None, True, False)):
        theirs = vllm_hma(release, connector, disable)
        ours = hma.enabled(_instance(release, connector, disable))
        if theirs != ours:
            wrong.append((connector, disable, theirs, ours))
    assert not wrong, f"{release}: {wrong}"


# --- which models start with HMA off ------------------------------------------------------------------------------

class KVCacheSpec:
    FIELDS: ClassVar[dict[str, Any]] = {"block_size": 16, "page_size_padded": None}
    KIND = "spec"

    def __init__(self, **fields: Any) -> None:
        every: dict[str, Any] = {}
        for klass in reversed(type(self).__mro__):
            every.update(getattr(klass, "FIELDS", {}))
        self.__dict__.update({**every, **fields})

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def _key(self) -> tuple[Any, ...]:
        return (self.KIND, *sorted((k, str(v)) for k, v in self.__dict__.items() if k not in self.IGNORED))

    IGNORED: frozenset[str] = frozenset()

    @property
    def type_id(self) -> str:
        return f"{self.KIND}_{self.block_size}"

    @property
    def unpadded_page_size_bytes(self) -> int:
        return int(self.block_size) * 1024

    def merge(self, specs: list[KVCacheSpec]) -> KVCacheSpec:
        assert all(s._key() == specs[0]._key() for s in specs), "not one spec"
        return specs[0]


class AttentionSpec(KVCacheSpec):
    # dcp_sharded: AttentionSpec's own default from 0.31.0 (tests/vllm/model/test_vllm_unify_ssm.py runs the real classes)
    FIELDS: ClassVar[dict[str, Any]] = {"num_kv_heads": 8, "head_size": 64, "head_size_v": 64, "dtype": "bfloat16", "kv_quant_mode": None,
              "dcp_sharded": True, "use_mla": False}


class FullAttentionSpec(AttentionSpec):
    FIELDS: ClassVar[dict[str, Any]] = {"sliding_window": None, "attention_chunk_size": None}
    KIND = "full_attention"
    IGNORED = frozenset(("sliding_window", "attention_chunk_size"))  # FullAttentionSpec.merge allows both


class MLAAttentionSpec(FullAttentionSpec):
    FIELDS: ClassVar[dict[str, Any]] = {"cache_dtype_str": None, "alignment": None, "compress_ratio": None, "model_version": None}


class SlidingWindowSpec(AttentionSpec):
    FIELDS: ClassVar[dict[str, Any]] = {"sliding_window": 128}
    KIND = "sliding_window"


class SlidingWindowMLASpec(SlidingWindowSpec):
    pass


class ChunkedLocalAttentionSpec(AttentionSpec):
    FIELDS: ClassVar[dict[str, Any]] = {"attention_chunk_size": 8192}
    KIND = "chunked_local"


class MambaSpec(KVCacheSpec):
    FIELDS: ClassVar[dict[str, Any]] = {"shapes": ((4, 8), (8, 8)), "dtypes": ("bfloat16",)}
    KIND = "mamba"


class UniformTypeKVCacheSpecs:
    @classmethod
    def is_uniform_type(cls, specs: dict[str, KVCacheSpec]) -> bool:
        """One block size and one spec kind (every full-attention spec is one kind, as vLLM's registry groups)."""
        values = list(specs.values())
        return len({s.block_size for s in values}) <= 1 and len({s.KIND for s in values}) <= 1


def replace_as(spec: KVCacheSpec, target: type, drop: tuple[str, ...] = (), **changes: Any) -> KVCacheSpec:
    fields = {k: v for k, v in spec.__dict__.items() if k not in drop}
    return target(**{**fields, **changes})  # type: ignore[no-any-return]


_SPECS = {"FullAttentionSpec": FullAttentionSpec, "MLAAttentionSpec": MLAAttentionSpec,
          "SlidingWindowSpec": SlidingWindowSpec, "SlidingWindowMLASpec": SlidingWindowMLASpec,
          "ChunkedLocalAttentionSpec": ChunkedLocalAttentionSpec, "MambaSpec": MambaSpec,
          "AttentionSpec": AttentionSpec, "KVCacheSpec": KVCacheSpec, "UniformTypeKVCacheSpecs":
          UniformTypeKVCacheSpecs, "replace_as": replace_as, "logger": _Log(), "defaultdict": __import__(
              "collections").defaultdict}


def _layers(kind: str) -> dict[str, KVCacheSpec]:
    """Layer specs of a model of kind: full attention with sliding-window, Mamba or MLA layers beside it."""
    if kind == "mla":
        return {f"l{i}": MLAAttentionSpec(use_mla=True, num_kv_heads=1) for i in range(4)}
    second = {"full": FullAttentionSpec, "sliding": SlidingWindowSpec, "mamba": MambaSpec}[kind]
    return {"l0": FullAttentionSpec(), "l1": second(), "l2": FullAttentionSpec(), "l3": second()}


@functools.cache
def _unify(release: Release) -> Any:
    root = ROOTS[release]
    rel = next(p for p in ("vllm/v1/core/kv_cache_planning.py", "vllm/v1/core/kv_cache_utils.py")
               if vllm_source.has(root, p, "unify_hybrid_kv_cache_specs"))
    names = {n for n in ("unify_hybrid_kv_cache_specs", "_promote_local_kv_cache_specs", "is_kv_cache_spec_uniform",
                         "is_kv_cache_type_uniform") if vllm_source.has(root, rel, n)}
    return vllm_source.lift(root, rel, names, env=dict(_SPECS))["unify_hybrid_kv_cache_specs"]


def vllm_unify_raises(release: Release, kind: str) -> bool:
    try:
        _unify(release)(_layers(kind))
    except ValueError:
        return True
    return False


@functools.cache
def nixl_asserts_hma(release: Release) -> bool:
    """The release's NIXL worker __init__ has `if self._has_mamba:` with `assert self._is_hma_required`."""
    for rel in _NIXL_WORKERS:
        path = ROOTS[release] / vllm_source.KV / rel
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "self._has_mamba" and any(
                    isinstance(s, ast.Assert) and ast.unparse(s.test) == "self._is_hma_required" for s in node.body):
                return True
    return False


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_models_that_cannot_start_with_hma_off(release: Release) -> None:
    wrong = []
    for connector, disable, kind in itertools.product(_connectors(release), (None, True, False), MODELS):
        on = vllm_hma(release, connector, disable)
        if isinstance(on, str):
            continue
        fails = not on and (vllm_unify_raises(release, kind) or kind == "mamba" and
                            registry.kind_of(connector) == "nixl" and nixl_asserts_hma(release))
        found = hma.off_failure(_instance(release, connector, disable, MODELS[kind]))
        if fails != (found is not None):
            wrong.append((connector, disable, kind, fails, found))
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:3]}"


@pytest.mark.parametrize("release", [r for r in RELEASES if r >= R("0.21.0")], ids=str)
def test_hma_hints_offer_only_what_starts(release: Release) -> None:
    """The fix offered for a Mamba model with HMA off turns HMA on in the release's own __post_init__."""
    for connector, disable in itertools.product(_connectors(release), (None, True)):
        inst = _instance(release, connector, disable, MODELS["mamba"])
        if hma.off_failure(inst) is None:
            continue
        fix = hma.off_fix(inst)
        if "false" in fix:
            assert vllm_hma(release, connector, False) is True, (connector, fix)
            assert connector in hma_classes(release), (connector, fix)  # create_connector accepts it

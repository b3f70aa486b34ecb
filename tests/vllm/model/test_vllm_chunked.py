"""vllm/model/chunked.py against each release's own code: chunked local attention and the hybrid KV cache manager.

For every release with the disable_hybrid_kv_cache_manager option (0.9.1+) the statements of
VllmConfig.__post_init__ that read or set it are lifted (test_vllm_hma._statements) and run with a model config
whose attention_chunk_size is set or not, and an `envs` whose VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is
the release's own envs.py lambda evaluated on the instance's vllm_env (unset, 0, 1, 2, "yes"), for each connector and
the option unset, true and false; hma.enabled and chunked.start_error must agree. The layers: transformers'
Llama4TextConfig (its own configuration_llama4.py, run with a stand-in PretrainedConfig) fills the config.json as
vLLM sees it, and each release's Llama4Attention.__init__ statements that pick the attention class (llama4.py) run
per layer; model_layers.layer_kinds must give "chunked" exactly where they pick ChunkedLocalAttention.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest
import vllm_source
from test_vllm_hma import _connectors, _instance, _Log, post_init

from pdlint.topology.types import Instance
from pdlint.vllm.model import chunked, hma
from pdlint.vllm.model import layers as model_layers
from pdlint.vllm.releases import KNOWN, R, Release

RELEASES = [r for r in KNOWN if r >= R("0.9.1")]
ROOTS = vllm_source.roots(KNOWN)
ENV = chunked.ENV
VALUES = (None, "0", "1", "2", "yes")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import model_table  # noqa: E402 - the transformers wheel the model table is generated from


@functools.cache
def _reader(release: Release) -> Any:
    """The release's envs.py lambda for ENV, reading a fake os's environment; None where envs.py lacks it."""
    tree = ast.parse((ROOTS[release] / "vllm" / "envs.py").read_text(encoding="utf-8"))
    table = next(n.value for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                 and isinstance(n.value, ast.Dict) and "environment_variables" in ast.unparse(
                     n.targets[0] if isinstance(n, ast.Assign) else n.target))
    for key, value in zip(table.keys, table.values):
        if isinstance(key, ast.Constant) and key.value == ENV:
            return lambda env: eval(compile(ast.Expression(value), "envs.py", "eval"),  # noqa: S307
                                    {"os": types.SimpleNamespace(getenv=lambda n, d=None: env.get(n, d))})()
    return None


class _Envs:
    """vllm.envs: each attribute evaluated on access, as envs.__getattr__ does."""

    def __init__(self, release: Release, env: dict[str, str]) -> None:
        self.release, self.env = release, env

    def __getattr__(self, name: str) -> Any:
        if name == "VLLM_USE_V1":
            return True
        reader = _reader(self.release)
        assert name == ENV and reader is not None, (self.release, name)
        return reader(self.env)


@functools.cache
def _resolver(release: Release) -> Any:
    return post_init(release, "self, envs")


def vllm_hma(release: Release, connector: str | None, disable: bool | None, chunk: int | None,
             env: dict[str, str]) -> bool | str:
    """HMA on after the release's __post_init__, or the ValueError it raises (envs.py's int() included)."""
    ktc = None if connector is None else types.SimpleNamespace(kv_connector=connector, kv_connector_extra_config={},
                                                               kv_role="kv_both")
    default = False if release < R("0.13.0") else None
    me = types.SimpleNamespace(
        scheduler_config=types.SimpleNamespace(disable_hybrid_kv_cache_manager=default if disable is None else disable),
        kv_transfer_config=ktc, kv_events_config=None, speculative_config=None,
        model_config=types.SimpleNamespace(attention_chunk_size=chunk),
        attention_config=types.SimpleNamespace(hisparse_config=None))
    try:
        _resolver(release)(me, _Envs(release, env))
    except ValueError as error:
        return f"ValueError: {error}"
    return not me.scheduler_config.disable_hybrid_kv_cache_manager


def _ours(release: Release, connector: str, disable: bool | None, chunk: int | None, env: dict[str, str]) -> Instance:
    inst = _instance(release, connector, disable)
    return dataclasses.replace(inst, facts=dataclasses.replace(inst.facts, attention_chunk_size=chunk), env=env)


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_chunked_attention_resolves_hma_as_the_release_s_post_init(release: Release) -> None:
    wrong = []
    for connector, disable, chunk, value in itertools.product(_connectors(release), (None, True, False),
                                                              (None, 8192), VALUES):
        env = {} if value is None else {ENV: value}
        theirs = vllm_hma(release, connector, disable, chunk, env)
        inst = _ours(release, connector, disable, chunk, env)
        raised = chunked.start_error(inst)
        ours: bool | str = f"ValueError ({raised[0]})" if raised else hma.enabled(inst)
        if isinstance(theirs, str) != isinstance(ours, str) or not isinstance(theirs, str) and theirs != ours:
            wrong.append((connector, disable, chunk, value, theirs, ours))
        elif not isinstance(theirs, str) and raised is None:
            assert hma.known(inst), (connector, disable, chunk, value)
    assert not wrong, f"{release}: {len(wrong)} disagreements, e.g. {wrong[:3]}"


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_the_variable_s_default_is_envs_py_s(release: Release) -> None:
    reader = _reader(release)
    assert chunked.ALLOW_DEFAULT.at(release) == (None if reader is None else reader({})), release


def test_the_forcing_spans() -> None:
    """The spans the issue's text leaves out: with no connector and the variable unset, chunked local attention turns
    HMA off in 0.10.1 - 0.13.0 only (0.14.0's envs.py defaults the variable to 1); an explicit false raises in 0.13.0
    alone, and with the variable 0 in every release from 0.13.0."""
    window = [r.text for r in RELEASES if R("0.10.1") <= r < R("0.14.0")]
    assert [r.text for r in RELEASES if vllm_hma(r, None, None, 8192, {}) is False] == window
    raises = [r.text for r in RELEASES if isinstance(vllm_hma(r, "NixlConnector", False, 8192, {}), str)]
    assert raises == ["0.13.0"], raises
    with_zero = [r.text for r in RELEASES if isinstance(vllm_hma(r, "NixlConnector", False, 8192, {ENV: "0"}), str)]
    assert with_zero == [r.text for r in RELEASES if r >= R("0.13.0")]
    # the reproducer's pair in 0.33.0: the decode's unset flag resolves on (NIXL is SupportsHMA), so the sides differ
    assert vllm_hma(R("0.33.0"), "NixlConnector", None, 8192, {}) is True


# --- which layers are chunked ---------------------------------------------------------------------------------------

class _PretrainedConfig:
    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)


@functools.cache
def _llama4_text_config() -> Any:
    """transformers' Llama4TextConfig, its own module run without the rest of transformers."""
    found = model_table.wheel(model_table.TRANSFORMERS, vllm_source.CACHE)
    if found is None:
        pytest.skip(f"{model_table.TRANSFORMERS} wheel not available (needs network once)")
    with zipfile.ZipFile(found) as whl:
        tree = ast.parse(whl.read("transformers/models/llama4/configuration_llama4.py").decode("utf-8"))
    tree.body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    namespace: dict[str, Any] = {"PretrainedConfig": _PretrainedConfig, "layer_type_validation": lambda *a, **k: None,
                                 "logging": types.SimpleNamespace(get_logger=lambda name: _Log()),
                                 "warnings": types.SimpleNamespace(warn=lambda *a, **k: None)}
    exec(compile(tree, "configuration_llama4.py", "exec"), namespace)  # noqa: S102
    return namespace["Llama4TextConfig"]


_PICK = ("self.layer_idx", "self.no_rope_layers", "self.nope", "use_chunked_local_attn", "attn_cls")


@functools.cache
def _picker(release: Release) -> Any:
    """Llama4Attention.__init__'s statements that pick the attention class, as a function of (config, layer); None
    where the release builds no ChunkedLocalAttention (every layer an Attention)."""
    tree = ast.parse((ROOTS[release] / "vllm/model_executor/models/llama4.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Llama4Attention")
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    picked = [s for s in init.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) in _PICK]
    if not any(ast.unparse(s.targets[0]) == "attn_cls" for s in picked):
        assert "ChunkedLocalAttention(" not in ast.unparse(tree), release
        return None
    fn = ast.parse("def pick(self, config, prefix):\n    pass\n").body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = [*picked, ast.parse("return attn_cls").body[0]]
    namespace = {"extract_layer_index": lambda prefix: prefix, "Attention": "full", "ChunkedLocalAttention": "chunked"}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), str(release), "exec"),  # noqa: S102
         namespace)
    return lambda config, layer: namespace["pick"](types.SimpleNamespace(), config, layer)


def _scout_like(layers: int, **text: Any) -> dict[str, Any]:
    return {"model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
            "text_config": {"model_type": "llama4_text", "num_attention_heads": 40, "num_key_value_heads": 8,
                            "head_dim": 128, "hidden_size": 5120, "num_hidden_layers": layers, **text}}


CONFIGS = {
    "scout": _scout_like(48, attention_chunk_size=8192, no_rope_layers=[1, 1, 1, 0] * 12),
    "maverick (no no_rope_layers: the class default)": _scout_like(48, attention_chunk_size=8192,
                                                                     interleave_moe_layer_step=2),
    "interval 3, chunk 4096": _scout_like(12, attention_chunk_size=4096, no_rope_layer_interval=3),
    "class default chunk size": _scout_like(8, no_rope_layers=[1, 0, 1, 1, 0, 1, 1, 0]),
    "chunking off (null)": _scout_like(8, attention_chunk_size=None),
    "text-only llama4_text": {"model_type": "llama4_text", "num_attention_heads": 16, "num_key_value_heads": 4,
                              "hidden_size": 2048, "num_hidden_layers": 6, "attention_chunk_size": 2048,
                              "no_rope_layers": [0, 1, 1, 0, 1, 1]},
}


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_layer_kinds_are_llama4_py_s(release: Release) -> None:
    klass, pick = _llama4_text_config(), _picker(release)
    for name, data in CONFIGS.items():
        text = data.get("text_config", data)
        config = klass(**{k: v for k, v in text.items() if k != "model_type"})
        theirs = tuple("full" if pick is None else pick(config, i) for i in range(config.num_hidden_layers))
        assert model_layers.layer_kinds(data, release) == theirs, (release, name)
        # ModelConfig.attention_chunk_size: getattr(hf_text_config, "attention_chunk_size", None)
        assert chunked.chunk_size(data, release) == getattr(config, "attention_chunk_size", None), (release, name)


def test_a_chunked_layer_unifies_as_a_sliding_one() -> None:
    """With HMA off unify_hybrid_kv_cache_specs turns chunked local layers beside full attention into
    FullAttentionSpec in every release that has ChunkedLocalAttentionSpec, so the model starts (off_failure: None)."""
    from test_vllm_hma import ChunkedLocalAttentionSpec, FullAttentionSpec, _unify

    for release in (r for r in RELEASES if r >= R("0.10.1")):
        specs = {"l0": ChunkedLocalAttentionSpec(), "l1": FullAttentionSpec(), "l2": ChunkedLocalAttentionSpec()}
        _unify(release)(specs)
        assert all(isinstance(s, FullAttentionSpec) for s in specs.values()), release
        assert specs["l0"].attention_chunk_size == 8192, release


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_the_model_types_whose_chunk_size_vllm_deletes(release: Release) -> None:
    """MODEL_ARCH_CONFIG_CONVERTORS' model types whose convertor calls _strip_mimo_v2_attention_chunk_size
    (model_arch_config_convertor.py, 0.21.0 -): their attention_chunk_size is gone before ModelConfig reads it."""
    path = ROOTS[release] / "vllm/transformers_utils/model_arch_config_convertor.py"
    stripping: set[str] = set()
    if path.exists():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)
                   and "_strip_mimo_v2_attention_chunk_size(" in ast.unparse(n)}
        table = next((n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(
            n.value, ast.Dict) and "MODEL_ARCH_CONFIG_CONVERTORS" in ast.unparse(n)), None)
        if table is not None:
            stripping = {k.value for k, v in zip(table.keys, table.values)
                         if isinstance(k, ast.Constant) and ast.unparse(v) in classes}
    assert bool(stripping) is (release >= R("0.21.0")), (release, stripping)
    for model_type in ("mimo_v2", "mimo_v2_flash", "mimo_v2_mtp", "mimo_v2_omni_mtp", "mimo", "llama"):
        data = {"model_type": model_type, "num_attention_heads": 64, "num_hidden_layers": 4,
                "attention_chunk_size": 128}
        assert chunked.chunk_size(data, release) == (None if model_type in stripping else 128), (release, model_type)


# --- PP stages with HMA off (each worker groups its own layers up to 0.10.2) ---------------------------------------

@pytest.mark.parametrize("release", [r for r in KNOWN if R("0.10.1") <= r <= R("0.12.0")], ids=str)
def test_chunked_stage_mixes_are_the_release_s_own(release: Release) -> None:
    """A stage of chunked local layers only is a ChunkedLocalAttentionSpec group, a mixed one a FullAttentionSpec
    (attention_chunk_size=C): the release's own spec classes and kv_cache_utils (test_vllm_stage_specs' planner)
    decide whether the engine starts, and connector[config]'s verdict must agree."""
    import test_vllm_stage_specs as st

    from pdlint.rules.per_engine import connector as rule
    from pdlint.vllm.model import stage_specs

    ns = st.specs(release)

    def raises(kinds: tuple[str, ...], pp: int, partition: str | None) -> type[Exception] | None:
        made = {"full": lambda: st._make(ns["FullAttentionSpec"]),
                "chunked": lambda: st._make(ns["ChunkedLocalAttentionSpec"], attention_chunk_size=4096)}
        spans = [model_layers.pp_indices(len(kinds), rank, pp, partition) for rank in range(pp)]
        stages = [{f"model.layers.{s[0] + i}": made[k]() for i, k in enumerate(kinds[s[0]:s[1]])}
                  for s in spans if isinstance(s, tuple)]
        try:
            st._planner(release)(stages)
        except (AssertionError, ValueError) as error:
            return type(error)
        return None

    wrong, raised = [], 0
    for name in ("interval 3, chunk 4096", "scout"):
        kinds = model_layers.layer_kinds(CONFIGS[name], release)
        assert kinds is not None and "chunked" in kinds
        for pp in range(2, 9):
            for partition in st._partitions(len(kinds), pp):
                inst = st.instance(release, "meta-llama/Llama-3.1-8B-Instruct", pp, partition, None)
                inst = dataclasses.replace(inst, facts=dataclasses.replace(
                    inst.facts, layer_kinds=kinds, layers=len(kinds), attention_chunk_size=4096, sliding_window=None))
                theirs = raises(kinds, pp, partition)
                raised += bool(theirs)
                mine = stage_specs.failure(inst)
                if (theirs is AssertionError) != (mine is not None) or bool(theirs) != bool(
                        rule.start_problems(inst, release)):
                    wrong.append((name, pp, partition, theirs, mine and mine[0][:80]))
    assert not wrong, f"{release}: {wrong[:3]}"
    assert raised > 5 if release < R("0.11.0") else raised == 0, raised


@pytest.mark.parametrize("release", [r for r in KNOWN if r >= R("0.14.0")], ids=str)
def test_moriio_s_unsupported_group_specs(release: Release) -> None:
    """MoRIIOConnectorScheduler.__init__'s `unsupported = [...]` (0.30.0 -), evaluated as written on a full and a
    chunked local group: ChunkedLocalAttentionSpec is listed exactly where moriio_hybrid.MORIIO_HMA says MoRIIO runs
    HMA, so moriio_chunked reports it there and nowhere else."""
    from test_vllm_hma import ChunkedLocalAttentionSpec, FullAttentionSpec, MambaSpec, SlidingWindowSpec

    from pdlint.vllm.connectors.moriio import hybrid as moriio_hybrid

    path = ROOTS[release] / vllm_source.KV / "v1/moriio/moriio_connector.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [n.value for n in ast.walk(tree)
             if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "unsupported"]
    groups = [types.SimpleNamespace(kv_cache_spec=FullAttentionSpec()),
              types.SimpleNamespace(kv_cache_spec=ChunkedLocalAttentionSpec())]
    config = types.SimpleNamespace(kv_cache_groups=groups, transfer_groups=groups)
    env = {"kv_cache_config": config, "FullAttentionSpec": FullAttentionSpec, "SlidingWindowSpec": SlidingWindowSpec,
           "MambaSpec": MambaSpec, "is_full_attention_spec": lambda spec: isinstance(spec, FullAttentionSpec)}
    listed = [eval(compile(ast.Expression(v), str(path), "eval"), dict(env)) for v in found]  # noqa: S307
    assert bool(listed and all("ChunkedLocalAttentionSpec" in names for names in listed)) is \
        (moriio_hybrid.MORIIO_HMA.at(release) is not None), (release, listed)

"""Hybrid models at connector start, per release: Mamba conv-state layout (NIXL, MoRIIO), MoRIIO under HMA.

Each engine's own release, connector mode and environment decide (the checks run in its own scheduler and
worker, whatever the other side runs). The conv-state layout is mamba_utils.get_conv_state_layout: the env
variable VLLM_SSM_CONV_STATE_LAYOUT when set, else "SD"; the transfers need "DS" (dim-first).
"""
from __future__ import annotations

from ....topology.types import Instance
from ...history import history
from ...model import chunked, hma
from ...releases import R, Timeline
from .. import composite
from ..registry import kind_of
from ..registry import release as registry_release
from . import read_mode

CONV_ENV = "VLLM_SSM_CONV_STATE_LAYOUT"
_MU = "model_executor/layers/mamba/mamba_utils.py get_conv_state_layout (env, else \"SD\")"
_C = "kv_connector/v1/moriio/moriio_connector.py"

NIXL_DS: Timeline[bool] = history("connector[config]", Timeline(
    "NIXL with Mamba/SSM layers needs the DS conv-state layout",
    ("0.8.5", False, "v1/nixl_connector.py (no Mamba conv transfer)", "no layout check"),
    ("0.20.0", True, (f"v1/nixl/worker.py (0.24.0+ v1/nixl/base_worker.py) NixlConnectorWorker.__init__ "
                      f"(`assert is_conv_state_dim_first()`); {_MU}"),
     "AssertionError \"3-read Mamba conv transfer requires DS conv state layout. Set VLLM_SSM_CONV_STATE_LAYOUT=DS\""),
))
# MoRIIOConnectorScheduler.__init__ with HMA on and a layer spec other than full attention (`_is_hma_required`).
MORIIO_HMA: Timeline[str | None] = history("connector[config]", Timeline(
    "MoRIIO under the hybrid KV cache manager",
    ("0.14.0", None, f"{_C} (MoRIIOConnector is not SupportsHMA before 0.30.0)", "HMA is off or rejected"),
    ("0.30.0", "sliding-only", f"{_C} MoRIIOConnectorScheduler.__init__ (`if self._is_hma_required`)",
     "Mamba/SSM layers: NotImplementedError; WRITE mode with any hybrid layers: NotImplementedError"),
    ("0.31.0", "read", f"{_C} MoRIIOConnectorScheduler.__init__",
     "WRITE mode with sliding-window or Mamba layers: NotImplementedError / MoRIIOError; READ works"),
    ("0.33.0", "write-no-sliding", f"{_C} MoRIIOConnectorScheduler.__init__",
     "WRITE mode with sliding-window layers: NotImplementedError; Mamba in WRITE is mapped"),
))
MORIIO_DS: Timeline[str | None] = history("connector[config]", Timeline(
    "MoRIIO with Mamba/SSM layers needs the DS conv-state layout",
    ("0.14.0", None, f"{_C} (no Mamba state transfer)", "no layout check"),
    ("0.31.0", "read", f"{_C} MoRIIOConnectorWorker.register_kv_caches (`if not is_conv_state_dim_first()`); {_MU}",
     ("READ mode (WRITE is refused before): MoRIIOError \"MoRIIO KDA conv transfer requires the DS (dim-first) "
      "state layout; set VLLM_SSM_CONV_STATE_LAYOUT=DS\"")),
    ("0.33.0", "any", f"{_C} MoRIIOConnectorWorker.register_kv_caches; {_MU}", "either mode: the same MoRIIOError"),
))
DS_HINT = f"set vllm_env.{CONV_ENV}: DS on every engine that runs the model (prefill and decode)"


def conv_layout(inst: Instance) -> str | None:
    """The conv-state layout the engine runs (get_conv_state_layout: the env value, else SD); None: unresolved."""
    if not inst.knows(f"env.{CONV_ENV}", "env"):
        return None
    return str(inst.env.get(CONV_ENV) or "SD")


def _layout_said(inst: Instance) -> str:
    value = inst.env.get(CONV_ENV)
    return f"{CONV_ENV} is {value!r}" if value else f"{CONV_ENV} is unset, so the layout is SD"


def nixl_layout(inst: Instance) -> tuple[str, str] | None:
    """(message, source) when a NIXL engine with Mamba/SSM layers and HMA on lacks the DS conv-state layout."""
    release = registry_release(inst)
    if kind_of(composite.effective(inst).connector) != "nixl" or not inst.facts.ssm or not NIXL_DS.at(release) \
            or not hma.known(inst) or not hma.enabled(inst) or conv_layout(inst) in ("DS", None):
        return None  # HMA off: the worker's `assert self._is_hma_required` (hma.off_failure) comes first
    message = (f"{inst.model or 'the model'} has Mamba/SSM layers and {_layout_said(inst)}: NIXL in vLLM {release} "
               "raises AssertionError at worker start (\"3-read Mamba conv transfer requires DS conv state layout. "
               f"Set {CONV_ENV}=DS\")")
    return message, NIXL_DS.step(release).source


def moriio_chunked(inst: Instance) -> tuple[str, str, str, str] | None:
    """MoRIIO under HMA with chunked local layers (Llama 4): the scheduler lists ChunkedLocalAttentionSpec among
    the unsupported group specs (it is an AttentionSpec, not a FullAttentionSpec) and raises, in either mode."""
    release = registry_release(inst)
    if kind_of(composite.effective(inst).connector) != "moriio" or MORIIO_HMA.at(release) is None \
            or "chunked" not in chunked.kinds_at(inst.facts.layer_kinds or (), release) \
            or not hma.known(inst) or not hma.enabled(inst):
        return None
    message = (f"{inst.model or 'the model'} has chunked local attention layers and MoRIIO runs under the hybrid KV "
               f"cache manager: vLLM {release} raises NotImplementedError (\"MoRIIO only supports sliding-window "
               "hybrid models (e.g. Gemma) ... Unsupported KV cache group spec(s): ['ChunkedLocalAttentionSpec']\")")
    fix = (f"set vllm_disable_hybrid_kv_cache_manager: true on both sides, or {chunked.ENV}=0 in vllm_env (vLLM then "
           "turns HMA off for chunked local attention)")
    return "disable_hybrid_kv_cache_manager", message, fix, MORIIO_HMA.step(release).source


def moriio_start(inst: Instance) -> list[tuple[str, str, str, str]]:
    """(field, message, hint, source) for each way a MoRIIO engine with hybrid layers fails at start."""
    view = composite.effective(inst)
    release = registry_release(inst)
    local = moriio_chunked(inst)
    if local:
        return [local]
    if kind_of(view.connector) != "moriio" or not (inst.facts.ssm or inst.facts.sliding_window):
        return []
    if not inst.knows("env.VLLM_MORIIO_CONNECTOR_READ_MODE"):
        return []  # the mode decides every check below: never guessed
    read = read_mode(dict(view.extra), dict(inst.env), release)
    found = []
    scheduler = _moriio_hma(inst, read)
    if scheduler:
        found.append(scheduler)
    ds = MORIIO_DS.at(release)
    # HMA off: unify_hybrid_kv_cache_specs raises (hma.off_failure) before register_kv_caches reads the layout
    if inst.facts.ssm and (ds == "any" or ds == "read" and read) and conv_layout(inst) not in ("DS", None) \
            and hma.off_failure(inst) is None:
        message = (f"{inst.model or 'the model'} has Mamba/SSM layers and {_layout_said(inst)}: MoRIIO in vLLM "
                   f"{release} raises MoRIIOError in register_kv_caches (\"MoRIIO KDA conv transfer requires the DS "
                   f"(dim-first) state layout; set {CONV_ENV}=DS\")")
        found.append((f"env.{CONV_ENV}", message, DS_HINT, MORIIO_DS.step(release).source))
    return found


def _moriio_hma(inst: Instance, read: bool) -> tuple[str, str, str, str] | None:
    release = registry_release(inst)
    mode = MORIIO_HMA.at(release)
    if mode is None or not hma.known(inst) or not hma.enabled(inst):
        return None
    source, model = MORIIO_HMA.step(release).source, inst.model or "the model"
    if mode == "sliding-only" and inst.facts.ssm:
        message = (f"{model} has Mamba/SSM layers: MoRIIO in vLLM {release} raises NotImplementedError under the "
                   "hybrid KV cache manager (\"MoRIIO only supports sliding-window hybrid models (e.g. Gemma) under "
                   "the hybrid KV cache manager ...\")")
        fix = (f"MoRIIO runs Mamba/SSM models from vLLM 0.31.0 (read mode, {CONV_ENV}=DS); turning HMA off does "
               "not start this model")
        return "disable_hybrid_kv_cache_manager", message, fix, source
    # Mamba in WRITE mode (0.31 - 0.32) is tp-ratio[moriio-write]'s (vllm/connectors/moriio/__init__.py HYBRID); sliding windows are here.
    if read or not inst.facts.sliding_window:
        return None
    fix = "set kv_connector_extra_config.read_mode: \"true\" on both sides"
    if not hma.needs_hma(inst):
        fix += ", or vllm_disable_hybrid_kv_cache_manager: true on both sides"
    groups = "sliding-window cache groups" if release >= R("0.33.0") else "hybrid KV cache groups"
    message = (f"{model} has sliding-window layers and MoRIIO runs in WRITE mode under the hybrid KV cache manager: "
               f"vLLM {release} raises NotImplementedError (\"MoRIIO WRITE mode does not support {groups} ...\")")
    return "extra.read_mode", message, fix, source

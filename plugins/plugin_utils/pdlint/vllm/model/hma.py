"""The hybrid KV cache manager (HMA) per release: whether an engine runs it, and why it would not start.

With HMA off the layer specs are unified per worker (PP stage) up to 0.10.2 (EngineCore._initialize_kv_caches calls
kv_cache_utils.get_kv_cache_config once per worker: vllm/model/stage_specs.py), and over the whole model from 0.11.0
(kv_cache_utils.get_kv_cache_configs merges every worker's specs into global groups, projected onto each worker),
so from 0.11.0 a PP stage's layer mix changes neither unify nor the groups NIXL and MoRIIO read."""
from __future__ import annotations

import dataclasses

from ...topology.types import Instance, per_body
from ..connectors import composite, external
from ..connectors.composite import HMA, MULTI, children, children_hma, class_hma, is_composite
from ..connectors.registry import HMA_DEFAULT, kind_of, registered, supports_hma
from ..connectors.registry import release as registry_release
from ..history import history
from ..releases import Timeline
from . import chunked

_U = "v1/core/kv_cache_utils.py get_kv_cache_groups -> unify_hybrid_kv_cache_specs"
# With HMA off get_kv_cache_groups unifies every layer's KV cache spec into one type: sliding-window layers become
# full attention, Mamba/SSM state cannot, so a hybrid Mamba model fails before any connector runs.
UNIFY_SSM: Timeline[str | None] = history("connector[config]", Timeline(
    "a Mamba/SSM hybrid model with the hybrid KV cache manager off",
    ("0.8.5", None, "config.py (no disable_hybrid_kv_cache_manager option)", "not checked: no HMA setting"),
    ("0.9.1", ("ValueError \"Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one "
               "unified type.\""), _U, "attention and Mamba/SSM layers cannot be unified: the engine does not start"),
    ("0.27.0", "ValueError \"Failed to promote local KV cache specs to one unified type.\"",
     f"{_U} -> _promote_local_kv_cache_specs", "the promotion raises: the engine does not start"),
    # 0.31.0 groups the specs by `isinstance(spec, AttentionSpec) and not spec.dcp_sharded` before promoting each
    # group, but AttentionSpec.dcp_sharded defaults to True and MambaSpec (a KVCacheSpec) to False: both land in the
    # False group, which still mixes attention and Mamba. Only a DCP=1 draft under DCP > 1 is replicated.
    ("0.31.0", "ValueError \"Failed to promote local KV cache specs to one unified type.\"",
     (f"{_U} (0.33.0+ v1/core/kv_cache_planning.py) -> _promote_local_kv_cache_specs per `not spec.dcp_sharded` "
      "group; v1/kv_cache_interface.py AttentionSpec.dcp_sharded = True, KVCacheSpec.dcp_sharded = False (MambaSpec)"),
     "attention and Mamba/SSM layers share the sharded group and its promotion raises: the engine does not start"),
))
# NIXL's worker asserts HMA whenever the KV cache has Mamba groups; it only decides where the step above does not
# (the connector is built from the KV cache config, after get_kv_cache_configs: gpu_worker.initialize_from_config).
NIXL_SSM_HMA: Timeline[bool] = history("connector[config]", Timeline(
    "NIXL with a Mamba/SSM model and the hybrid KV cache manager off",
    ("0.8.5", False, "v1/nixl_connector.py NixlConnectorWorker.__init__ (no Mamba support)", "not checked"),
    ("0.18.0", True, ("v1/nixl_connector.py, 0.20.0+ v1/nixl/worker.py, 0.24.0+ v1/nixl/base_worker.py "
     "NixlConnectorWorker.__init__ (`if self._has_mamba: assert self._is_hma_required`)"),
     "Mamba/SSM layers with HMA off: AssertionError in the NIXL worker"),
))


@per_body
def enabled(inst: Instance) -> bool:
    """Whether the engine runs the hybrid KV cache manager (VllmConfig.__post_init__ of its release, HMA_DEFAULT)."""
    release = registry_release(inst)
    mode = HMA_DEFAULT.at(release)
    if mode == "absent" or inst.connector and mode == "forced-off":
        return False
    if chunked.forces_off(inst):  # chunked local attention, whatever the setting (vllm/model/chunked.py)
        return False
    if dynamo_turns_off(inst):
        return False
    if inst.disable_hma is not None:
        return not inst.disable_hma
    if not inst.connector:
        return True
    return mode == "by-connector" and bool(composite.supports_hma(inst))


def dynamo_turns_off(inst: Instance) -> bool:
    """Dynamo's launcher turns HMA off for a PdConnector whose children do not all support it, after vLLM resolved
    it and before the connector is built (vllm/arguments/dynamo.py: kv_connector_protocols.py
    disable_hybrid_kv_cache_manager_for_incompatible_pd_connector, MultiConnector.all_children_support_hma)."""
    return inst.launcher == "dynamo" and inst.connector == "PdConnector" and composite.children_hma(inst) is False


@per_body
def known(inst: Instance) -> bool:
    """enabled() is decided: not an unset flag resolved by an out-of-tree class pdlint cannot see."""
    release = registry_release(inst)
    if inst.disable_hma is not True and chunked.forces_off(inst) is not False:
        return bool(chunked.forces_off(inst))  # None: the chunked-attention variable is unreadable
    return (inst.disable_hma is not None or not inst.connector or HMA_DEFAULT.at(release) != "by-connector"
            or composite.supports_hma(inst) is not None)


def rejected(inst: Instance) -> bool:
    """HMA explicitly on with a connector that lacks SupportsHMA: factory.py create_connector's ValueError."""
    release = registry_release(inst)
    if inst.connector is None or dynamo_turns_off(inst) or HMA_DEFAULT.at(release) not in ("off-unless-set", "by-connector") \
            or inst.disable_hma is not False:
        return False
    if chunked.forces_off(inst):  # VllmConfig.__post_init__ raises first (chunked.start_error)
        return False
    if external.loaded_from_module(inst.connector, inst.module_path, release):
        return composite.class_hma(inst.connector, inst.module_path, release) is False
    return registered(inst.connector, release) and not supports_hma(inst.connector, release)


def lacking(inst: Instance) -> list[str]:
    """The children of a composite whose class is not SupportsHMA in its release."""
    at = composite.release(inst)
    return [c.connector or "?" for c in children(inst) if class_hma(c.connector, c.module_path, at) is False]


def failure(inst: Instance) -> str | None:
    """Why a composite engine with the hybrid KV cache manager on does not start in its release (None: it does)."""
    at = composite.release(inst)
    if not is_composite(inst) or not enabled(inst):
        return None
    name = inst.connector
    if class_hma(name, inst.module_path, at) is False:
        return (f"{name} does not implement SupportsHMA in vLLM {at}: KVConnectorFactory.create_connector raises "
                f"ValueError \"Connector {name} does not support HMA but HMA is enabled\"")
    if HMA.at(at) in ("none", "unsupported") or children_hma(inst) is not False:
        return None
    names = ", ".join(lacking(inst)) or "a child"
    if HMA.at(at) == "factory-children" and name == MULTI:
        return (f"{names} does not support HMA, so in vLLM {at} KVConnectorFactory.supports_hma_config "
                "(all_children_support_hma) is False: ValueError \"Connector MultiConnector does not support HMA but "
                "HMA is enabled\"")
    why = "is SupportsHMA" if name == MULTI else "inherits SupportsHMA from MultiConnector"
    return (f"HMA is on for {name} in vLLM {at} ({name} {why}) but its child {names} lacks SupportsHMA: "
            "MultiConnector.__init__ raises AssertionError \"HMA should not be enabled unless all sub-connectors "
            "support it\"")


def _off_because(inst: Instance) -> str:
    if dynamo_turns_off(inst):
        return "Dynamo's launcher turns it off for a PdConnector whose children lack it"
    if inst.disable_hma:
        return "vllm_disable_hybrid_kv_cache_manager is true"
    mode = HMA_DEFAULT.at(registry_release(inst))
    if chunked.forces_off(inst) and not (inst.connector and mode == "forced-off"):
        return chunked.because(inst)
    if mode == "forced-off":
        return f"vLLM {registry_release(inst)} turns it off whenever a kv connector is set"
    if mode == "off-unless-set":
        return f"it is unset, and vLLM {registry_release(inst)} turns it off with any kv connector"
    return f"it is unset and {inst.connector} does not support it, so VllmConfig.__post_init__ turns it off"


def reason(inst: Instance) -> tuple[str, str]:
    """(why enabled() resolved as it did, the vLLM source of that step) in the release's terms, for explain; a pure
    accessor over the branches enabled() takes (it decides nothing)."""
    release = registry_release(inst)
    step = HMA_DEFAULT.step(release)
    if enabled(inst):
        if inst.disable_hma is False:
            why = "vllm_disable_hybrid_kv_cache_manager is false"
        elif not inst.connector:
            why = "no kv connector is set"
        else:
            why = f"it is unset and {inst.connector} implements SupportsHMA in vLLM {release}"
        return why, step.source
    if dynamo_turns_off(inst):
        return _off_because(inst), "vllm/arguments/dynamo.py disable_hybrid_kv_cache_manager_for_incompatible_pd_connector"
    if step.value == "absent":
        return f"vLLM {release} has no hybrid KV cache manager option", step.source
    if chunked.forces_off(inst) is None and not inst.disable_hma:
        return f"pdlint cannot read {chunked.ENV}, which decides it for chunked local attention", step.source
    if not known(inst):
        return f"it is unset and pdlint cannot see whether {inst.connector} supports it", step.source
    if chunked.forces_off(inst) and not inst.disable_hma and not (inst.connector and step.value == "forced-off"):
        return _off_because(inst), chunked.CHUNKED_HMA.step(release).source
    return _off_because(inst), step.source


def off_failure(inst: Instance) -> tuple[str, str] | None:
    """(message, vLLM source) when HMA resolved off keeps the instance's Mamba/SSM hybrid model from starting."""
    release = registry_release(inst)
    if not inst.facts.ssm or HMA_DEFAULT.at(release) == "absent" or not known(inst) or enabled(inst):
        return None
    model = inst.model or "the model"
    said, source = UNIFY_SSM.at(release), UNIFY_SSM.step(release).source
    if said is None and kind_of(composite.effective(inst).connector) == "nixl" and NIXL_SSM_HMA.at(release):
        said, source = "AssertionError (`assert self._is_hma_required`)", NIXL_SSM_HMA.step(release).source
    if said is None:
        return None
    message = (f"{model} has Mamba/SSM layers and the hybrid KV cache manager is off ({_off_because(inst)}): vLLM "
               f"{release} does not start ({said})")
    return message, source


@per_body
def needs_hma(inst: Instance) -> bool:
    """The instance's model does not start in its release with HMA off (so turning it off is no fix)."""
    return off_failure(dataclasses.replace(inst, disable_hma=True)) is not None


def off_fix(inst: Instance) -> str:
    """A change that turns HMA on and starts (checked with the same functions), or why none exists."""
    on = dataclasses.replace(inst, disable_hma=False)
    if enabled(on) and not rejected(on) and failure(on) is None:
        return "set vllm_disable_hybrid_kv_cache_manager: false on both sides (the connector supports HMA)"
    return (f"{inst.connector} cannot run a Mamba/SSM hybrid model in vLLM {registry_release(inst)} (HMA cannot be "
            "turned on with it): use a connector and release that support the hybrid KV cache manager")

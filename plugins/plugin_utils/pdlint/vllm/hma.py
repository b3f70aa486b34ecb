"""The hybrid KV cache manager (HMA) per release: whether an engine runs it, and why it would not start."""
from __future__ import annotations

from ..topology.types import Instance, per_instance
from . import composite, external
from .composite import HMA, MULTI, children, children_hma, class_hma, is_composite
from .registry import HMA_DEFAULT, registered, supports_hma
from .registry import release as registry_release


@per_instance
def enabled(inst: Instance) -> bool:
    """Whether the engine runs the hybrid KV cache manager (VllmConfig.__post_init__ of its release, HMA_DEFAULT)."""
    release = registry_release(inst)
    mode = HMA_DEFAULT.at(release)
    if mode == "absent" or inst.connector and mode == "forced-off":
        return False
    if inst.disable_hma is not None:
        return not inst.disable_hma
    if not inst.connector:
        return True
    return mode == "by-connector" and bool(composite.supports_hma(inst))


@per_instance
def known(inst: Instance) -> bool:
    """enabled() is decided: not an unset flag resolved by an out-of-tree class pdlint cannot see."""
    release = registry_release(inst)
    return (inst.disable_hma is not None or not inst.connector or HMA_DEFAULT.at(release) != "by-connector"
            or composite.supports_hma(inst) is not None)


def rejected(inst: Instance) -> bool:
    """HMA explicitly on with a connector that lacks SupportsHMA: factory.py create_connector's ValueError."""
    release = registry_release(inst)
    if inst.connector is None or HMA_DEFAULT.at(release) not in ("off-unless-set", "by-connector") \
            or inst.disable_hma is not False:
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

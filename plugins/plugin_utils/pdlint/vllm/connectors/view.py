"""What an instance's connector is to its release: family, push or pull, hash enforcement (a composite's transfer child)."""
from __future__ import annotations

from ...topology.types import Instance, per_body
from . import composite
from .registry import canonical, kind_of


@per_body
def kind(inst: Instance) -> str | None:
    """Connector family of an instance (see kind_of); of a composite, its transfer child's (composite.py)."""
    return kind_of(composite.effective(inst).connector)


def is_push(inst: Instance) -> bool:
    return canonical(composite.effective(inst).connector) == "NixlPushConnector"


def enforces_compat_hash(inst: Instance) -> bool:
    """base_worker.py: get_from_extra_config("enforce_handshake_compat", True), used for truthiness."""
    return bool(composite.effective(inst).extra.get("enforce_handshake_compat", True))

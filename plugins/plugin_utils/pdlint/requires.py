"""What the play side needs besides ansible-core, checked before any work so a missing package is one clear message."""
from __future__ import annotations

import sys

# Also in requirements.txt (for ansible-builder and pip) and pyproject.toml (for the CLI).
JSONSCHEMA = "jsonschema>=4.18"


def missing() -> str | None:
    """A message naming the missing package and the command that installs it, or None when all are there."""
    try:
        import jsonschema  # noqa: F401 - the schema rule validates with it
    except ImportError:
        return (f"pdlint.topology needs the Python package {JSONSCHEMA} on the controller, in the Python that runs "
                f"Ansible ({sys.executable}); install it with: {sys.executable} -m pip install '{JSONSCHEMA}' "
                "(the collection's requirements.txt lists it)")
    return None

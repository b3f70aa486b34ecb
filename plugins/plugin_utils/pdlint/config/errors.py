"""The one error a configuration raises (its own module: configuration.py and models.py both raise it)."""
from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value pdlint cannot use; the message names the file and the key."""

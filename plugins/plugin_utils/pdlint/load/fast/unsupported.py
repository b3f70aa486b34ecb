"""The fast loader's one exception, in a module of its own: the cache's key reads Ansible's settings
(fast_config) on every run, and a run answered from the cache should not import yaml to name it."""
from __future__ import annotations


class Unsupported(Exception):
    """Something the fast loader does not model: the reference loader must read this inventory."""

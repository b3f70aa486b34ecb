"""Ansible settings the fast loader assumes at their defaults; anything else goes to the reference loader."""
from __future__ import annotations

import os
from pathlib import Path

from . import safety
from .fast_values import Unsupported

_ENV = ("ANSIBLE_HASH_BEHAVIOUR", "ANSIBLE_PRECEDENCE", "ANSIBLE_RUN_VARS_PLUGINS", "ANSIBLE_VARS_ENABLED",
        "ANSIBLE_VARS_PLUGINS", "ANSIBLE_VARS_PLUGIN_STAGE", "ANSIBLE_INVENTORY_IGNORE", "ANSIBLE_INVENTORY_IGNORE_REGEX",
        "ANSIBLE_YAML_FILENAME_EXT", "ANSIBLE_INVENTORY_PLUGIN_EXTS", "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS",
        "ANSIBLE_DUPLICATE_YAML_DICT_KEY")
# Option names (in [defaults]) that change how an inventory is read or merged.
_KEYS = ("hash_behaviour", "precedence", "vars_plugin", "inventory_plugin", "inventory_ignore", "yaml_valid_extensions",
         "yaml_filename_ext", "group_chars", "duplicate_dict_key", "vars_enabled")


def config_file() -> Path | None:
    """The ansible.cfg Ansible would read (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible)."""
    env = os.environ.get("ANSIBLE_CONFIG")
    candidates = []
    if env:
        p = Path(os.path.expanduser(env))
        candidates.append(p / "ansible.cfg" if p.is_dir() else p)
    candidates += [Path.cwd() / "ansible.cfg", Path.home() / ".ansible.cfg", Path("/etc/ansible/ansible.cfg")]
    return next((c for c in candidates if c.is_file()), None)


def check() -> None:
    """Raise Unsupported when a setting the fast loader does not model is not at its default."""
    for name in _ENV:
        if os.environ.get(name) and os.environ[name] != safety.SET_BY_PDLINT.get(name):
            raise Unsupported(f"{name} is set")
    path = config_file()
    if path is None:
        return
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError) as exc:
        raise Unsupported(f"{path}: {exc}") from exc
    if parser.has_section("inventory") and parser.options("inventory"):
        raise Unsupported(f"{path} has [inventory] settings")
    if parser.has_section("defaults"):
        for option in parser.options("defaults"):
            if any(key in option for key in _KEYS):
                raise Unsupported(f"{path} sets {option}")

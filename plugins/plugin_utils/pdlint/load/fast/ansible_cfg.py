"""The Ansible settings that can change an inventory's hosts, groups or variables, read as ansible-core reads them.

An allowlist: every such setting is listed below with ansible-core's own
definition (its `ansible.cfg` entries, environment variables and default; a
test compares them with ansible-core's `base.yml` and plugin docs). The fast
loader runs only when each one resolves to a value it implements; any other
value, an unknown option in an inventory or vars plugin section, or a config
file ansible-core would refuse sends the load to ansible-core. Imports no
Ansible module.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from ..preflight import safety
from .unsupported import Unsupported

_PRECEDENCE = ["all_inventory", "groups_inventory", "all_plugins_inventory", "all_plugins_play",
               "groups_plugins_inventory", "groups_plugins_play"]
_YAML_EXT = [".yml", ".yaml", ".json"]
UNSET = object()  # the setting must not be given at all (its default is computed, or unset differs from any value)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting as ansible-core defines it, and the values the fast loader implements."""

    name: str  # ansible-core's name (base.yml), or plugin:option
    ini: tuple[tuple[str, str], ...]  # (section, key), in ansible-core's order: the last one given wins
    env: tuple[str, ...]  # the last one set wins, and beats the file
    type: str  # ensure_type's: string, list, bool
    default: Any
    implemented: tuple[Any, ...]  # values the fast loader models (the default among them, unless UNSET)


SETTINGS = (
    Setting("DEFAULT_HASH_BEHAVIOUR", (("defaults", "hash_behaviour"),), ("ANSIBLE_HASH_BEHAVIOUR",), "string",
            "replace", ("replace",)),
    Setting("VARIABLE_PRECEDENCE", (("defaults", "precedence"),), ("ANSIBLE_PRECEDENCE",), "list",
            _PRECEDENCE, (_PRECEDENCE,)),
    Setting("RUN_VARS_PLUGINS", (("defaults", "run_vars_plugins"),), ("ANSIBLE_RUN_VARS_PLUGINS",), "string",
            "demand", ("demand",)),
    Setting("VARIABLE_PLUGINS_ENABLED", (("defaults", "vars_plugins_enabled"),), ("ANSIBLE_VARS_ENABLED",), "list",
            ["host_group_vars"], (["host_group_vars"],)),
    Setting("DEFAULT_VARS_PLUGIN_PATH", (("defaults", "vars_plugins"),), ("ANSIBLE_VARS_PLUGINS",), "raw",
            UNSET, (safety.SET_BY_PDLINT["ANSIBLE_VARS_PLUGINS"],)),
    Setting("DEFAULT_INVENTORY_PLUGIN_PATH", (("defaults", "inventory_plugins"),), ("ANSIBLE_INVENTORY_PLUGINS",),
            "raw", UNSET, (safety.SET_BY_PDLINT["ANSIBLE_INVENTORY_PLUGINS"],)),
    Setting("INVENTORY_ENABLED", (("inventory", "enable_plugins"),), ("ANSIBLE_INVENTORY_ENABLED",), "list",
            UNSET, (safety.SET_BY_PDLINT["ANSIBLE_INVENTORY_ENABLED"].split(","),)),
    Setting("INVENTORY_IGNORE_EXTS", (("defaults", "inventory_ignore_extensions"), ("inventory", "ignore_extensions")),
            ("ANSIBLE_INVENTORY_IGNORE",), "list", UNSET, (UNSET,)),
    Setting("INVENTORY_IGNORE_PATTERNS", (("defaults", "inventory_ignore_patterns"), ("inventory", "ignore_patterns")),
            ("ANSIBLE_INVENTORY_IGNORE_REGEX",), "list", [], ([],)),
    Setting("TRANSFORM_INVALID_GROUP_CHARS", (("defaults", "force_valid_group_names"),),
            ("ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS",), "string", "never", ("never", "ignore", "always", "silently")),
    Setting("DUPLICATE_YAML_DICT_KEY", (("defaults", "duplicate_dict_key"),), ("ANSIBLE_DUPLICATE_YAML_DICT_KEY",),
            "string", "warn", ("warn", "ignore")),
    Setting("YAML_FILENAME_EXTENSIONS", (("defaults", "yaml_valid_extensions"),), ("ANSIBLE_YAML_FILENAME_EXT",),
            "list", _YAML_EXT, (_YAML_EXT,)),
    Setting("inventory:yaml:yaml_extensions",
            (("defaults", "yaml_valid_extensions"), ("inventory_plugin_yaml", "yaml_valid_extensions")),
            ("ANSIBLE_YAML_FILENAME_EXT", "ANSIBLE_INVENTORY_PLUGIN_EXTS"), "list", [".yaml", ".yml", ".json"],
            ([".yaml", ".yml", ".json"], _YAML_EXT)),  # only tested for membership
    Setting("vars:host_group_vars:stage", (("vars_host_group_vars", "stage"),), ("ANSIBLE_VARS_PLUGIN_STAGE",),
            "string", UNSET, (UNSET,)),
    Setting("vars:host_group_vars:_valid_extensions", (("defaults", "yaml_valid_extensions"),),
            ("ANSIBLE_YAML_FILENAME_EXT",), "list", _YAML_EXT, (_YAML_EXT,)),
)
# Options of these sections are read by the inventory and vars plugins: any not listed above may matter.
_PLUGIN_SECTIONS = ("inventory", "inventory_plugin_", "vars_")
# Listed [inventory] options that cannot change what a static inventory holds (warnings, failure policy pdlint
# pins, caching that file inventories do not use).
_HARMLESS = {"host_pattern_mismatch", "inventory_unparsed_warning", "any_unparsed_is_failed", "unparsed_is_failed",
             "export", "cache", "cache_plugin", "cache_connection", "cache_prefix", "cache_timeout"}


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the fast loader must do differently from the defaults."""

    safe_group_names: bool = False  # force_valid_group_names: replace invalid characters in group names


def config_file() -> Path | None:
    """The ansible.cfg ansible-core reads (config/manager.py find_ini_config_file): ANSIBLE_CONFIG (a file, or a
    directory holding ansible.cfg), ./ansible.cfg unless the directory is world-writable, ~/.ansible.cfg, /etc."""
    candidates = []
    env = os.environ.get("ANSIBLE_CONFIG")
    if env is not None:
        p = Path(os.path.abspath(os.path.expanduser(os.path.expandvars(env))))
        candidates.append(p / "ansible.cfg" if p.is_dir() else p)
    try:
        cwd = Path.cwd()
        if not cwd.stat().st_mode & 0o002:
            candidates.append(cwd / "ansible.cfg")
    except OSError:
        pass
    candidates += [Path.home() / ".ansible.cfg", Path("/etc/ansible/ansible.cfg")]
    return next((c for c in candidates if c.exists() and os.access(c, os.R_OK)), None)


def _unquote(text: str) -> str:
    """ansible.parsing.quoting.unquote."""
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" and text[-2] != "\\":
        return text[1:-1]
    return text


def _typed(value: str, kind: str, from_ini: bool) -> Any:
    """ensure_type for the types above (a list splits on ',', strips and unquotes; an ini string is unquoted)."""
    if kind == "list":
        return [_unquote(x.strip()) for x in value.split(",")]
    if kind == "string" and from_ini:
        return _unquote(value)
    return value


def _resolve(setting: Setting, parser: Any, env: dict[str, str]) -> Any:
    """The setting's value as ansible-core's ConfigManager resolves it: environment, then file, then default."""
    found: Any = None
    for name in setting.env:
        if env.get(name) is not None:
            found = env[name]
    if found is not None:
        if found == "" and setting.type != "string":  # an empty variable of another type means the default
            return setting.default
        return _typed(found, setting.type, False)
    if parser is not None:
        for section, key in setting.ini:
            value = parser.get(section, key, raw=True, fallback=None)
            if value is not None:
                found = value
        if found is not None:
            return _typed(found, setting.type, True)
    return setting.default


def check() -> Settings:
    """The settings the fast loader applies; Unsupported when one that changes inventories is not one it models."""
    path = config_file()
    parser = None
    if path is not None:
        import configparser

        parser = configparser.ConfigParser(inline_comment_prefixes=(";",))  # as ansible-core reads it
        try:
            parser.read_string(path.read_bytes().decode("utf-8"))
        except (configparser.Error, OSError, UnicodeDecodeError) as exc:
            raise Unsupported(f"{path}: {type(exc).__name__}") from exc
        for section in parser.sections():
            if section.startswith(_PLUGIN_SECTIONS):
                known = {key for s in SETTINGS for sec, key in s.ini if sec == section}
                for option in parser.options(section):
                    if option not in known and option not in _HARMLESS:
                        raise Unsupported(f"{path} sets [{section}] {option}")
    # What the reference loader will see: pdlint's pins where the user's environment does not set them.
    env = {**safety.SET_BY_PDLINT, **os.environ}
    values = {}
    for setting in SETTINGS:
        value = _resolve(setting, parser, env)
        if value not in setting.implemented:
            where = f"{path}" if path is not None else "the environment"
            label = setting.ini[0][1] if setting.ini else setting.name  # the name users write in ansible.cfg
            raise Unsupported(f"{where} sets {label} to {value if value is not UNSET else 'a value'}")
        values[setting.name] = value
    return Settings(safe_group_names=values["TRANSFORM_INVALID_GROUP_CHARS"] in ("always", "silently"))

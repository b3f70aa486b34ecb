"""What ansible-core may run while pdlint loads an inventory, fixed before ansible-core is first imported.

ansible-core reads its configuration once, at import: environment variables
win over any ansible.cfg, so pdlint pins the settings through which an
untrusted inventory (or an ansible.cfg beside it) could add code. Imports no
Ansible module.
"""
from __future__ import annotations

import os
import tempfile

# Static sources only: no scripts, no dynamic plugins. Plugin and collection paths stay ansible-core's
# defaults, and only the group_vars/host_vars vars plugin runs.
_PINNED = {
    "ANSIBLE_INVENTORY_ENABLED": "host_list,yaml,ini,toml",
    "ANSIBLE_INVENTORY_PLUGINS": "~/.ansible/plugins/inventory:/usr/share/ansible/plugins/inventory",
    "ANSIBLE_FILTER_PLUGINS": "~/.ansible/plugins/filter:/usr/share/ansible/plugins/filter",
    "ANSIBLE_TEST_PLUGINS": "~/.ansible/plugins/test:/usr/share/ansible/plugins/test",
    "ANSIBLE_LOOKUP_PLUGINS": "~/.ansible/plugins/lookup:/usr/share/ansible/plugins/lookup",
    "ANSIBLE_VARS_PLUGINS": "~/.ansible/plugins/vars:/usr/share/ansible/plugins/vars",
    "ANSIBLE_VARS_ENABLED": "host_group_vars",
    "ANSIBLE_COLLECTIONS_PATH": "~/.ansible/collections:/usr/share/ansible/collections",
}
# Quiet, strict parsing in every mode.
_ALWAYS = {
    "ANSIBLE_DUPLICATE_YAML_DICT_KEY": "ignore",  # pdlint reports duplicate keys itself, with the line
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
    "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
    "ANSIBLE_DEPRECATION_WARNINGS": "False",
    "ANSIBLE_LOCALHOST_WARNING": "False",
    "ANSIBLE_NOCOLOR": "True",
}
# What configure() may set: the fast loader treats these values as ansible-core's defaults.
SET_BY_PDLINT = {**_PINNED, **_ALWAYS}
# ansible-core's constants for the pinned paths, to check the pins took effect.
CHECKED = {
    "DEFAULT_FILTER_PLUGIN_PATH": "ANSIBLE_FILTER_PLUGINS",
    "DEFAULT_TEST_PLUGIN_PATH": "ANSIBLE_TEST_PLUGINS",
    "DEFAULT_LOOKUP_PLUGIN_PATH": "ANSIBLE_LOOKUP_PLUGINS",
    "DEFAULT_VARS_PLUGIN_PATH": "ANSIBLE_VARS_PLUGINS",
    "DEFAULT_INVENTORY_PLUGIN_PATH": "ANSIBLE_INVENTORY_PLUGINS",
    "VARIABLE_PLUGINS_ENABLED": "ANSIBLE_VARS_ENABLED",
    "COLLECTIONS_PATHS": "ANSIBLE_COLLECTIONS_PATH",
}


def configure(allow_plugins: bool = False) -> None:
    """Pin the settings (the user's own environment variables win); with allow_plugins, ansible.cfg decides."""
    os.environ.setdefault("ANSIBLE_LOCAL_TEMP", tempfile.gettempdir())  # HOME may be read-only in CI
    for key, value in (_ALWAYS if allow_plugins else {**_PINNED, **_ALWAYS}).items():
        os.environ.setdefault(key, value)


def pinned_too_late() -> list[str]:
    """Settings ansible-core took from a config file because it was imported before configure() ran."""
    from ansible import constants as C

    late = []
    for name, env in CHECKED.items():
        if env in os.environ and getattr(C, name, None) != C.config.get_config_value(name):
            late.append(name)
    return late

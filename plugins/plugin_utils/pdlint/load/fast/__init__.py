"""The fast loader: static YAML/INI inventories read with libyaml, resolved as Ansible would."""

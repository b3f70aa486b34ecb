"""Ansible Vault: decrypted only with a password the user gave the Ansible way; plaintext never printed."""
from __future__ import annotations

import os
from typing import Any

from ..finding import Finding, Origin
from ..paths import display_path

HINT = "pass --vault-password-file FILE (or set ANSIBLE_VAULT_PASSWORD_FILE) to check these values"


def password_file(given: str | None) -> str | None:
    """--vault-password-file, else ANSIBLE_VAULT_PASSWORD_FILE from the environment (never from ansible.cfg)."""
    return given or os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE") or None


_SET: list[Any] = []  # the vault context this module set, if any (ansible-core keeps one per process)


def secrets(path: str | None, loader: Any) -> list[tuple[str, Any]]:
    """The vault secrets for loader and for ansible-core's vault context ([] without a password file).

    Without a password, a context an earlier load in this process set (a language server, tests) is dropped:
    it would decrypt this inventory's values with a password this load was not given."""
    from ansible.parsing.vault import VaultSecretsContext, get_file_vault_secret

    if path is None:
        if _SET and VaultSecretsContext._current is _SET[-1]:
            VaultSecretsContext._current = None
        _SET.clear()
        return []

    secret = get_file_vault_secret(filename=path, vault_id="default", loader=loader)
    secret.load()
    pairs = [("default", secret)]
    loader.set_vault_secrets(pairs)
    VaultSecretsContext._current = VaultSecretsContext(pairs)  # initialize() refuses a second load per process
    _SET[:] = [VaultSecretsContext._current]
    return pairs


def locked(path: str) -> Finding:
    """A vault-encrypted file read without a password."""
    return Finding(Origin(display_path(path), 1, 1), "unresolved", "warning",
                   "vault-encrypted file not decrypted: its variables are not checked", HINT)

"""A vault-encrypted vars file read without a password: any variable it may set is unknown, never taken as unset.

Without the password pdlint cannot tell which names the file sets, so a host that reads it (group_vars of one of its
groups or of all, its own host_vars) has every name it does not set elsewhere unresolved: no "missing" error, no
verdict from a default, and a host whose role may be in the file is undecided. With the password the file's values
are checked as any other's.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret

from pdlint.cli import main

PASSWORD = "vault files test"
ENGINE = ("vllm_pd_deployment: chat\nvllm_model: meta-llama/Llama-3.1-8B-Instruct\nvllm_version: 0.30.0\n"
          "vllm_kv_transfer_config: {kv_connector: MoRIIOConnector, kv_role: kv_both}\n")


def _encrypted(path: Path, text: str) -> None:
    path.write_bytes(VaultLib([("default", VaultSecret(PASSWORD.encode()))]).encrypt(text))


def _tree(tmp: Path, locked: str, text: str, plain: dict[str, str]) -> Path:
    (tmp / "pass.txt").write_text(PASSWORD + "\n")
    (tmp / "hosts.yml").write_text("all:\n  children:\n    prefill:\n      hosts: {p1: {}, p2: {}}\n"
                                   "    decode:\n      hosts: {d1: {}}\n")
    for name, body in {**plain, locked: ""}.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(body)
    _encrypted(tmp / locked, text)
    return tmp


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["--no-cache", "hosts.yml", *argv])
    return code, capsys.readouterr().out


def test_a_locked_group_file_hides_every_name_it_may_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    # the connector is in the locked file: without it no pair rule may judge TP 4 against TP 6 (nor call the
    # deployment missing); with the password, MoRIIO's TP rule does
    monkeypatch.chdir(_tree(tmp_path, "group_vars/all.yml", ENGINE,
                            {"group_vars/prefill.yml": "vllm_pd_role: prefill\nvllm_tensor_parallel_size: 4\n",
                             "group_vars/decode.yml": "vllm_pd_role: decode\nvllm_tensor_parallel_size: 6\n"}))
    code, out = _run(capsys)
    assert code == 0, out
    assert "group_vars/all.yml:1:1: unresolved [warning] vault-encrypted file not decrypted" in out
    assert "missing" not in out and "tp-ratio" not in out and "tp[" not in out, out
    code, out = _run(capsys, "--vault-password-file", "pass.txt")
    assert code == 1 and "not decrypted" not in out and "missing" not in out, out
    assert "tp-ratio[moriio-write]" in out and "tp[heads]" in out, out


def test_a_locked_file_of_one_group_leaves_the_other_hosts_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # the common split: group_vars/prefill/ holds a plain file and a vault file (the deployment is in the vault);
    # decode's plain file lacks vllm_pd_deployment: still an error there, and only there
    monkeypatch.chdir(_tree(tmp_path, "group_vars/prefill/vault.yml", "vllm_pd_deployment: chat\n",
                            {"group_vars/prefill/main.yml": "vllm_pd_role: prefill\nvllm_model: x/y\n",
                             "group_vars/decode.yml": "vllm_pd_role: decode\nvllm_model: x/y\n"}))
    code, out = _run(capsys)
    assert code == 1, out
    missing = [line for line in out.splitlines() if "vllm_pd_deployment is missing" in line]
    assert len(missing) == 1 and missing[0].startswith("group_vars/decode.yml:1:"), out
    assert "hosts: d1" in out and "hosts: p1" not in out, out


@pytest.mark.parametrize("locked", ["host_vars/p2.yml", "host_vars/p2/vault.yaml", "host_vars/p2"])
def test_a_locked_host_file_hides_only_that_hosts_names(locked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Ansible's three spellings of a host's vars: a file with an extension, a directory's file, a bare name
    monkeypatch.chdir(_tree(tmp_path, locked, "vllm_pd_deployment: chat\n",
                            {"group_vars/prefill.yml": "vllm_pd_role: prefill\n",
                             "group_vars/decode.yml": "vllm_pd_role: decode\n",
                             "group_vars/all.yml": "vllm_model: meta-llama/Llama-3.1-8B-Instruct\n"}))
    code, out = _run(capsys)
    assert code == 1, out
    assert "group_vars/prefill.yml:1:15: schema vllm_pd_role is set but vllm_pd_deployment is missing" in out, out
    assert "hosts: p1\n" in out or out.count("hosts: p1;") == 1, out
    assert "p2" not in out.replace(locked, ""), out
    assert "hosts: d1" in out

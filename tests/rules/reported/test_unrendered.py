"""A value Ansible cannot render is `unresolved` in every way in, at its file:line:col, and never guessed.

The shapes: an undefined variable, a typo'd one (its right spelling is defined), a filter that fails, a vaulted
value without the password; in vllm_env, in vllm_kv_transfer_config fields, in a port, in TP. The CLI on both
loaders and the collection's check module in a real ansible-playbook run give the same findings; no rule reads a
default where the value is unknown (nixl[side-channel-host]'s `localhost`, the side channel's port 5600).
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible_collection import CHECK_TO_JSON, VALIDATE, play
from conftest import write_tree

from pdlint.cli import main

PASSWORD = "unrendered test"
HOSTS = """\
    all:
      children:
        prefill: {hosts: {p1: {ansible_host: 10.0.0.1}}}
        decode: {hosts: {d1: {ansible_host: 10.0.0.2}}}
    """
FILES = {
    "hosts.yml": HOSTS,
    "group_vars/all.yml": """\
        vllm_pd_deployment: chat
        vllm_model: meta-llama/Llama-3.1-8B-Instruct
        vllm_kv_transfer_config:
          kv_connector: NixlConnector
          kv_role: kv_both
          engine_id: "{{ inventory_hostname | no_such_filter }}"
        vllm_env:
          VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ ansibel_host }}"
        """,
    "group_vars/prefill.yml": """\
        vllm_pd_role: prefill
        api_port: 8100
        vllm_port: "{{ api_prt }}"
        """,
    "group_vars/decode.yml": """\
        vllm_pd_role: decode
        vllm_tensor_parallel_size: "{{ [] | first }}"
        """,
    "host_vars/d1.yml": """\
        gpu_list: "0,1"
        vllm_env:
          CUDA_VISIBLE_DEVICES: "{{ gpu_lst }}"
          VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ ansible_host | regex_replace('(', '') }}"
        """,
}
_SKIPPED = "; rules that need it are skipped"
EXPECTED = {
    ("group_vars/all.yml", 6, 14, "unresolved", "vllm_kv_transfer_config.engine_id cannot be rendered statically "
     "(Syntax error in template: No filter named 'no_such_filter'.)" + _SKIPPED, ("d1", "p1")),
    ("group_vars/all.yml", 8, 32, "unresolved", "vllm_env.VLLM_NIXL_SIDE_CHANNEL_HOST cannot be rendered statically "
     "('ansibel_host' is undefined)" + _SKIPPED, ("p1",)),
    ("group_vars/prefill.yml", 3, 12, "unresolved",
     "vllm_port cannot be rendered statically ('api_prt' is undefined)" + _SKIPPED, ("p1",)),
    ("group_vars/decode.yml", 2, 28, "unresolved", "vllm_tensor_parallel_size cannot be rendered statically "
     "(No first item, sequence was empty.)" + _SKIPPED, ("d1",)),
    ("host_vars/d1.yml", 3, 25, "unresolved", "vllm_env.CUDA_VISIBLE_DEVICES cannot be rendered statically "
     "('gpu_lst' is undefined)" + _SKIPPED, ("d1",)),
    ("host_vars/d1.yml", 4, 32, "unresolved", "vllm_env.VLLM_NIXL_SIDE_CHANNEL_HOST cannot be rendered statically "
     "(The filter plugin 'ansible.builtin.regex_replace' failed: missing ), unterminated subpattern at position 0)"
     + _SKIPPED, ("d1",)),
}
Row = tuple[str | None, int | None, int | None, str, str, tuple[str, ...]]


def _rows(findings: list[dict[str, object]], base: str = "") -> set[Row]:
    return {(str(f["file"]).removeprefix(base) if f["file"] else None, f["line"], f["column"], str(f["rule"]),
             str(f["message"]), tuple(f["hosts"])) for f in findings}  # type: ignore[misc,arg-type]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> set[Row]:
    assert main(["--no-cache", "-f", "json", *argv]) in (0, 1)
    return _rows(json.loads(capsys.readouterr().out))


def _vaulted(text: str, indent: int) -> str:
    """An inline `!vault` value of text, indented for a YAML mapping at indent."""
    sealed = VaultLib([("default", VaultSecret(PASSWORD.encode()))]).encrypt(text).decode()
    return "!vault |\n" + textwrap.indent(sealed, " " * (indent + 2))


@pytest.mark.parametrize("loader", ["fast", "ansible"])
def test_the_cli_reports_each_unrendered_value_at_its_place(loader: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(write_tree(tmp_path, FILES))
    assert _cli(capsys, "--loader", loader, ".") == EXPECTED


def test_no_rule_reads_a_default_for_an_unrendered_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A whole vllm_env that is a template, and a side channel port per instance: no localhost, no port 5600."""
    monkeypatch.chdir(write_tree(tmp_path, {"hosts.yml": """\
        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.1-8B-Instruct
            vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
          hosts:
            p1:
              vllm_pd_role: prefill
              vllm_env: "{{ nixl_env }}"
            d1:
              vllm_pd_role: decode
              vllm_instances:
                - {instance_id: a, port: 8000, env: {VLLM_NIXL_SIDE_CHANNEL_PORT: "{{ side_port }}", X: "0"}}
                - {instance_id: b, port: 8001, env: {VLLM_NIXL_SIDE_CHANNEL_PORT: "{{ side_prt | int }}", X: "1"}}
        """}))
    assert _cli(capsys, "hosts.yml") == {
        ("hosts.yml", 9, 17, "unresolved", "vllm_env cannot be rendered statically ('nixl_env' is undefined)"
         + _SKIPPED, ("p1",)),
        ("hosts.yml", 13, 75, "unresolved", "vllm_env.VLLM_NIXL_SIDE_CHANNEL_PORT cannot be rendered statically "
         "('side_port' is undefined)" + _SKIPPED, ("d1",)),
        ("hosts.yml", 14, 75, "unresolved", "vllm_env.VLLM_NIXL_SIDE_CHANNEL_PORT cannot be rendered statically "
         "('side_prt' is undefined)" + _SKIPPED, ("d1",)),
    }


def test_an_unrendered_gpu_list_is_not_the_default_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Two engines on one host whose env is a template: their CUDA devices are unknown, not both 0."""
    monkeypatch.chdir(write_tree(tmp_path, {"hosts.yml": """\
        all:
          vars: {vllm_pd_deployment: chat, vllm_model: meta-llama/Llama-3.1-8B-Instruct, vllm_host_gpu_count: 8}
          hosts:
            n1:
              vllm_instances:
                - {pd_role: prefill, instance_id: p, port: 8000, env: "{{ prefill_env }}"}
                - {pd_role: decode, instance_id: d, port: 8001, env: "{{ decode_env | from_yaml }}"}
        """}))
    assert _cli(capsys, "hosts.yml") == {
        ("hosts.yml", 6, 63, "unresolved", "vllm_env cannot be rendered statically ('prefill_env' is undefined)"
         + _SKIPPED, ("n1",)),
        ("hosts.yml", 7, 62, "unresolved", "vllm_env cannot be rendered statically ('decode_env' is undefined)"
         + _SKIPPED, ("n1",)),
    }


@pytest.mark.parametrize(("version", "kv", "name", "template", "column"), [
    # the V0 engine switch: a V0 connector is no error when VLLM_USE_V1 may be 0
    ("0.8.5", "{kv_connector: PyNcclConnector, kv_role: kv_both}",
     "VLLM_USE_V1", "{{ use_v1 }}", 29),
    # MoRIIO's mode from the env (0.14.0 - 0.22.x): neither the read nor the write mode's TP verdict is guessed
    ("0.20.0", "{kv_connector: MoRIIOConnector, kv_role: kv_both, kv_connector_extra_config: "
     "{http_port: 8000, proxy_ip: 10.0.0.9, proxy_ping_port: 36367}}",
     "VLLM_MORIIO_CONNECTOR_READ_MODE", "{{ read_mode | bool }}", 49),
])
def test_a_switch_the_rules_read_is_not_taken_as_unset(version: str, kv: str, name: str, template: str, column: int,
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(write_tree(tmp_path, {"hosts.yml": f"""\
        all:
          vars:
            vllm_pd_deployment: chat
            vllm_model: meta-llama/Llama-3.1-8B-Instruct
            vllm_version: {version}
            vllm_kv_transfer_config: {kv}
            vllm_env: {{{name}: "{template}"}}
          hosts:
            p1: {{vllm_pd_role: prefill, vllm_tensor_parallel_size: 2}}
            d1: {{vllm_pd_role: decode, vllm_tensor_parallel_size: 4}}
        """}))
    undefined = template.split()[1]
    assert {r for r in _cli(capsys, "hosts.yml") if "kv-role" not in r[3]} == {
        ("hosts.yml", 7, column, "unresolved", f"vllm_env.{name} cannot be rendered statically ('{undefined}' is "
         "undefined)" + _SKIPPED, ("d1", "p1"))}


def _play_rows(collections: Path, tmp: Path, inventory: Path, **env: str) -> set[Row]:
    proc = play(collections, CHECK_TO_JSON, str(inventory), tmp, **env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return _rows(json.loads((tmp / "play.json").read_text()), f"{inventory.name}/")


def _vault_files(tmp: Path) -> Path:
    """FILES, with the prefill's side channel port and TP, and the decode's kv_port, vaulted inline."""
    write_tree(tmp, {"pass.txt": PASSWORD + "\n"})
    return write_tree(tmp / "inv", {**FILES, "group_vars/prefill.yml": textwrap.dedent(FILES["group_vars/prefill.yml"])
                                    + "vllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: 10.0.0.1\n"
                                    f"  VLLM_NIXL_SIDE_CHANNEL_PORT: {_vaulted('5601', 2)}"
                                    f"vllm_tensor_parallel_size: {_vaulted('4', 0)}",
                                    "group_vars/decode.yml": textwrap.dedent(FILES["group_vars/decode.yml"])
                                    + "vllm_kv_transfer_config:\n  kv_connector: NixlConnector\n  kv_role: kv_both\n"
                                    f"  kv_port: {_vaulted('14579', 2)}"})


def test_the_play_and_the_cli_give_the_same_findings(collections: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    inventory = write_tree(tmp_path / "inv", FILES)
    assert _play_rows(collections, tmp_path, inventory) == EXPECTED
    vaulted = _vault_files(tmp_path / "v")
    monkeypatch.chdir(vaulted)
    cli = _cli(capsys, ".")
    assert ("group_vars/prefill.yml", 6, 32, "unresolved", "vllm_env.VLLM_NIXL_SIDE_CHANNEL_PORT cannot be rendered "
            "statically (vault-encrypted value, no vault password given)" + _SKIPPED, ("p1",)) in cli, cli
    assert ("group_vars/prefill.yml", 13, 28, "unresolved", "vllm_tensor_parallel_size cannot be rendered "
            "statically (vault-encrypted value, no vault password given)" + _SKIPPED, ("p1",)) in cli, cli
    assert ("group_vars/decode.yml", 6, 12, "unresolved", "vllm_kv_transfer_config.kv_port cannot be rendered "
            "statically (vault-encrypted value, no vault password given)" + _SKIPPED, ("d1",)) in cli, cli
    assert _play_rows(collections, tmp_path / "v", vaulted) == cli
    with_password = _cli(capsys, "--vault-password-file", "../pass.txt", ".")
    assert not any("vault" in r[4] for r in with_password), with_password
    assert _play_rows(collections, tmp_path / "v", vaulted,
                      ANSIBLE_VAULT_PASSWORD_FILE=str(tmp_path / "v" / "pass.txt")) == with_password


def test_the_validate_role_keeps_each_place_and_guesses_no_host(collections: Path,
                                                                tmp_path: Path) -> None:
    inventory = write_tree(tmp_path / "inv", {**FILES, "group_vars/decode.yml": "vllm_pd_role: decode\n"
                                              "vllm_tensor_parallel_size: \"{{ decode_tp }}\"\n"})
    proc = play(collections, VALIDATE.replace("roles:", "vars: {pdlint_validate_fail_on: warning}\n  roles:"),
                str(inventory), tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert "inv/group_vars/decode.yml:2:28: unresolved [warning] vllm_tensor_parallel_size cannot be rendered " \
           "statically ('decode_tp' is undefined)" in proc.stdout, proc.stdout
    assert "inv/group_vars/all.yml:8:32: unresolved [warning] vllm_env.VLLM_NIXL_SIDE_CHANNEL_HOST" in proc.stdout
    assert "<inventory>" not in proc.stdout and "advertises" not in proc.stdout and "localhost'" not in proc.stdout

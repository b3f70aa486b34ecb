"""A vaulted side keeps its name readable: "decode TP <vaulted>", never "<vaulted> TP <vaulted>".

The role word (prefill, decode) is said by every message about a side, and a deployment name another host sets in
clear is no secret either: with the vault password both stay readable in the lint and in explain (text and JSON).
Every other decrypted value stays <vaulted>, and so does a vaulted role that is not a role word; without the
password nothing of the file is read.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret

from pdlint.cli import main

PASSWORD = "vault role test"
MODEL = "vllm_model: meta-llama/Llama-3.1-8B-Instruct\n"
NIXL = "vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}\n"


def _sealed(text: str) -> bytes:
    return VaultLib([("default", VaultSecret(PASSWORD.encode()))]).encrypt(text)


def _inline(value: object, indent: int) -> str:
    return "!vault |\n" + "".join(f"{' ' * (indent + 2)}{line}\n" for line in _sealed(str(value)).decode().splitlines())


def _locked_decode(tmp: Path) -> Path:
    """The decode group's file vault-encrypted whole: its role, its deployment (clear on prefill), its TP 6."""
    (tmp / "pass.txt").write_text(PASSWORD + "\n")
    (tmp / "group_vars").mkdir()
    (tmp / "hosts.yml").write_text("all:\n  vars:\n    " + MODEL + "    " + NIXL + "  children:\n"
                                   "    pre: {hosts: {p1: {vllm_tensor_parallel_size: 4}}}\n"
                                   "    dec: {hosts: {d1: {}}}\n")
    (tmp / "group_vars" / "pre.yml").write_text("vllm_pd_role: prefill\nvllm_pd_deployment: chat\n")
    (tmp / "group_vars" / "dec.yml").write_bytes(
        _sealed("vllm_pd_role: decode\nvllm_pd_deployment: chat\nvllm_tensor_parallel_size: 6\n"))
    return tmp


def _inline_prefill(tmp: Path) -> Path:
    """A host's vllm_instances item with its role and TP 3 vaulted inline, the decode at TP 2 in clear; a decode
    item of a deployment vaulted and set nowhere in clear; an item whose misspelt role is vaulted."""
    (tmp / "pass.txt").write_text(PASSWORD + "\n")
    (tmp / "hosts.yml").write_text(
        "all:\n  vars:\n    " + MODEL + "    " + NIXL + "  hosts:\n"
        "    n1:\n      vllm_instances:\n"
        "        - pd_deployment: chat\n          instance_id: pre\n          port: 8000\n"
        "          pd_role: " + _inline("prefill", 10) + "          tensor_parallel_size: " + _inline(3, 10)
        + "        - pd_deployment: " + _inline("hidden-dep", 10)
        + "          instance_id: lone\n          port: 8001\n"
        "          pd_role: " + _inline("decode", 10)
        + "        - pd_deployment: chat\n          instance_id: odd\n          port: 8002\n"
        "          pd_role: " + _inline("decoder", 10)
        + "    n2: {vllm_pd_deployment: chat, vllm_pd_role: decode, vllm_tensor_parallel_size: 2}\n")
    return tmp


def _lint(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["--no-cache", "hosts.yml", *argv])
    return code, capsys.readouterr().out


def test_a_locked_side_is_named_in_the_lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_locked_decode(tmp_path))
    code, out = _lint(capsys, "--vault-password-file", "pass.txt")
    assert code == 1
    assert ("group_vars/dec.yml:3:28: tp-ratio[nixl] decode TP <vaulted> is not a multiple of prefill TP 4: NIXL in "
            "vLLM 0.33.0 pairs ranks by whole ratios\n  hint: use decode TP 4 or 8; hosts: d1, p1; deployment: chat\n"
            in out), out
    assert " 6 " not in out and "TP 6" not in out, out
    code, out = _lint(capsys, "--vault-password-file", "pass.txt", "-f", "json")
    [ratio] = [f for f in json.loads(out) if f["rule"] == "tp-ratio[nixl]"]
    assert (ratio["file"], ratio["line"], ratio["column"], ratio["message"].split(":")[0], ratio["hint"],
            ratio["deployment"]) == ("group_vars/dec.yml", 3, 28, "decode TP <vaulted> is not a multiple of prefill "
                                     "TP 4", "use decode TP 4 or 8", "chat")


def test_a_locked_side_is_named_in_explain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_locked_decode(tmp_path))
    assert main(["explain", "hosts.yml", "--vault-password-file", "pass.txt"]) == 0
    out = capsys.readouterr().out
    assert "deployment chat (vLLM 0.33.0)" in out and "\n  decode   d1      d1     <vaulted>  1 " in out, out
    assert "tp-ratio[nixl] (error) decode TP <vaulted> is not a multiple of prefill TP 4" in out, out
    assert main(["explain", "hosts.yml", "--vault-password-file", "pass.txt", "-f", "json"]) == 0
    [dep] = json.loads(capsys.readouterr().out)["deployments"]
    assert dep["name"] == "chat"
    assert [(e["name"], e["role"], e["tp"]) for e in dep["engines"]] == [("p1", "prefill", 4), ("d1", "decode",
                                                                                               "<vaulted>")]


def test_without_the_password_the_locked_side_stays_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_locked_decode(tmp_path))
    code, out = _lint(capsys)
    assert code == 0
    assert out.startswith("group_vars/dec.yml:1:1: unresolved [warning] vault-encrypted file not decrypted: its "
                          "variables are not checked\n"), out
    assert "decode TP" not in out and "tp-ratio" not in out, out


def test_an_inline_vaulted_role_is_named_and_the_rest_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_inline_prefill(tmp_path))
    code, out = _lint(capsys, "--vault-password-file", "pass.txt", "-f", "json")
    assert code == 1, out
    found = {(f["rule"], f["line"], f["column"], f["message"], f["deployment"]) for f in json.loads(out)}
    assert ("tp-ratio[nixl]", 51, 85, "prefill TP <vaulted> is not a multiple of decode TP 2: NIXL in vLLM 0.33.0 "
            "pairs ranks by whole ratios", "chat") in found, found
    # not a role word, or a name nobody says in clear: secrets
    assert ("deployment[incomplete]", 25, 26, "deployment '<vaulted>' has no prefill instance", "<vaulted>") in found
    assert ("schema", 44, 20, "vllm_instances[2].pd_role: '<vaulted>' is not one of prefill, decode", None) in found
    assert "decoder" not in out and "hidden-dep" not in out and "TP 3" not in out, out
    assert main(["explain", "hosts.yml", "--vault-password-file", "pass.txt"]) == 0
    out = capsys.readouterr().out
    assert "\n  prefill  pre     n1     <vaulted>  1 " in out and "\n  decode   n2      n2     2  " in out, out
    assert "\ndeployment <vaulted> (vLLM 0.33.0)\n" in out and "\n  decode  lone    n1     1 " in out, out
    assert "decoder" not in out and "hidden-dep" not in out, out

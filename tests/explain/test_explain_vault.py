"""`pdlint explain` with a vault password: decrypted values are <vaulted> in every format, and so is what shows them."""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from ansible.parsing.vault import VaultLib, VaultSecret
from conftest import ROOT

from pdlint.cli import main

SCHEMA = json.loads((ROOT / "schemas" / "pdlint-explain.schema.json").read_text(encoding="utf-8"))
PASSWORD = "explain vault test"
# Each secret is a text that appears nowhere else in the explain output.
SECRETS = {"deployment": "chat-secret-dep", "port": 8123, "devices": "6,7", "side": "5719", "node": "rack-secret-9",
           "tp": 2}
SHOWN = ["chat-secret-dep", "8123", "6,7", "6-7", "5719", "rack-secret-9"]


def _vault(value: object) -> str:
    text = VaultLib([("default", VaultSecret(PASSWORD.encode()))]).encrypt(str(value)).decode()
    return "!vault |\n" + "".join(f"  {line}\n" for line in text.splitlines())


def _inventory(tmp: Path) -> Path:
    (tmp / "pass.txt").write_text(PASSWORD + "\n")
    (tmp / "host_vars").mkdir()
    (tmp / "group_vars").mkdir()
    (tmp / "hosts.yml").write_text(
        "all:\n  vars:\n    vllm_model: meta-llama/Llama-3.1-8B-Instruct\n"
        "    vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}\n"
        "  hosts:\n    p1: {vllm_pd_role: prefill, vllm_tensor_parallel_size: 4}\n    d1: {vllm_pd_role: decode}\n")
    (tmp / "group_vars" / "all.yml").write_text("vllm_pd_deployment: " + _vault(SECRETS["deployment"]))
    (tmp / "host_vars" / "p1.yml").write_text(
        "vllm_port: " + _vault(SECRETS["port"]) + "vllm_node: " + _vault(SECRETS["node"])
        + "vllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_PORT: " + _vault(SECRETS["side"]).replace("\n  ", "\n    "))
    (tmp / "host_vars" / "d1.yml").write_text(
        "vllm_tensor_parallel_size: " + _vault(SECRETS["tp"])
        + "vllm_env:\n  CUDA_VISIBLE_DEVICES: " + _vault(SECRETS["devices"]).replace("\n  ", "\n    "))
    return tmp


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["explain", "hosts.yml", "--vault-password-file", "pass.txt", *argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html"])
def test_explain_never_prints_a_decrypted_value(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_inventory(tmp_path))
    out = _explain(capsys, "-f", fmt)
    for secret in SHOWN:
        assert not re.search(rf"(?<![\w.]){re.escape(secret)}(?![\w.])", out), (secret, out)
    assert "vaulted" in out


def test_explain_masks_what_shows_a_vaulted_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(_inventory(tmp_path))
    doc = json.loads(_explain(capsys, "-f", "json"))
    jsonschema.validate(doc, SCHEMA)
    (dep,) = doc["deployments"]
    assert dep["name"] == "<vaulted>"
    engines = {e["hosts"][0]: e for e in dep["engines"]}
    assert engines["d1"]["tp"] == "<vaulted>" and engines["d1"]["workers"] == []  # the ranks would show the TP
    assert engines["p1"]["tp"] == 4 and {w["node"] for w in engines["p1"]["workers"]} == {"<vaulted>"}
    ports = {(p["host"], p["what"]): p["port"] for p in dep["ports"]}
    assert ports[("p1", "API port")] == "<vaulted>" and ports[("d1", "API port")] == 8000
    assert ports[("p1", "NIXL side channel (DP rank 0)")] == "<vaulted>"
    assert ports[("d1", "NIXL side channel")] == "<vaulted>"  # its ranks and count would show the TP
    (pair,) = dep["pairs"]
    assert pair["links"] == [] and pair["acks"] is None and "vault" in pair["note"]
    assert pair["why"] == [] and "why-block not shown" in pair["note"]  # its PP/DP lines would show the TP


def test_explain_without_secrets_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """No vault values: the same model as before (the masking costs nothing and changes nothing)."""
    monkeypatch.chdir(ROOT)
    doc = json.loads(_explain_plain(capsys))
    assert "<vaulted>" not in json.dumps(doc)
    assert all(isinstance(e["tp"], int) and e["workers"] for d in doc["deployments"] for e in d["engines"])


def _explain_plain(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["explain", "examples/inventory", "-f", "json"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_lint_never_prints_a_vaulted_deployment_name(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Findings carry their deployment's name (JSON, SARIF): a vaulted vllm_pd_deployment is <vaulted> there too."""
    monkeypatch.chdir(_inventory(tmp_path))
    (tmp_path / "hosts.yml").write_text((tmp_path / "hosts.yml").read_text().replace("    d1: {vllm_pd_role: decode}\n",
                                                                                     ""))
    main(["hosts.yml", "--vault-password-file", "pass.txt", "-f", fmt])
    out = capsys.readouterr().out
    assert "deployment[incomplete]" in out and "chat-secret-dep" not in out, out

"""The CLI contract: the seed case, origins, JSON shape, exit codes, no tracebacks."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, write_tree

from pdlint.cli import inventory_for, main

SEED = {
    "hosts.yml": """\
        all:
          children:
            prefill: {hosts: {p1: {}}}
            decode: {hosts: {d1: {}}}
          vars:
            vllm_pd_deployment: r1
            vllm_model: deepseek-ai/DeepSeek-V3
        """,
    "group_vars/prefill.yml": """\
        vllm_pd_role: prefill
        vllm_tensor_parallel_size: 4
        vllm_kv_transfer_config:
          kv_connector: MoRIIOConnector
          kv_role: kv_producer
          kv_connector_extra_config: {http_port: 8000, read_mode: "true"}
        """,
    "group_vars/decode.yml": """\
        vllm_pd_role: decode
        vllm_tensor_parallel_size: {tp}
        vllm_kv_transfer_config:
          kv_connector: MoRIIOConnector
          kv_role: kv_consumer
          kv_connector_extra_config: {{http_port: 8000, read_mode: "true"}}
        """,
}


def seed(tmp_path: Path, tp: int) -> Path:
    files = dict(SEED)
    files["group_vars/decode.yml"] = SEED["group_vars/decode.yml"].format(tp=tp)
    return write_tree(tmp_path, files)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_seed_mistake_is_reported_at_the_decode_tp_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    code, out, _ = run(["hosts.yml", "--format", "json"], capsys)
    assert code == 1
    moriio = [f for f in json.loads(out) if f["rule"] == "tp-ratio[moriio]"]
    assert len(moriio) == 1
    f = moriio[0]
    assert (f["file"], f["line"], f["column"]) == ("group_vars/decode.yml", 2, 28)
    assert f["message"] == "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"
    assert f["hint"] == "use decode TP 4 or 8"
    assert f["hosts"] == ["d1", "p1"] and f["deployment"] == "r1"


def test_seed_fixed_passes(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 8))
    code, out, _ = run(["hosts.yml"], capsys)
    assert code == 0, out
    assert "tp-ratio" not in out
    assert out.startswith("pdlint: 0 errors in 2 hosts, 1 deployment")


def test_text_format(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    code, out, _ = run(["group_vars/decode.yml"], capsys)  # a vars file names its inventory
    assert code == 1
    assert ("group_vars/decode.yml:2:28: tp-ratio[moriio] decode TP 6 is not a multiple of prefill TP 4 "
            "(MoRIIO needs 6/4 acks)\n  hint: use decode TP 4 or 8; hosts: d1, p1; deployment: r1\n") in out


def test_json_shape(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    _, out, _ = run([".", "-f", "json"], capsys)
    findings = json.loads(out)
    assert findings
    keys = {"rule", "severity", "message", "hint", "file", "line", "column", "hosts", "deployment"}
    for f in findings:
        assert set(f) == keys
        assert f["severity"] in ("error", "warning", "info")
        assert isinstance(f["hosts"], list) and all(isinstance(h, str) for h in f["hosts"])
        assert f["hint"] is None or isinstance(f["hint"], str)
        assert f["line"] is None or isinstance(f["line"], int)


def test_malformed_yaml_exit_2_with_position(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    (tmp_path / "group_vars/decode.yml").write_text("vllm_pd_role: decode\nvllm_env: {a: [1}\n")
    code, out, err = run(["hosts.yml"], capsys)
    assert code == 2
    assert out.startswith("group_vars/decode.yml:2:") and "load-error" in out
    assert "Traceback" not in out + err


def test_missing_path_is_exit_2(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["nope.yml"], capsys)
    assert code == 2 and "nope.yml" in err


def test_usage_error_is_exit_2(capsys) -> None:
    assert run(["--format", "xml"], capsys)[0] == 2


def test_strict_fails_on_warnings(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars: {vllm_pd_deployment: d, vllm_model: x/y, vllm_tensor_parallel_size: 2}\n"
        "  hosts: {p1: {vllm_pd_role: prefill}, d1: {vllm_pd_role: decode}}\n")
    assert run(["hosts.yml"], capsys)[0] == 0
    assert run(["hosts.yml", "--strict"], capsys)[0] == 1


def test_ansible_cfg_names_the_inventory(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    (tmp_path / "ansible.cfg").write_text("[defaults]\ninventory = hosts.yml\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "ansible.cfg"))
    # A fresh process: ansible-core reads ansible.cfg once, at import.
    proc = subprocess.run([sys.executable, "-m", "pdlint.cli"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "tp-ratio[moriio]" in proc.stdout, proc.stderr


def test_example_inventory(tmp_path, monkeypatch, capsys) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["examples/inventory"], capsys)
    assert code == 1
    assert "examples/inventory/host_vars/mi-b02.yml:2:28: tp-ratio[moriio]" in out
    assert run(["examples/ini/hosts.ini"], capsys)[0] == 0


def test_rules_command(capsys) -> None:
    code, out, _ = run(["rules"], capsys)
    assert code == 0 and "tp-ratio[moriio]" in out
    code, out, _ = run(["rules", "tp-ratio[moriio]"], capsys)
    assert code == 0 and "PASS:" in out and "FAIL:" in out
    assert run(["rules", "nope"], capsys)[0] == 2


@pytest.mark.parametrize(("path", "inventory"), [
    ("inv/group_vars/all.yml", "inv"), ("inv/host_vars/h1/main.yml", "inv"), ("inv/hosts.yml", "inv/hosts.yml"),
    ("group_vars/x.yml", "."),
])
def test_inventory_for(path: str, inventory: str) -> None:
    assert inventory_for(path) == inventory


@pytest.mark.parametrize("paths", [
    ["hosts.yml", "group_vars/decode.yml"], ["group_vars/decode.yml", "hosts.yml"],
    [".", "hosts.yml"], ["hosts.yml", "."], ["group_vars/decode.yml", "group_vars/prefill.yml"],
    ["hosts.yml", "./hosts.yml"], ["-i", "hosts.yml", "group_vars/decode.yml"], [".", "group_vars/decode.yml"],
])
def test_paths_naming_one_inventory_check_it_once(paths, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    code, out, _ = run(paths, capsys)
    assert code == 1 and out.count("tp-ratio[moriio]") == 1, out
    assert "2 errors in 2 hosts, 1 deployment;" in out


def test_load_error_rule_reported_by_cli(tmp_path, monkeypatch, capsys) -> None:
    """The "load-error" rule: an unparsable inventory file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    p1: {a: 1\n")
    code, out, _ = run(["hosts.yml", "-f", "json"], capsys)
    assert code == 2
    [f] = json.loads(out)
    assert f["rule"] == "load-error" and f["file"] == "hosts.yml" and f["line"] == 4


@pytest.mark.parametrize(("rule", "names", "expected"), [
    ("gpu[count]", {"gpu[count]"}, True), ("gpu[count]", {"gpu"}, True), ("gpu[count]", {"gpu[overlap]"}, False),
    ("schema", {"schema"}, True), ("schema", set(), False), ("tp[heads]", {"tp-ratio"}, False),
])
def test_skip_names_a_rule_or_its_family(rule: str, names: set[str], expected: bool) -> None:
    from pdlint.rule_ids import named

    assert named(rule, names) is expected


@pytest.mark.parametrize(("argv", "expected"), [
    (["--ignore", "tp-raito", "hosts.yml"], "pdlint: error: --ignore: unknown rule 'tp-raito'; did you mean tp-ratio"),
    (["--select", "gpu,tpp", "hosts.yml"], "pdlint: error: --select: unknown rule 'tpp'; did you mean tp?"),
    (["rules", "kv-heads[moriio]"], "pdlint: error: unknown rule 'kv-heads[moriio]'; did you mean "
                                     "kv-heads[moriio-replicated]"),
])
def test_unknown_rule_names_say_which_was_meant(argv, expected, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(seed(tmp_path, 6))
    code, _, err = run(argv, capsys)
    assert code == 2 and err.startswith(expected), err
    assert "pdlint: error: pdlint" not in err


def test_no_inventory_says_what_to_pass(tmp_path) -> None:
    # No PATH, no -i, and the inventory Ansible is configured with (here through its environment) is missing.
    env = {**os.environ, "ANSIBLE_INVENTORY": str(tmp_path / "etc-ansible-hosts")}
    proc = subprocess.run([sys.executable, "-m", "pdlint.cli"], capture_output=True, text=True, check=False,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 2
    assert "no inventory given" in proc.stderr and "pass the inventory directory or file" in proc.stderr, proc.stderr


def test_models_lists_every_known_model_with_its_heads(capsys) -> None:
    table = json.loads((ROOT / "plugins/plugin_utils/pdlint/topology/data/model-attention-facts.json").read_text())
    code, out, _ = run(["models"], capsys)
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if not line.startswith(" ")}
    assert set(rows) == set(table)
    for name, entry in table.items():
        heads, kv_heads, mla, _ssm, _layers = rows[name]
        assert (int(heads), int(kv_heads), mla) == (entry["num_attention_heads"], entry["num_key_value_heads"],
                                                    str(bool(entry["mla"])).lower()), name


@pytest.mark.parametrize(("words", "code", "expected"), [
    (["deepseek-r1"], 0, "deepseek-ai/DeepSeek-V3 128 128 true"),
    (["no-such-model"], 2, "set vllm_model_num_attention_heads"),
])
def test_models_filter(words, code, expected, capsys) -> None:
    got, out, err = run(["models", *words], capsys)
    assert got == code and expected in " ".join((out + err).split())

"""vllm_* names outside the contract: vLLM's arguments checked per release, a role's own names left alone, typos
caught (schema/names.py), in the CLI and the editor schema."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import ROOT

from pdlint import cli
from pdlint.schema import names
from pdlint.schema.document import generate

ROLE = ROOT / "tests" / "fixtures" / "role-defaults"
TYPOS = {"vllm_tensor_paralel_size": "vllm_tensor_parallel_size", "vllm_max_num_seq": "vllm_max_num_seqs"}


def _schema_findings(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict]:
    cli.main([*args, "--format", "json", "--no-cache"])
    return [f for f in json.loads(capsys.readouterr().out) if f["rule"] == "schema"]


def test_role_defaults_give_no_error_and_typos_do(capsys: pytest.CaptureFixture[str]) -> None:
    found = _schema_findings([str(ROLE)], capsys)
    assert {Path(f["file"]).name for f in found} == {"gpu-d1.yml"}  # group_vars/all.yml: the role's defaults
    assert sorted((f["line"], f["column"], f["hint"]) for f in found) == [
        (2, 1, "did you mean vllm_tensor_parallel_size?"), (3, 1, "did you mean vllm_max_num_seqs?"), (4, 30, None)]
    assert "argument --gpu-memory-utilization: invalid float value: 'most'" in found[-1]["message"]


def test_own_variables_silence_a_look_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / ".pdlint.yaml"
    config.write_text('own_variables: ["vllm_max_num_*"]\n', encoding="utf-8")
    found = _schema_findings([str(ROLE), "--config", str(config)], capsys)
    assert [f["line"] for f in found] == [2, 4]


@pytest.mark.parametrize(("version", "value", "bad"), [("0.31.0", "all", False), ("0.32.0", "all", True),
                                                       ("0.32.0", "align", False), ("0.32.0", None, False),
                                                       ("0.14.1", "all", False)])
def test_an_argument_is_checked_as_the_hosts_release_parses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               version: str, value: object, bad: bool) -> None:
    """--mamba-cache-mode: align/all/none 0.15.0-0.31.0, align/none from 0.32.0 (CacheConfig.mamba_cache_mode);
    before 0.15.0 no such argument, so the name is the role's."""
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"h": {
        "vllm_version": version, "vllm_mamba_cache_mode": value, "vllm_enable_prefix_caching": False}}}}),
        encoding="utf-8")
    found = _schema_findings([str(tmp_path)], capsys)
    assert [f["line"] for f in found] == ([5] if bad else [])  # safe_dump sorts: vllm_version last
    if bad:
        assert found[0]["message"] == ("vllm_mamba_cache_mode: argument --mamba-cache-mode: invalid choice: 'all' "
                                       f"(choose from 'align', 'none') (vLLM {version} refuses to start)")


def test_a_switch_takes_a_boolean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hosts.yml").write_text('all:\n  hosts:\n    h:\n      vllm_enforce_eager: "false"\n', encoding="utf-8")
    [found] = _schema_findings([str(tmp_path)], capsys)
    assert (found["line"], found["column"]) == (4, 27)
    assert "--enforce-eager is a switch" in found["message"]


@pytest.mark.parametrize(("name", "typo"), [
    ("vllm_tensor_paralel_size", "vllm_tensor_parallel_size"), ("vllm_tensor_parallel_sizes", "vllm_tensor_parallel_size"),
    ("vllm_pd_deplyoment", "vllm_pd_deployment"), ("vllm_pd_rloe", "vllm_pd_role"), ("vllm_mdoel", "vllm_model"),
    ("vllm_image", None), ("vllm_gpus", None), ("vllm_container_name", None), ("vllm_http_port", None),
    ("vllm_models", None), ("vllm_tensor_parallel_size", None),
])
def test_typos_are_one_edit(name: str, typo: str | None) -> None:
    assert names.typo_of(name, names.CONTRACT) == typo


def test_editor_schema_agrees_on_contract_typos_and_values() -> None:
    """The editor flags what the CLI flags, save typos of vLLM arguments (too many to spell out as a regex)."""
    validator = jsonschema.Draft7Validator(generate())
    flagged = set()
    for path in sorted(ROLE.glob("*_vars/*.yml")):
        for error in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))):
            flagged.add(str(error.path[0]) if error.path else error.message.split("'")[1])
    assert flagged == {"vllm_tensor_paralel_size", "vllm_gpu_memory_utilization"}
    pattern = next(p for p in generate()["patternProperties"] if p.startswith("^vllm_"))
    import re

    for name in ("vllm_image", "vllm_pd_deplyoment", "vllm_tensor_paralel_size", "vllm_models", "vllm_mdoel"):
        assert (re.match(pattern, name) is None) is (names.typo_of(name, names.CONTRACT) is not None), name


def test_templated_values_wait_for_ansible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    h:\n      vllm_max_num_seqs: \"{{ seqs }}\"\n"
        "      vllm_served_model_name: [\"{{ name }}\", b]\n      vllm_enforce_eager: \"{{ eager | bool }}\"\n",
        encoding="utf-8")
    assert _schema_findings([str(tmp_path)], capsys) == []

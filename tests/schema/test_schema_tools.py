"""The committed JSON Schema in the real tools: check-jsonschema, pdlint's CLI and yaml-language-server agree."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT
from lsp_client import LanguageServer

from pdlint import cli

SCHEMA = ROOT / "schemas" / "pdlint-vars.schema.json"
FIXTURES = ROOT / "tests" / "fixtures" / "schema"
MARK = "# schema-error"
# The rules that own a schema check in the CLI (kv-role[invalid] says why a kv_role is wrong).
# connector[extra-key]: an extra-config key the connector never reads, per release (a warning; the editor flags it)
SCHEMA_RULES = {"schema", "kv-role[invalid]", "connector[extra-key]"}


def vars_files(case: str) -> list[Path]:
    return sorted((FIXTURES / case).glob("*_vars/*.yml"))


def marked_lines(path: Path) -> list[int]:
    """The 1-based lines the fixture says must get a schema diagnostic."""
    return [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.endswith(MARK)]


def top_level_names(path: Path) -> set[str]:
    """The top-level variable each marked line belongs to (check-jsonschema reports at that level)."""
    names: set[str] = set()
    current = ""
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.match(r"[A-Za-z_]", line):
            current = line.split(":", 1)[0]
        if n in marked_lines(path):
            names.add(current)
    return names


def check_jsonschema(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("check-jsonschema")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120, check=False)


def cli_lines(case: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[Path, list[int]]]:
    """pdlint's exit code and its schema findings' lines, per file, for a fixture inventory."""
    code = cli.main([str(FIXTURES / case), "--format", "json"])
    found = json.loads(capsys.readouterr().out)
    lines: dict[Path, list[int]] = {f: [] for f in vars_files(case)}
    for f in found:
        if f["rule"] in SCHEMA_RULES:
            lines.setdefault(Path(f["file"]).resolve(), []).append(f["line"])
    return code, {k: sorted(v) for k, v in lines.items()}


def test_fixtures_mark_every_kind_of_mistake() -> None:
    assert {f.parent.name for f in vars_files("bad") if marked_lines(f)} == {"group_vars", "host_vars"}
    assert all(not marked_lines(f) for f in vars_files("good"))
    assert "kv_role: kv_producter" in (FIXTURES / "bad/host_vars/d1.yml").read_text()
    assert "!vault" in (FIXTURES / "good/host_vars/p1.yml").read_text()


# check-jsonschema ---------------------------------------------------------------------------------------------

def test_schema_passes_the_draft7_metaschema() -> None:
    result = check_jsonschema("--check-metaschema", str(SCHEMA))
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_jsonschema_accepts_the_good_fixtures_and_the_examples() -> None:
    # check-jsonschema has no custom YAML tags (python-jsonschema/check-jsonschema#489): vaulted files are pdlint's.
    files = [f for f in vars_files("good") if "!vault" not in f.read_text()]
    files += sorted((ROOT / "examples" / "inventory").glob("*_vars/*.yml"))
    result = check_jsonschema("--schemafile", str(SCHEMA), *map(str, files))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", vars_files("bad"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_check_jsonschema_rejects_each_bad_variable(path: Path) -> None:
    result = check_jsonschema("--schemafile", str(SCHEMA), "-o", "json", str(path))
    assert result.returncode == 1, result.stdout + result.stderr
    errors = json.loads(result.stdout)["errors"]
    flagged = set()
    for e in errors:
        if e["path"] == "$":  # unknown top-level names, all in one additionalProperties message
            flagged |= set(re.findall(r"'((?:vllm|pdlint)_\w+)'", e["message"]))
        else:
            flagged.add(e["path"].split(".")[1])
    assert flagged == top_level_names(path)


# pdlint CLI ----------------------------------------------------------------------------------------------------

def test_cli_flags_exactly_the_marked_lines(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = cli_lines("bad", capsys)
    assert code == 1
    assert lines == {f: marked_lines(f) for f in vars_files("bad")}


def test_cli_accepts_the_good_fixture_with_a_vault_value(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = cli_lines("good", capsys)
    assert code == 0
    assert all(not v for v in lines.values())


def test_cli_says_which_name_was_meant(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main([str(FIXTURES / "bad"), "--format", "json"])
    # (an extra-config key the connector never reads: connector[extra-key], the connector's release's keys)
    hints = {f["message"].split("'")[1]: f["hint"] for f in json.loads(capsys.readouterr().out)
             if (f["rule"] == "schema" and "unknown" in f["message"]) or f["rule"] == "connector[extra-key]"}
    assert hints["vllm_tensor_paralel_size"] == "did you mean vllm_tensor_parallel_size?"
    assert hints["pdlint_skips"] == "did you mean pdlint_skip?"
    assert hints["notfy_port"] == "did you mean notify_port?"
    assert hints["backend"] == "did you mean backends?"


def test_remembered_values_give_the_same_findings() -> None:
    from pdlint.load.reference import loader as reference
    from pdlint.schema import check as schema

    hosts = reference.load([str(FIXTURES / "bad")])
    schema._SEEN.clear()
    fresh = [list(schema.check(hv)) for hv in hosts]
    assert schema._SEEN and fresh == [list(schema.check(hv)) for hv in hosts]
    assert sum(map(len, fresh)) >= 8


@pytest.mark.parametrize("values", [
    {"vllm_kv_transfer_config": {"kv_connector": "NixlConnector", "kv_connector_extra_config": {1: 2, "a": 3}}},
    {"vllm_kv_transfer_config": {1: 2, "kv_role": "kv_both"}},
    {"vllm_env": {1: object()}},
])
def test_schema_rule_reports_odd_keys_from_a_play(values: dict[object, object]) -> None:
    from pdlint.hostvars import HostVars
    from pdlint.schema import check as schema

    found = [f.rule for f in schema.check(HostVars("h", values))]  # no TypeError
    # a finding each, but extra-config keys: connector[extra-key] (vLLM never checks them) reports those
    assert found if "kv_connector_extra_config" not in str(values) else found == []


# yaml-language-server ------------------------------------------------------------------------------------------

def language_server_argv() -> list[str]:
    """The real yaml-language-server, installed by .ci/run (npm --prefix tests/lsp); in CI its absence fails."""
    local = ROOT / "tests" / "lsp" / "node_modules" / ".bin" / "yaml-language-server"
    exe = os.environ.get("PDLINT_YAML_LANGUAGE_SERVER") or (str(local) if local.exists() else None) \
        or shutil.which("yaml-language-server")
    if exe is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail("yaml-language-server is not installed, and CI must exercise it (npm install --prefix tests/lsp)")
        pytest.skip("yaml-language-server is not installed: npm install --prefix tests/lsp")
    return [exe, "--stdio"]


def documented_settings() -> dict[str, object]:
    """The VS Code settings block of the README's "Editor setup" section, as yaml-language-server takes them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)```", readme.split("## Editor setup", 1)[1], re.DOTALL)
    assert block, "README's Editor setup has no ```json settings block"
    return {key.removeprefix("yaml."): value for key, value in json.loads(block.group(1)).items()}


def settings(schemas: bool = True, custom_tags: bool = True) -> dict[str, object]:
    """The documented settings (yaml.schemas globs, yaml.customTags), or without one of them."""
    yaml: dict[str, object] = {"validate": True, "hover": True, "completion": True, **documented_settings()}
    if not schemas:
        del yaml["schemas"]
    if not custom_tags:
        del yaml["customTags"]
    return {"yaml": yaml}


def start(config: dict[str, object]) -> LanguageServer:
    return LanguageServer(language_server_argv(), ROOT, config)  # the workspace the settings are relative to


@pytest.fixture(scope="module")
def server() -> Iterator[LanguageServer]:
    ls = start(settings())
    yield ls
    ls.close()


def editor_lines(ls: LanguageServer, path: Path) -> list[int]:
    uri = ls.open(path)
    return sorted(d["range"]["start"]["line"] + 1 for d in ls.diagnostics_for(uri))


def test_editor_flags_kv_producter_in_host_vars(server: LanguageServer) -> None:
    path = FIXTURES / "bad" / "host_vars" / "d1.yml"
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "kv_producter" in text)
    uri = server.open(path)
    diagnostics = server.diagnostics_for(uri)
    assert [d["range"]["start"]["line"] + 1 for d in diagnostics] == [line]
    assert "kv_producer" in diagnostics[0]["message"]


@pytest.mark.parametrize("path", vars_files("bad"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_editor_flags_exactly_the_marked_lines(server: LanguageServer, path: Path) -> None:
    assert editor_lines(server, path) == marked_lines(path)


@pytest.mark.parametrize("path", vars_files("good"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_editor_accepts_the_good_files(server: LanguageServer, path: Path) -> None:
    assert editor_lines(server, path) == []
    # ...because the schema applies and accepts them, not because none was associated: hover shows its text.
    line, text = next((n, t) for n, t in enumerate(path.read_text().splitlines()) if re.match(r"vllm_\w+: \S", t))
    hover = server.request("textDocument/hover", {
        "textDocument": {"uri": path.resolve().as_uri()}, "position": {"line": line, "character": text.index(": ") + 2}})
    assert f"**{text.split(':')[0]}**" in hover["contents"]["value"]


def test_editor_and_cli_agree_on_the_fixtures(server: LanguageServer, capsys: pytest.CaptureFixture[str]) -> None:
    for case in ("bad", "good"):
        _, lines = cli_lines(case, capsys)
        assert {f: editor_lines(server, f) for f in vars_files(case)} == lines


def test_editor_hover_shows_the_spec_text(server: LanguageServer) -> None:
    from pdlint.contract import BY_NAME

    path = FIXTURES / "good" / "group_vars" / "chat_prefill.yml"
    # On the value: yaml-language-server 1.19.2 answers null on the key of an integer-valued property.
    hover = server.request("textDocument/hover", {
        "textDocument": {"uri": server.open(path)}, "position": {"line": 1, "character": 27}})
    assert "**vllm_tensor_parallel_size**" in hover["contents"]["value"]
    assert BY_NAME["tensor_parallel_size"].description in hover["contents"]["value"]


def test_editor_offers_prefill_and_decode_snippets(server: LanguageServer, tmp_path: Path) -> None:
    empty = tmp_path / "host_vars" / "new.yml"
    empty.parent.mkdir()
    empty.write_text("\n")
    result = server.request("textDocument/completion", {
        "textDocument": {"uri": server.open(empty)}, "position": {"line": 0, "character": 0}})
    items = {i["label"]: i for i in (result["items"] if isinstance(result, dict) else result)}
    assert "vllm_pd_role: decode" in items["pdlint decode instance"]["insertText"]
    assert "kv_role: kv_producer" in items["pdlint prefill instance"]["insertText"]


def test_editor_quick_fix_offers_the_meant_name(server: LanguageServer) -> None:
    path = FIXTURES / "bad" / "group_vars" / "all.yml"
    uri = server.open(path)
    typo = next(d for d in server.diagnostics_for(uri) if "vllm_tensor_paralel_size" in d["message"])
    actions = server.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": typo["range"], "context": {"diagnostics": [typo]}})
    assert "vllm_tensor_parallel_size" in [a["title"] for a in actions]


def test_modeline_alone_associates_the_schema() -> None:
    ls = start(settings(schemas=False))
    try:
        with_modeline = FIXTURES / "bad" / "host_vars" / "d1.yml"
        without = FIXTURES / "bad" / "group_vars" / "chat_prefill.yml"
        assert "yaml-language-server: $schema=" in with_modeline.read_text()
        assert editor_lines(ls, with_modeline) == marked_lines(with_modeline)
        assert editor_lines(ls, without) == []
    finally:
        ls.close()


def test_vault_needs_the_documented_custom_tags() -> None:
    vaulted = FIXTURES / "good" / "host_vars" / "p1.yml"
    ls = start(settings(custom_tags=False))
    try:
        uri = ls.open(vaulted)
        assert any("!vault" in d["message"] for d in ls.diagnostics_for(uri))
    finally:
        ls.close()


@pytest.mark.parametrize("text", ["{{ tp }}", "{% if x %}4{% endif %}", "{# two for now #}2", "4", "a {b} c",
                                  "{ #}", "{{", "50%", "{#"])
def test_one_template_test_for_the_loaders_the_schema_and_the_contract(text: str) -> None:
    """Ansible renders any string holding a Jinja start string, comments ({# #}) included: the loaders
    (hostvars.is_template), the editor schema's template pattern and the schema rule decide alike."""
    import json
    import re

    import jsonschema

    from pdlint.contract import TEMPLATE
    from pdlint.hostvars import is_template
    from pdlint.schema import check

    assert bool(re.search(TEMPLATE, text)) == is_template(text)
    schema = json.loads(check.dumps())
    valid = jsonschema.Draft7Validator(schema).is_valid({"vllm_tensor_parallel_size": text})
    assert valid == (is_template(text) or text == "4"), text

"""vllm_version: how a release is named, which one applies, and where a pdlint user sees it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.cli import main
from pdlint.vllm.releases import DEFAULT, KNOWN, NEWEST, R, Timeline, parse, resolve


@pytest.mark.parametrize(("text", "release", "noted"), [
    ("0.25.1", "0.25.1", False),
    ("v0.25.1", "0.25.1", False),
    ("0.25", "0.25.1", False),  # a series: its newest release
    ("0.25.1.post1", "0.25.1", False),
    ("0.25.1+cpu", "0.25.1", False),
    ("0.10.1.1", "0.10.1.1", False),
    ("0.9.2.post2", "0.9.2", False),
    ("0.13.1", "0.13.0", True),  # between known releases: the one before it
    ("0.99.0", NEWEST.text, True),
    ("1.0", NEWEST.text, True),
    ("0.7.0", KNOWN[0].text, True),
    ("0.13.1.dev5", "0.13.0", True),  # a dev build after 0.13.0, not a known release: the one before it
])
def test_resolve(text: str, release: str, noted: bool) -> None:
    found = resolve(text)
    assert found.release == R(release)
    assert (found.note is not None) is noted
    if noted:
        assert release in found.note


@pytest.mark.parametrize(("text", "release"), [
    ("0.14.0rc1", "0.14.0"), ("0.14.0.dev0", "0.14.0"), ("v0.14.0rc1.dev12+g0123abc", "0.14.0"),
    ("0.32.0b1", "0.32.0"), ("0.14rc2", "0.14.0"),
])
def test_prerelease_of_a_known_release_selects_it_and_says_so(text: str, release: str) -> None:
    found = resolve(text)
    assert found.release == R(release) and found.note is None
    assert found.prerelease is not None and "pre-release" in found.prerelease and release in found.prerelease


@pytest.mark.parametrize("text", ["", "latest", "0", "0.x.1", "0.25.1-beta", "v", "1.2.3.4.5"])
def test_unparsable(text: str) -> None:
    assert parse(text) is None and resolve(text).release is None


def test_known_releases_are_ordered_and_unique() -> None:
    assert list(KNOWN) == sorted(set(KNOWN)) and DEFAULT == NEWEST == KNOWN[-1]


def test_timeline_steps_and_spans() -> None:
    line = Timeline("x", ("0.9.0", "a", "s1"), ("0.14.1", "b", "s2", "doc b"))
    assert line.at(R("0.14.0")) == "a" and line.at(R("0.14.1")) == "b" and line.at(NEWEST) == "b"
    assert [(span, step.text) for span, step in line.spans()] == [("0.9.0 - 0.14.0", "a"), ("0.14.1 -", "doc b")]


PAIR = {
    "hosts.yml": """\
        all:
          vars: {vllm_pd_deployment: chat}
          hosts:
            p1: {vllm_pd_role: prefill}
            d1: {vllm_pd_role: decode}
        """,
}


def _json(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, object]]]:
    code = main([str(tmp_path / "hosts.yml"), "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def _versions_seen(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> set[str]:
    """The release each instance got, read back through vllm-version[unknown] (0.13.1 is not a known release)."""
    _, found = _json(tmp_path, capsys, *args)
    return {str(f["message"]).split()[1] for f in found if f["rule"] == "vllm-version[unknown]"}


def test_precedence_inventory_then_config_then_cli(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    assert _versions_seen(tmp_path, capsys, "--vllm-version", "0.13.1") == {"0.13.1"}
    write_tree(tmp_path, {".pdlint.yaml": "vllm_version: '0.12.1'\n"})
    assert _versions_seen(tmp_path, capsys, "--vllm-version", "0.13.1") == {"0.12.1"}  # the config file wins
    write_tree(tmp_path, {"host_vars/p1.yml": "vllm_version: '0.11.3'\n"})
    assert _versions_seen(tmp_path, capsys, "--vllm-version", "0.13.1") == {"0.12.1", "0.11.3"}  # host vars win


def test_newer_release_is_a_warning_naming_the_rules_used(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    write_tree(tmp_path, {"group_vars/all.yml": "vllm_version: '0.99.0'\n"})
    code, found = _json(tmp_path, capsys)
    warned = [f for f in found if f["rule"] == "vllm-version[unknown]"]
    assert code == 0 and warned and all(f["severity"] == "warning" for f in warned)
    assert f"the rules of {NEWEST} were applied" in str(warned[0]["message"])
    assert warned[0]["file"].endswith("group_vars/all.yml") and warned[0]["line"] == 1


def test_unparsable_release_is_a_schema_error(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    write_tree(tmp_path, {"group_vars/all.yml": "vllm_version: latest\n"})
    code, found = _json(tmp_path, capsys)
    assert code == 1 and any(f["rule"] == "schema" and "vllm_version" in str(f["message"]) for f in found)


def test_bad_cli_release_is_a_usage_error(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    assert main([str(tmp_path / "hosts.yml"), "--vllm-version", "newest"]) == 2
    assert "is not a vLLM release" in capsys.readouterr().err


def test_summary_says_which_release_was_assumed(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    main([str(tmp_path / "hosts.yml")])
    assert f"vLLM {NEWEST} assumed where vllm_version is unset" in capsys.readouterr().out
    main([str(tmp_path / "hosts.yml"), "--vllm-version", "0.32.0"])
    assert "assumed" not in capsys.readouterr().out


def test_versions_lists_every_release(capsys) -> None:
    assert main(["versions"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.splitlines()[3:]]
    assert rows == [r.text for r in KNOWN]
    assert "+MoRIIOConnector" in next(line for line in out.splitlines() if line.startswith("0.14.0 "))
    assert "-P2pNcclConnector" in next(line for line in out.splitlines() if line.startswith("0.24.0 "))


@pytest.mark.parametrize(("value", "expect", "hint"), [
    ("0.13", "is not a release like", 'quote it: "0.13"'),  # a YAML float
    ("0.10", "is not a release like", "0.1"),  # the float loses the trailing zero: the hint says so
    ("1", "is not a release like", "quoted"),
    ("latest", "is not a release like", "pdlint versions"),
    ("'0.25.1-beta'", "is not a release like", "vllm --version"),
])
def test_unparsable_release_says_what_is_expected(tmp_path, monkeypatch, capsys, value, expect, hint) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    write_tree(tmp_path, {"group_vars/all.yml": f"vllm_version: {value}\n",
                          "host_vars/p1.yml": f"vllm_instances: [{{pd_role: prefill, version: {value}}}]\n"})
    code, found = _json(tmp_path, capsys)
    errors = [f for f in found if f["rule"] == "schema"]
    assert code == 1 and len(errors) == 2, found
    for f in errors:
        assert expect in str(f["message"]) and hint in str(f["hint"]), f


def test_prerelease_is_an_info_finding_at_the_value(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, PAIR)
    write_tree(tmp_path, {"group_vars/all.yml": "vllm_version: '0.14.0rc1'\n"})
    code, found = _json(tmp_path, capsys)
    assert code == 0 and not [f for f in found if f["rule"] in ("schema", "vllm-version[unknown]")]
    info = [f for f in found if f["rule"] == "vllm-version[pre-release]"]
    assert info and all(f["severity"] == "info" and "rules of 0.14.0" in str(f["message"]) for f in info)
    assert info[0]["file"].endswith("group_vars/all.yml") and info[0]["line"] == 1

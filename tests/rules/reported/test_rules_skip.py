"""pdlint_skip as data: what it suppresses, and the skip[...] findings about its own entries."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.engine import core as engine
from pdlint.load.reference import loader as reference

# p1 lists 1 GPU for PP 2: one gpu[count] finding on p1 only.
BASE = """\
all:
  vars: {vllm_pd_deployment: chat}
  hosts:
    p1: {vllm_pd_role: prefill, vllm_pipeline_parallel_size: 2, vllm_env: {CUDA_VISIBLE_DEVICES: "0"}%s}
    d1: {vllm_pd_role: decode%s}
"""


def result(tmp_path: Path, p1: str = "", d1: str = "", files: dict[str, str] | None = None) -> engine.Result:
    write_tree(tmp_path, {"hosts.yml": BASE % (p1, d1), **(files or {})})
    return engine.lint(reference.load([str(tmp_path / "hosts.yml")]))


def ids(findings: list) -> list[str]:
    return sorted(f.rule for f in findings)


@pytest.mark.parametrize(("p1", "d1", "reported", "suppressed"), [
    ("", "", ["gpu[count]"], []),
    (', pdlint_skip: ["gpu[count]"]', "", [], ["gpu[count]"]),
    (", pdlint_skip: [gpu]", "", [], ["gpu[count]"]),                         # a family names its rules
    ('', ', pdlint_skip: ["gpu[count]"]', ["gpu[count]", "skip[unused]"], []),  # d1 has no gpu finding
    (', pdlint_skip: ["gpu[overlap]"]', "", ["gpu[count]", "skip[unused]"], []),
    (', pdlint_skip: ["gpu[cuont]"]', "", ["gpu[count]", "skip[unknown]"], []),
    (', pdlint_skip: [nosuch]', "", ["gpu[count]", "skip[unknown]"], []),
    (', pdlint_skip: ["gpu[count]"]', ', pdlint_skip: [tp, skip]', [], ["gpu[count]", "skip[unused]"]),
    (', pdlint_skip: ["gpu[count]"]', ', pdlint_skip: ["skip[unused]"]', [], ["gpu[count]"]),  # never unused
])
def test_skip_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, p1: str, d1: str, reported: list[str],
                    suppressed: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    got = result(tmp_path, p1, d1)
    assert (ids(got.findings), ids(got.suppressed)) == (reported, suppressed)


def test_unused_entry_points_at_its_own_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    got = result(tmp_path, files={"group_vars/all.yml": "pdlint_skip:\n  - gpu\n  - port[collision]\n"})
    [unused] = [f for f in got.findings if f.rule == "skip[unused]"]
    assert (unused.origin.file, unused.origin.line) == ("group_vars/all.yml", 3)
    assert unused.hosts == ("d1", "p1") and unused.severity == "warning"
    assert "'port[collision]' suppresses nothing" in unused.message
    assert ids(got.suppressed) == ["gpu[count]"]  # the gpu entry of the same list was used on p1


def test_unknown_entry_hint_names_the_closest_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    [unknown] = [f for f in result(tmp_path, ', pdlint_skip: ["gpu[cuont]"]').findings if f.rule == "skip[unknown]"]
    assert unknown.hint is not None and "gpu[count]" in unknown.hint
    assert (unknown.origin.file, unknown.origin.line) == ("hosts.yml", 4)


def test_a_finding_on_two_hosts_is_suppressed_only_when_both_skip(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    nixl = ", vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}"
    mismatch = nixl + ', vllm_model: a/b, pdlint_skip: ["pd-mismatch[model]"]'
    one = result(tmp_path, nixl + ", vllm_model: x/y", mismatch)
    assert "pd-mismatch[model]" in ids(one.findings) and "skip[unused]" not in ids(one.findings)
    both = result(tmp_path, nixl + ', vllm_model: x/y, pdlint_skip: ["pd-mismatch", "gpu"]', mismatch)
    assert "pd-mismatch[model]" in ids(both.suppressed) and "pd-mismatch[model]" not in ids(both.findings)


def test_cli_counts_suppressed_and_lists_them_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from pdlint.cli import main

    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"hosts.yml": BASE % (', pdlint_skip: ["gpu[count]"]', ', pdlint_skip: [port]')})
    assert main(["hosts.yml"]) == 0
    out = capsys.readouterr().out
    assert "gpu[count]" not in out and "hosts.yml:5:" in out  # only d1's unused entry is shown
    assert out.splitlines()[-1].startswith("pdlint: 0 errors, 1 warning (1 suppressed) in 2 hosts, 1 deployment;")

    assert main(["hosts.yml", "--show-suppressed"]) == 0
    out = capsys.readouterr().out
    assert "hosts.yml:4:98: gpu[count] [suppressed] CUDA_VISIBLE_DEVICES" in out
    assert "skip[unused] [warning] pdlint_skip entry 'port' suppresses nothing" in out

    assert main(["hosts.yml", "-f", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert [f["rule"] for f in plain] == ["skip[unused]"] and "suppressed" not in plain[0]
    assert main(["hosts.yml", "-f", "json", "--show-suppressed", "--strict"]) == 1  # the warning fails --strict
    shown = json.loads(capsys.readouterr().out)
    assert [(f["rule"], f["suppressed"]) for f in shown] == [("skip[unused]", False), ("gpu[count]", True)]


def test_rules_command_documents_the_skip_family(capsys: pytest.CaptureFixture[str]) -> None:
    from pdlint.cli import main

    assert main(["rules"]) == 0
    listed = capsys.readouterr().out
    assert "skip[unused]" in listed and "skip[unknown]" in listed
    assert main(["rules", "skip"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("skip[unused] (warning)\n") and "\nskip[unknown] (warning)\n" in out
    assert out.count("PASS:") == 2 and out.count("FAIL:") == 2

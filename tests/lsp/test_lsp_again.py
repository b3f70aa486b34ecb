"""The language server after an edit checks again only the units the edited files touch (lsp/again.py,
cache/incremental.py), and its outcome, diagnostics included, is a cold check's."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pdlint.cache import filememo
from pdlint.lsp import diagnostics, inventory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from generate import generate
from quickstart import generate as quickstart

HOSTS = 40  # five deployments of 3 prefill + 5 decode hosts


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    inv = tmp_path / "inv"
    generate(HOSTS, inv)
    (tmp_path / "empty.cfg").write_text("[defaults]\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "empty.cfg"))
    monkeypatch.chdir(tmp_path)
    old = os.stat(inv / "hosts.yml").st_mtime - 60  # written a minute ago: no file is in the racy window
    for path in inv.rglob("*"):
        os.utime(path, (old, old))
    return inv


def _deployment(inv: Path, dep: str) -> list[str]:
    cold = inventory.check(str(inv), {}, filememo.Memo())
    return sorted(h for d in cold.topology.deployments if d.name == dep for e in (*d.prefill, *d.decode) for h in e.hosts)


def _same_as_cold(after: inventory.Outcome, inv: Path, overlay: dict[str, str]) -> None:
    cold = inventory.check(str(inv), overlay, filememo.Memo())
    assert cold.rechecked is None
    assert after.findings == cold.findings
    assert after.hosts == cold.hosts
    assert [(i.host, i.index) for i in after.topology.instances] == [(i.host, i.index) for i in cold.topology.instances]
    assert [d.name for d in after.topology.deployments] == [d.name for d in cold.topology.deployments]

    def read(path: str) -> str | None:
        return overlay.get(path) or Path(path).read_text()

    anchor = next(iter(overlay), str(inv / "hosts.yml"))
    assert diagnostics.by_file(after, read, anchor) == diagnostics.by_file(cold, read, anchor)


@pytest.mark.parametrize(("file", "old", "new", "dep"), [
    ("group_vars/dep0001_decode.yml", "vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 6", "dep0001"),
    ("group_vars/dep0003_decode.yml", "vllm_tensor_parallel_size: 8", "vllm_tensor_parallel_size: 3", "dep0003"),
    ("group_vars/dep0002_prefill.yml", "kv_role: kv_producer", "kv_role: kv_consumer", "dep0002"),
    ("group_vars/dep0004.yml", "vllm_block_size: 16", "vllm_block_size: sixteen", "dep0004"),
    ("host_vars/gpu00011.yml", "vllm_port: 8000", "vllm_port: 5600", "dep0001"),
])
def test_an_edit_rechecks_only_the_deployment_it_touches(fleet: Path, file: str, old: str, new: str,
                                                         dep: str) -> None:
    memo = filememo.Memo()
    first = inventory.check(str(fleet), {}, memo)
    assert first.rechecked is None and first.seen is not None
    path = str(fleet / file)
    text = Path(path).read_text()
    assert old in text
    overlay = {path: text.replace(old, new)}
    after = inventory.check(str(fleet), overlay, memo, first)
    assert after.rechecked == tuple(_deployment(fleet, dep))  # the edited deployment's hosts, no other
    assert after.findings != first.findings  # the edit is one the verdict sees
    _same_as_cold(after, fleet, overlay)
    back = inventory.check(str(fleet), {}, memo, after)  # the buffer closed: the file on disk counts again
    assert back.rechecked == after.rechecked
    assert back.findings == first.findings
    _same_as_cold(back, fleet, {})


def test_an_edit_saved_to_disk_is_seen_by_its_stat(fleet: Path) -> None:
    memo = filememo.Memo()
    first = inventory.check(str(fleet), {}, memo)
    path = fleet / "group_vars" / "dep0002_decode.yml"
    path.write_text(path.read_text().replace("vllm_tensor_parallel_size: 8", "vllm_tensor_parallel_size: 6"))
    after = inventory.check(str(fleet), {}, memo, first)
    assert after.rechecked == tuple(_deployment(fleet, "dep0002"))
    assert "tp[heads]" in {f.rule for f in after.findings} - {f.rule for f in first.findings}
    _same_as_cold(after, fleet, {})


@pytest.mark.parametrize(("file", "old", "new"), [
    ("group_vars/all.yml", "", "vllm_block_size: 32\n"),  # every host reads it
    ("hosts.yml", "gpu00039: {ansible_host: 10.0.0.39}", "gpu00039: {ansible_host: 10.0.0.99}"),  # the inventory
    ("group_vars/dep0001.yml", "vllm_pd_deployment: dep0001", "vllm_pd_deployment: dep0002"),  # links two units
])
def test_an_edit_the_state_cannot_answer_is_a_whole_check(fleet: Path, file: str, old: str, new: str) -> None:
    memo = filememo.Memo()
    first = inventory.check(str(fleet), {}, memo)
    path = str(fleet / file)
    text = Path(path).read_text()
    assert old in text
    overlay = {path: text.replace(old, new, 1) if old else text + new}
    after = inventory.check(str(fleet), overlay, memo, first)
    assert after.rechecked is None
    _same_as_cold(after, fleet, overlay)


@pytest.mark.parametrize(("old", "new"), [
    ("vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 6"),
    ("vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 3"),
    ("kv_connector: NixlConnector", "kv_connector: MooncakeConnector"),
])
def test_a_whole_check_keeps_what_the_rules_found_for_the_engines_an_edit_did_not_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
    """One deployment (the README's quickstart, its side channel host templated): every edit is a whole check,
    and the engines the edit left as they were keep their per-body memo (topology/types.py share_bodies)."""
    inv = tmp_path / "inv"
    quickstart(40, inv, "template")
    (tmp_path / "empty.cfg").write_text("[defaults]\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(tmp_path / "empty.cfg"))
    monkeypatch.chdir(tmp_path)
    memo = filememo.Memo()
    first = inventory.check(str(inv), {}, memo)
    path = str(inv / "group_vars" / "chat_decode.yml")
    overlay = {path: Path(path).read_text().replace(old, new)}
    after = inventory.check(str(inv), overlay, memo, first)
    assert after.rechecked is None and after.findings != first.findings
    before = {i.host: i.shared for i in first.topology.instances}
    kept = {i.host for i in after.topology.instances if i.shared is before[i.host]}
    assert kept == {i.host for i in after.topology.instances if i.role == "prefill"}
    assert all(before[i.host] for i in after.topology.instances if i.host in kept)  # memos the rules had filled
    _same_as_cold(after, inv, overlay)

"""The preflight reads each file by what its stat says, bounded by the limit, whatever the file does meanwhile."""
from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest

from pdlint.load import preflight
from pdlint.load.preflight import guard


def test_a_small_file_costs_no_buffer_of_the_limit(tmp_path: Path) -> None:
    """read(limit + 1) allocated 8 MB for every file first (a tenth of a cold run over 6,000 small files)."""
    path = tmp_path / "a.yml"
    path.write_text("vllm_port: 8000\n")
    tracemalloc.start()
    try:
        data = preflight.read_bounded(str(path), guard.Limits())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert data == b"vllm_port: 8000\n"
    assert peak < 1024 * 1024


@pytest.mark.parametrize("size", [0, 3])
def test_a_file_longer_than_its_stat_is_read_on(size: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that grew after its stat (or /proc's, whose size is 0) is read to its end, or to the limit."""
    path = tmp_path / "a.yml"
    path.write_bytes(b"x" * 100)
    real = os.fstat
    monkeypatch.setattr(preflight.os, "fstat", lambda fd: SimpleNamespace(**{**_fields(real(fd)), "st_size": size}))
    assert preflight.read_bounded(str(path), guard.Limits()) == b"x" * 100
    small = guard.Limits(max_file_bytes=10)
    data = preflight.read_bounded(str(path), small)
    assert data == b"x" * 11  # one byte over the limit: text_of refuses it as before
    with pytest.raises(guard.Refused, match="over the 10-byte limit"):
        guard.text_of(data, str(path), small)


def _fields(st: os.stat_result) -> dict[str, int]:
    return {name: getattr(st, name) for name in dir(st) if name.startswith("st_")}


def test_the_fast_loader_asks_no_second_stat_of_a_walked_vars_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk stat'ed every vars file: matching their names to hosts and groups asks the file system again only
    for entries it did not walk (an isdir per host_vars file was a tenth of the walk at 10k hosts)."""
    from pdlint.load.fast import loader as fast
    from pdlint.load.notes import unmatched_vars

    (tmp_path / "group_vars").mkdir()
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n" + "".join(f"    h{i}:\n" for i in range(20)))
    for i in range(20):
        (tmp_path / "host_vars" / f"h{i}.yml").write_text(f"vllm_port: {8000 + i}\n")
    (tmp_path / "host_vars" / "gone.yml").mkdir()  # a directory named like a file: still asked, still reported
    asked: list[str] = []
    real = unmatched_vars.os.path.isdir
    monkeypatch.setattr(unmatched_vars.os.path, "isdir", lambda p: asked.append(p) or real(p))
    notes: list = []
    fast.load([str(tmp_path)], notes=notes)
    assert [a for a in asked if "host_vars" in a and a.endswith(".yml")] == [str(tmp_path / "host_vars" / "gone.yml")]
    assert [n.rule for n in notes] == ["inventory[unmatched-vars]"]

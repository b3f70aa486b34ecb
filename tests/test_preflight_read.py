"""The preflight reads each file by what its stat says, bounded by the limit, whatever the file does meanwhile."""
from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest

from pdlint.load import guard, preflight


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

"""The per-file memo is correct by construction: a load through it says exactly what a load without it says.

Over random sequences of edits (values, same-size edits, host_vars files added and removed, groups renamed,
touches, a duplicate key, a YAML error, an alias that only compose rejects, editor buffers in place of files)
the hosts (values and origins), the notes and the load-error are the same with an in-memory memo kept across
loads (the language server's: scans and variables), with the on-disk memo read back before every load (the
CLI's: scans), and with none.
An edit of one file re-reads only that file (the in-memory memo also replays the YAML inventory file's calls on the
fast loader's Inventory instead of parsing it again); a damaged bundle on disk is ignored.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from edits import apply_edit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.cache import filememo, store
from pdlint.load import compose, preflight, select
from pdlint.load.errors import LoadError
from pdlint.load.preflight import guard


def _inventory(base: Path) -> Path:
    inv = base / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "host_vars").mkdir()
    (inv / "group_vars" / "all.yml").write_text("vllm_version: 0.32.0\nvllm_host_gpu_count: 8\n")
    lines = ["all:", "  children:"]
    for dep, dtp in (("a", 4), ("b", 8)):
        (inv / "group_vars" / f"{dep}.yml").write_text(f"vllm_pd_deployment: {dep}\nvllm_model: m/{dep}\n")
        lines += [f"    {dep}:", "      children:"]
        for role, size in (("prefill", 4), ("decode", dtp)):
            (inv / "group_vars" / f"{dep}_{role}.yml").write_text(
                f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {size}\n"
                f"vllm_kv_transfer_config:\n  kv_connector: NixlConnector\n  kv_role: kv_both\n")
            lines += [f"        {dep}_{role}:", "          hosts:"]
            lines += [f"            {dep}-{role}-{i}:" for i in range(2)]
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    (inv / "host_vars" / "a-decode-0.yml").write_text("vllm_port: 8001\nvllm_env: {A: '1'}\n")
    return inv


def _load(inv: Path, memo: Any = None, overlay: dict[str, str] | None = None) -> tuple[Any, ...]:
    """What a load gives: every host's values and origins and the notes, or the load-error."""
    notes: list[Any] = []
    try:
        hosts = select.load([str(inv)], notes=notes, note=lambda _: None, overlay=overlay, memo=memo,
                            limits=guard.Limits())
    except LoadError as exc:
        return ("error", exc.finding)
    return ("ok", [(h.host, dict(h.values), dict(h.origins)) for h in hosts], sorted(notes))


_EDITS = st.lists(st.one_of(
    st.tuples(st.just("value"), st.sampled_from(["a", "b"]), st.sampled_from([1, 2, 3, 4, 6, 8, 16])),
    st.tuples(st.just("same-size"), st.sampled_from(["a", "b"]), st.sampled_from([1, 2, 4, 8])),
    st.tuples(st.just("add-host-vars"), st.sampled_from(["a-decode-0", "b-prefill-1"]),
              st.sampled_from(["vllm_port: 8000\n", "vllm_port: '5600'\nvllm_port: 1\n", "{}\n", ""])),
    st.tuples(st.just("remove-host-vars"), st.sampled_from(["a-decode-0", "b-prefill-1"]), st.none()),
    st.tuples(st.just("rename-group"), st.sampled_from(["a", "b"]), st.sampled_from(["c", "d"])),
    st.tuples(st.just("touch"), st.sampled_from(["hosts.yml", "group_vars/all.yml"]), st.none()),
    st.tuples(st.just("broken"), st.sampled_from(["group_vars/all.yml", "hosts.yml"]),
              st.sampled_from(["vllm_env: {A: [1\n", "x: *nowhere\n", "vllm_dtype: a\nvllm_dtype: b\n"])),
    st.tuples(st.just("buffer"), st.sampled_from(["group_vars/all.yml", "host_vars/a-decode-0.yml", "hosts.yml"]),
              st.sampled_from(["vllm_port: 9000\n", "vllm_dtype: [1\n", None])),
), min_size=1, max_size=8)


def _apply(inv: Path, edit: tuple[str, str, Any], overlay: dict[str, str]) -> None:
    if apply_edit(inv, edit):
        return
    kind, target, arg = edit
    if kind == "broken":  # appended, then taken back by the next edit of the same kind half the time
        path = inv / target
        text = path.read_text()
        path.write_text(text[: -len(arg)] if text.endswith(arg) else text + arg)
    elif kind == "buffer":
        path = str(inv / target)
        if arg is None or not os.path.exists(path):
            overlay.pop(path, None)
        else:
            overlay[path] = Path(path).read_text() + arg


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS)
def test_memo_equals_no_memo_over_random_edits(edits, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    base.mkdir()
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(base / "cache"))
    monkeypatch.chdir(base)
    inv = _inventory(base)
    kept = filememo.Memo()  # as the language server keeps it
    overlay: dict[str, str] = {}
    for edit in [("touch", "hosts.yml", None), *edits]:
        _apply(inv, edit, overlay)
        plain = _load(inv, overlay=overlay)
        assert _load(inv, kept, overlay) == plain, edit
        assert _load(inv, kept, overlay) == plain, edit  # answered from the memo this time
        assert _load(inv, filememo.on_disk([str(inv)]), overlay) == plain, edit
        assert _load(inv, filememo.on_disk([str(inv)]), overlay) == plain, edit  # from the bundle just written


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    calls: dict[str, list[str]] = {"scan": [], "compose": []}
    scan, real_compose = guard.scan_yaml, compose.compose
    monkeypatch.setattr(guard, "scan_yaml", lambda text, path, *a: calls["scan"].append(path) or scan(text, path, *a))
    monkeypatch.setattr(compose, "compose",
                        lambda path, *a, **k: calls["compose"].append(str(path)) or real_compose(path, *a, **k))
    return calls


@pytest.mark.parametrize("make", [lambda: filememo.Memo(), None], ids=["in-memory", "on-disk"])
def test_an_edit_re_reads_only_the_edited_file(make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(tmp_path / "cache"))
    inv = _inventory(tmp_path)
    memo = make() if make else None

    def memo_now() -> filememo.Memo:
        return memo if memo is not None else filememo.on_disk([str(inv)])

    _load(inv, memo_now())
    calls = _counting(monkeypatch)
    edited = inv / "group_vars" / "b_decode.yml"
    edited.write_text(edited.read_text().replace("size: 8", "size: 6"))
    result = _load(inv, memo_now())
    assert calls["scan"] == [str(edited)]  # the scan result of hosts.yml and every other vars file reused
    # The edited file's variables come from its scan, which builds them (load/fast/variables/vars_events.py), so it is not composed.
    if memo is not None:  # hosts.yml's calls on the Inventory and the other vars files' variables are the memo's
        assert calls["compose"] == []
    else:  # the on-disk memo keeps scans only: hosts.yml and the other vars files are composed
        assert len(calls["compose"]) == len(list(inv.rglob("*_vars/*.yml")))
        assert str(edited) not in calls["compose"]
    assert result == _load(inv)


def test_an_editor_buffer_is_keyed_by_its_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    inv = _inventory(tmp_path)
    memo = filememo.Memo()
    path = inv / "host_vars" / "a-decode-0.yml"
    before = _load(inv, memo)
    buffer = {str(path): "vllm_port: 9001\n"}
    edited = _load(inv, memo, buffer)
    assert edited == _load(inv, overlay=buffer) and edited != before
    host = next(h for h in edited[1] if h[0] == "a-decode-0")
    assert host[1]["vllm_port"] == 9001 and "vllm_env" not in host[1]
    on_disk = path.read_text()
    path.write_text("vllm_port: 9001\n")  # saved: the text the buffer had, so the buffer's entry serves
    calls = _counting(monkeypatch)
    assert _load(inv, memo) == edited
    assert calls["scan"] == [] and calls["compose"] == []
    assert _load(inv, memo, {str(path): on_disk}) == before  # the old text back in a buffer: read again


def test_a_changed_working_directory_or_limit_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Origins are printed relative to the working directory; refusals depend on the limits."""
    inv = _inventory(tmp_path)
    memo = filememo.Memo()
    monkeypatch.chdir(tmp_path)
    _load(inv, memo)
    monkeypatch.chdir(inv)
    assert _load(inv, memo) == _load(inv)
    (inv / "group_vars" / "all.yml").write_text("vllm_env: {a: {b: {c: 1}}}\n")
    _load(inv, memo)
    tight = guard.Limits(max_depth=2)
    with pytest.raises(LoadError):
        select.load([str(inv)], limits=tight, memo=memo)


def _bundle(cache: Path) -> Path:
    (found,) = [p for p in (cache / "files").iterdir() if not p.name.startswith(".")]
    return found


@pytest.mark.parametrize("damage", [
    lambda p: p.write_bytes(p.read_bytes()[:-7] + b"garbage"),
    lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    lambda p: p.write_bytes(b""),
    lambda p: store.write(p.name, ("files", {"x": 1}), str(p.parent)),  # intact, but not a bundle's shape
    lambda p: store.write(p.name, ("files", [2]), str(p.parent)),
    lambda p: store.write(p.name, ("files", {str(p): (b"k", (1, 2, 3, 4), os.getcwd(), ([], []))}), str(p.parent)),
], ids=["corrupt", "truncated", "empty", "misshapen", "not-a-mapping", "stale"])
def test_a_damaged_bundle_is_ignored(damage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(tmp_path / "cache"))
    inv = _inventory(tmp_path)
    plain = _load(inv)
    assert _load(inv, filememo.on_disk([str(inv)])) == plain
    damage(_bundle(tmp_path / "cache"))
    assert _load(inv, filememo.on_disk([str(inv)])) == plain
    assert _load(inv, filememo.on_disk([str(inv)])) == plain


def test_the_language_servers_check_reuses_its_memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lsp/inventory.check with the memo the server keeps: an edit in a buffer re-reads that buffer only, and
    the findings are those of a check without a memo."""
    from pdlint.lsp import inventory

    monkeypatch.chdir(tmp_path)
    inv = _inventory(tmp_path)
    memo = filememo.Memo()
    inventory.check(str(inv), {}, memo)
    calls = _counting(monkeypatch)
    path = str(inv / "group_vars" / "b_decode.yml")
    buffer = {path: Path(path).read_text().replace("size: 8", "size: 6")}
    kept = inventory.check(str(inv), buffer, memo)
    # the buffer is scanned, and its variables come from that scan; hosts.yml's calls are the memo's
    assert calls["scan"] == [path] and calls["compose"] == []
    fresh = inventory.check(str(inv), buffer)
    assert kept.findings == fresh.findings and kept.hosts == fresh.hosts and kept.failed is None
    assert any(f.rule.startswith("tp") for f in kept.findings)


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = preflight.read_bounded
    monkeypatch.setattr(preflight, "read_bounded", lambda path, *a: read.append(path) or real(path, *a))
    return read


def test_the_language_servers_memo_skips_files_whose_stat_is_as_read(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A vars file with the stat it had when it was read (and older than the racy window then) is not read again;
    any edit changes its ctime, so it is read; an inventory file is always read."""
    monkeypatch.chdir(tmp_path)
    inv = _inventory(tmp_path)
    memo = filememo.Memo()
    memo.racy_ns = 50_000_000  # 0.05 s instead of 2 s, so the test need not wait
    time.sleep(0.1)
    plain = _load(inv)
    assert _load(inv, memo) == plain  # read, and the stats noted
    reads = _reads(monkeypatch)
    assert _load(inv, memo) == plain
    assert reads == [str(inv / "hosts.yml")]
    edited = inv / "group_vars" / "b_decode.yml"
    edited.write_text(edited.read_text().replace("size: 8", "size: 6"))  # same size, the same second
    reads.clear()
    assert _load(inv, memo) == _load(inv) != plain
    assert reads[:2] == [str(inv / "hosts.yml"), str(edited)]


def test_a_file_changed_just_before_it_was_read_is_read_again(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Racily clean: a same-size edit in the clock tick of the read would keep the stat, so a file changed less
    than racy_ns (2 s) before it was read is compared by content until it is older."""
    monkeypatch.chdir(tmp_path)
    inv = _inventory(tmp_path)  # every file written just now
    memo = filememo.Memo()
    _load(inv, memo)
    reads = _reads(monkeypatch)
    _load(inv, memo)
    assert sorted(reads) == sorted(str(p) for p in [inv / "hosts.yml", *inv.rglob("*_vars/*.yml")])


def test_a_clock_ahead_of_the_file_system_does_not_hide_an_edit(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """On a network file system the server stamps the times: with this machine's clock 10 s ahead, every file
    looks older than the racy window when read, and an edit is seen by its stat (size, times, inode)."""
    monkeypatch.chdir(tmp_path)
    inv = _inventory(tmp_path)
    memo = filememo.Memo()
    real = time.time_ns
    monkeypatch.setattr(filememo.time, "time_ns", lambda: real() + 10_000_000_000)
    plain = _load(inv, memo)
    reads = _reads(monkeypatch)
    assert _load(inv, memo) == plain and reads == [str(inv / "hosts.yml")]
    edited = inv / "group_vars" / "b_decode.yml"
    edited.write_text(edited.read_text().replace("size: 8", "size: 6"))
    assert _load(inv, memo) == _load(inv) != plain

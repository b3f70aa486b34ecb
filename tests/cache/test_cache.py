"""The result cache is correct by construction: a cached run says exactly what an uncached one says.

Byte-identical output on every example and hostile case (fresh processes); a corrupt, truncated, foreign,
concurrently written or misplaced cache is ignored and rebuilt; --no-cache and PDLINT_NO_CACHE write
nothing; and over random sequences of edits (values, files added and removed, groups renamed, touches,
same-size edits within the clock's granularity) the cached answer is the uncached one.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from edits import apply_edit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.cache import store
from pdlint.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir())
HOSTILE = sorted(p for p in (ROOT / "tests" / "hostile" / "cases").iterdir()
                 if (p / "case.yml").is_file() and "make" not in yaml.safe_load((p / "case.yml").read_text()))
_TIME = re.compile(r"\(\d+\.\d+ s\)")


def _pdlint() -> list[str]:
    script = Path(sys.executable).with_name("pdlint")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pdlint.cli"]


def _proc(args: list[str], cwd: Path, cache: Path | None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PDLINT_"))}
    env["HOME"] = str(cwd)
    if cache is None:
        env["PDLINT_NO_CACHE"] = "1"
    else:
        env["PDLINT_CACHE_DIR"] = str(cache)
    done = subprocess.run([*_pdlint(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, _TIME.sub("(T s)", done.stdout), done.stderr


@pytest.mark.parametrize("case", EXAMPLES + HOSTILE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cached_output_is_byte_identical(case: Path, tmp_path: Path) -> None:
    """Uncached, first cached (writes) and second cached (reads) runs give the same exit, stdout and stderr."""
    work = tmp_path / "work"
    shutil.copytree(case, work, symlinks=True)
    spec = yaml.safe_load((case / "case.yml").read_text()) if (case / "case.yml").exists() else {}
    args = [str(a) for a in spec.get("args", ["."])]
    cache = tmp_path / "cache"
    plain = _proc(args, work, None)
    assert _proc(args, work, cache) == plain
    assert _proc(args, work, cache) == plain
    assert not list((work).rglob("pdlint")), "the cache must never be written inside the inventory"


# ---- in-process runs on a small generated inventory -------------------------------------------------

def _inventory(base: Path, tp: dict[str, int], extra_hosts: tuple[str, ...] = ()) -> Path:
    """Two deployments (NIXL), group_vars per role; decode TP from tp, so a bad value gives findings."""
    inv = base / "inv"
    (inv / "group_vars").mkdir(parents=True, exist_ok=True)
    (inv / "host_vars").mkdir(exist_ok=True)
    (inv / "group_vars" / "all.yml").write_text("vllm_version: 0.32.0\nvllm_host_gpu_count: 8\n")
    lines = ["all:", "  children:"]
    for dep, dtp in tp.items():
        (inv / "group_vars" / f"{dep}.yml").write_text(
            f"vllm_pd_deployment: {dep}\nvllm_model: meta-llama/Llama-3.3-70B-Instruct\n")
        lines += [f"    {dep}:", "      children:"]
        for role, size in (("prefill", 4), ("decode", dtp)):
            (inv / "group_vars" / f"{dep}_{role}.yml").write_text(
                f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {size}\n"
                f"vllm_kv_transfer_config:\n  kv_connector: NixlConnector\n  kv_role: kv_both\n")
            lines += [f"        {dep}_{role}:", "          hosts:"]
            lines += [f"            {dep}-{role}-{i}:" for i in range(2)]
    for host in extra_hosts:
        lines += [f"    {host}:"]
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    return inv


def _run(inv: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*extra, "--format", "json", str(inv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.delenv("PDLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(cache))
    monkeypatch.chdir(tmp_path)
    return cache


def _entries(cache: Path) -> list[Path]:
    # The run entries; the per-file memo keeps its bundles in a folder of its own (tests/load/test_file_memo.py).
    return sorted(p for p in cache.iterdir() if not p.name.startswith(".") and p.is_file()) if cache.exists() else []


def test_a_warm_run_reads_the_cache(cached: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    inv = _inventory(tmp_path, {"a": 3, "b": 8})
    first = _run(inv, capsys)
    assert first[0] == 1 and len(_entries(cached)) == 1
    computed: list[int] = []
    from pdlint.engine import core as engine
    real = engine.lint
    monkeypatch.setattr(engine, "lint", lambda *a, **k: computed.append(1) or real(*a, **k))
    assert _run(inv, capsys) == first
    assert computed == []  # answered from the cache


def _corrupt(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[-3] ^= 0xFF
    entry.write_bytes(bytes(data))


def _truncate(entry: Path) -> None:
    entry.write_bytes(entry.read_bytes()[: len(entry.read_bytes()) // 2])


def _foreign(entry: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[len(b"PDLINT-CACHE-2\n")] ^= 0xFF  # made by other pdlint code
    entry.write_bytes(bytes(data))


def _other_key(entry: Path) -> None:
    # An intact entry of this code for the same slot, but for other file contents (a stale result).
    value = store.read(entry.name, str(entry.parent))
    store.write(entry.name, ("0" * 40, *value[1:3], [], *value[4:]), str(entry.parent))


def _garbage(entry: Path) -> None:
    entry.write_bytes(os.urandom(4096))


def _empty(entry: Path) -> None:
    entry.write_bytes(b"")


def _directory(entry: Path) -> None:
    entry.unlink()
    entry.mkdir()


def _fifo(entry: Path) -> None:
    # Opened as a file, a FIFO blocks until a writer comes: every later run would hang.
    entry.unlink()
    os.mkfifo(entry)


def _zero_link(entry: Path) -> None:
    # Followed, a link to /dev/zero reads zeros up to the size bound.
    entry.unlink()
    entry.symlink_to("/dev/zero")


def _half_written(entry: Path) -> None:
    # What a writer that is not atomic would leave: the new magic and digests, the old payload cut short.
    _truncate(entry)
    (entry.parent / ".tmp-crashed").write_bytes(b"PDLINT")


@pytest.mark.parametrize("damage", [_corrupt, _truncate, _foreign, _other_key, _garbage, _empty, _directory,
                                    _half_written, _fifo, _zero_link])
def test_a_damaged_cache_is_ignored_and_rebuilt(damage, cached: Path, tmp_path: Path, capsys) -> None:
    inv = _inventory(tmp_path, {"a": 3, "b": 8})
    uncached = _run(inv, capsys, "--no-cache")
    assert _run(inv, capsys) == uncached
    (entry,) = _entries(cached)
    damage(entry)
    assert _run(inv, capsys) == uncached
    if entry.is_dir():  # not ours to remove: the cache is skipped, never a crash
        return
    assert store.read(entry.name, str(cached)) is not None  # rebuilt
    assert _run(inv, capsys) == uncached


def test_concurrent_writers_leave_a_valid_entry(cached: Path, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, {"a": 3, "b": 8})
    expected = _proc(["--format", "json", str(inv)], tmp_path, None)
    results: list[tuple[int, str, str]] = []
    threads = [threading.Thread(target=lambda: results.append(_proc(["--format", "json", str(inv)], tmp_path,
                                                                    cached))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4
    (entry,) = _entries(cached)
    assert store.read(entry.name, str(cached)) is not None
    assert _proc(["--format", "json", str(inv)], tmp_path, cached) == expected


def test_no_cache_flag_and_variable_write_nothing(cached: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    inv = _inventory(tmp_path, {"a": 3})
    _run(inv, capsys, "--no-cache")
    assert not cached.exists()
    monkeypatch.setenv("PDLINT_NO_CACHE", "1")
    _run(inv, capsys)
    assert not cached.exists()
    monkeypatch.setenv("PDLINT_NO_CACHE", "0")
    _run(inv, capsys)
    assert len(_entries(cached)) == 1


def test_a_cache_directory_inside_the_inventory_is_not_used(tmp_path: Path, capsys, monkeypatch) -> None:
    inv = _inventory(tmp_path, {"a": 3})
    monkeypatch.delenv("PDLINT_NO_CACHE", raising=False)
    monkeypatch.delenv("PDLINT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(inv / ".cache"))
    _run(inv, capsys)
    assert not (inv / ".cache").exists()


def test_xdg_cache_home_is_the_default_place(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PDLINT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert store.directory() == str(tmp_path / "xdg" / "pdlint" / "runs")


# ---- random edit sequences ------------------------------------------------------------------------------

_EDITS = st.lists(st.one_of(
    st.tuples(st.just("value"), st.sampled_from(["a", "b"]), st.sampled_from([1, 2, 3, 4, 6, 8])),
    st.tuples(st.just("same-size"), st.sampled_from(["a", "b"]), st.sampled_from([1, 2, 4, 8])),
    st.tuples(st.just("add-host-vars"), st.sampled_from(["a-decode-0", "b-prefill-1"]),
              st.sampled_from(["vllm_port: 8000\n", "vllm_port: 8001\n", "vllm_port: '5600'\n"])),
    st.tuples(st.just("remove-host-vars"), st.sampled_from(["a-decode-0", "b-prefill-1"]), st.none()),
    st.tuples(st.just("rename-group"), st.sampled_from(["a", "b"]), st.sampled_from(["c", "d"])),
    st.tuples(st.just("touch"), st.sampled_from(["hosts.yml", "group_vars/all.yml"]), st.none()),
), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS)
def test_cached_equals_uncached_over_random_edits(edits, tmp_path: Path, capsys, monkeypatch) -> None:
    base = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    base.mkdir()
    monkeypatch.delenv("PDLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(base / "cache"))
    monkeypatch.chdir(base)
    inv = _inventory(base, {"a": 4, "b": 8})
    assert _run(inv, capsys) == _run(inv, capsys, "--no-cache")
    for edit in edits:
        apply_edit(inv, edit)
        cached_first = _run(inv, capsys)
        assert cached_first == _run(inv, capsys, "--no-cache"), edit
        assert _run(inv, capsys) == cached_first, edit  # and again, from the entry just written


def test_an_edit_that_keeps_the_stat_is_seen(cached: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    """Filesystems with coarse timestamps: a same-size edit in the same tick keeps every stat field the key
    holds, so the content digest of recently modified files decides (git's "racy clean")."""
    from pdlint.cache import runs
    from pdlint.load.preflight import fingerprints

    real = fingerprints.fingerprints

    def coarse(*args, **kwargs):  # as a filesystem with one-second timestamps would report
        found = real(*args, **kwargs)
        second = 10**9
        return None if found is None else [(p, m, s, mt // second * second, ct // second * second, i, d)
                                           for p, m, s, mt, ct, i, d in found]

    monkeypatch.setattr(runs.fingerprints, "fingerprints", coarse)
    monkeypatch.setattr(fingerprints, "RACY_NS", 10**12)  # every file counts as recent however slow this machine is
    inv = _inventory(tmp_path, {"a": 4})
    clean = _run(inv, capsys)
    path = inv / "group_vars" / "a_decode.yml"
    before = os.stat(path)
    path.write_text(path.read_text().replace("tensor_parallel_size: 4", "tensor_parallel_size: 3"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    edited = _run(inv, capsys)
    assert edited != clean and edited == _run(inv, capsys, "--no-cache")


@pytest.mark.parametrize("entry", ["group_vars/empty", "host_vars/notes/readme.txt", "group_vars/a_decode.txt"])
def test_an_entry_no_file_is_read_from_is_seen(entry: str, cached: Path, tmp_path: Path, capsys) -> None:
    """A directory under group_vars/ or host_vars/ is reported when it matches no group or host, even with no
    file pdlint reads in it: adding one changes the answer, so it must change the cache's key."""
    inv = _inventory(tmp_path, {"a": 4})
    clean = _run(inv, capsys)
    path = inv / entry
    if path.suffix:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("notes\n")
    else:
        path.mkdir()
    added = _run(inv, capsys)
    assert added == _run(inv, capsys, "--no-cache")
    if entry != "group_vars/a_decode.txt":  # a .txt file beside group files: Ansible ignores it, so does pdlint
        assert added != clean and "inventory[unmatched-vars]" in added[1]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_cached_run_does_not_load_the_rules(fmt: str, tmp_path: Path) -> None:
    """A run answered from the cache imports neither the rules, the vllm layer nor the schema (a third of a
    warm run's time), nor yaml; SARIF output, which describes every rule, imports the rules (and with them the
    vllm layer)."""
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples" / "inventory", work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PDLINT_"))}
    env.update(HOME=str(tmp_path), PDLINT_CACHE_DIR=str(tmp_path / "cache"))
    code = ("import io, sys, contextlib; from pdlint.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out): rc = main(['.', '--format', sys.argv[1]])\n"
            "print(rc, 'pdlint.rules' in sys.modules, 'pdlint.vllm' in sys.modules, 'pdlint.schema' in sys.modules,\n"
            "      'yaml' in sys.modules)\n")
    runs = [subprocess.run([sys.executable, "-c", code, fmt], cwd=work, env=env, capture_output=True, text=True,
                           check=False, timeout=60).stdout.split() for _ in range(2)]
    assert runs[0] == ["1", "True", "True", "True", "True"]  # checked: the example has errors
    assert runs[1] == ["1", str(fmt == "sarif"), str(fmt == "sarif"), "False", "False"]


def test_the_rule_ids_listed_for_the_config_are_the_registered_rules() -> None:
    from pdlint.rule_ids import IDS
    from pdlint.rules import REGISTRY

    assert set(REGISTRY) == IDS

"""The hostile-input corpus (tests/hostile/cases): never execute, never crash, always say where.

Each case is a directory holding an inventory and a case.yml: the CLI arguments,
the exit code, text that must appear in the output, secrets that must never
appear, and for canary cases the flag under which the canary does fire (so the
canary is proven able to fire). Every run is the real `pdlint` in a fresh process,
with no ANSIBLE_* variables and the case directory as working directory (so an
ansible.cfg there is read, as in a CI checkout), bounded to 10 s and 500 MB.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

CASES_DIR = Path(__file__).parents[1] / "hostile" / "cases"
CASES = sorted(p for p in CASES_DIR.iterdir() if (p / "case.yml").is_file())
KNOWN_KEYS = {"about", "make", "args", "exit", "out", "err", "never", "fires_with"}
TIME_LIMIT_S = 10
MEMORY_LIMIT_MB = 500


@dataclasses.dataclass
class Run:
    code: int
    out: str
    err: str
    max_rss_mb: float
    timed_out: bool


def pdlint_command() -> list[str]:
    script = Path(sys.executable).with_name("pdlint")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pdlint.cli"]


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a CI job: none of the ANSIBLE_* settings tests may have left, a fresh HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["HOME"] = str(home)
    return env


def run(args: list[str], cwd: Path, prefix: list[str] | None = None) -> Run:
    """One pdlint process, killed after the time limit; its own peak memory from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*(prefix or []), *pdlint_command(), *args], cwd=cwd, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, env=clean_env(cwd))
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            proc.kill()

        timer = threading.Timer(TIME_LIMIT_S, kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                   usage.ru_maxrss / 1024, killed.is_set())


def make_fifo(work: Path) -> list[str]:
    (work / "group_vars").mkdir()
    os.mkfifo(work / "group_vars" / "all.yml")
    return []


def make_oversize(work: Path) -> list[str]:
    (work / "host_vars").mkdir()
    with open(work / "host_vars" / "p1.yml", "w") as fh:
        fh.write("vllm_model: m\n")
        fh.write(("# padding\n" * (9 * 1024 * 1024 // 10)) + "\n")
    return []


def make_long_line(work: Path) -> list[str]:
    (work / "host_vars").mkdir()
    (work / "host_vars" / "p1.yml").write_text('vllm_model: "' + "x" * (6 * 1024 * 1024) + '"\n')
    return []


def make_unreadable(work: Path) -> list[str]:
    """chmod 000; as root, run pdlint as nobody (root reads every file)."""
    (work / "group_vars").mkdir()
    secret = work / "group_vars" / "all.yml"
    secret.write_text("vllm_model: m\n")
    secret.chmod(0)
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv is missing: cannot make a file unreadable")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    probe = subprocess.run([*prefix, *pdlint_command(), "--version"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("the unprivileged user cannot run this pdlint install")
    return prefix


MAKERS: dict[str, Callable[[Path], list[str]]] = {
    "fifo": make_fifo, "oversize": make_oversize, "long_line": make_long_line, "unreadable": make_unreadable,
}


def prepared(case: Path, tmp: Path) -> tuple[Path, dict, list[str]]:
    spec = yaml.safe_load((case / "case.yml").read_text())
    assert set(spec) <= KNOWN_KEYS, f"unknown keys in {case.name}/case.yml: {set(spec) - KNOWN_KEYS}"
    work = tmp / case.name
    shutil.copytree(case, work, symlinks=True, ignore=shutil.ignore_patterns("case.yml"))
    prefix = MAKERS[spec["make"]](work) if "make" in spec else []
    if prefix:  # the unprivileged user must reach the tree (mkdtemp makes it 0700)
        for path in (tmp, *(p for p in work.rglob("*") if p.is_dir())):
            path.chmod(0o755)
    return work, spec, prefix


@pytest.fixture
def public_tmp() -> Path:
    """A temporary directory outside pytest's private tree (an unprivileged user may need to enter it)."""
    path = Path(tempfile.mkdtemp(prefix="pdlint-hostile-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case(case: Path, public_tmp: Path) -> None:
    work, spec, prefix = prepared(case, public_tmp)
    text = run(spec["args"], work, prefix)
    assert not text.timed_out, f"{case.name}: still running after {TIME_LIMIT_S} s"
    assert text.max_rss_mb < MEMORY_LIMIT_MB, f"{case.name}: {text.max_rss_mb:.0f} MB"
    assert text.code == spec["exit"], (text.out, text.err)
    for expected in spec.get("out", []):
        assert expected in text.out, (expected, text.out, text.err)
    for expected in spec.get("err", []):
        assert expected in text.err, (expected, text.err)
    assert "Traceback" not in text.err and "internal error" not in text.err, text.err
    assert "[WARNING]" not in text.err, "Ansible's own warnings leaked to stderr: " + text.err
    assert not list(work.rglob("CANARY")), f"{case.name}: the canary fired"

    as_json = run(["--format", "json", *spec["args"]], work, prefix)
    assert as_json.code == spec["exit"]
    if not spec.get("err"):
        assert isinstance(json.loads(as_json.out), list), as_json.out
    for secret in spec.get("never", []):
        for output in (text.out, text.err, as_json.out, as_json.err):
            assert secret not in output, f"{case.name}: a vaulted value was printed"
    assert not list(work.rglob("CANARY")), f"{case.name}: the canary fired"


@pytest.mark.parametrize("case", [c for c in CASES if "fires_with" in yaml.safe_load((c / "case.yml").read_text())],
                         ids=lambda c: c.name)
def test_canary_can_fire(case: Path, public_tmp: Path) -> None:
    """The control: with the opt-in flag the same inventory does run its code, so the canary is live."""
    work, spec, prefix = prepared(case, public_tmp)
    run([*spec["fires_with"], *spec["args"]], work, prefix)
    assert list(work.rglob("CANARY")), f"{case.name}: the canary did not fire even with {spec['fires_with']}"


def test_larger_limit_admits_the_oversized_file(public_tmp: Path) -> None:
    work, spec, _prefix = prepared(CASES_DIR / "oversize", public_tmp)
    assert run(["--max-file-size", "16M", *spec["args"]], work).code == 0
    assert run(["--max-file-size", "16Q", *spec["args"]], work).code == 2


def test_a_vault_password_is_not_kept_for_the_next_load_in_one_process(monkeypatch, capsys) -> None:
    """ansible-core keeps one vault context per process: a load given a password (a language server, an
    embedding program) must not let a later load without one decrypt its values."""
    import json

    from pdlint.cli import main

    monkeypatch.setenv("PDLINT_NO_CACHE", "1")

    def rules(case: str, *args: str) -> list[str]:
        monkeypatch.chdir(CASES_DIR / case)
        main([*args, "--format", "json", "hosts.yml"])
        return sorted(f["rule"] for f in json.loads(capsys.readouterr().out))

    assert rules("vault-value") == ["unresolved"]
    assert rules("vault-password", "--vault-password-file", "vault-pass.txt") == ["schema"]
    assert rules("vault-value") == ["unresolved"]  # was schema: decrypted with the other load's password

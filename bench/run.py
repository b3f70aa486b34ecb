"""Benchmark pdlint against the parse floor and its peers on generated P/D inventories (not a test).

Usage: .venv/bin/python bench/run.py [--sizes 100,1000,10000] [--shapes bench,few,fleet,args] [--runs 5]
                                      [--slow-runs-at-10k 1] [--no-peers] [--out DIR]

Every tool runs as a fresh process (cold start included), through a small wrapper
that reports the child's CPU time and peak RSS (resource.getrusage(RUSAGE_CHILDREN)).
pdlint runs four ways: cold (--no-cache), warm with nothing changed, and warm after one
group_vars or one host_vars file was edited (before every measured run, so each run
sees a fresh edit and the previous run's cache). The cache lives in a temporary
PDLINT_CACHE_DIR; its size on disk is reported beside the inventory's.
Needs check-jsonschema in the venv (`.venv/bin/pip install check-jsonschema`). pdlint's modules are
byte-compiled first (`python -m compileall`), as an installed package is.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "bench"))
from generate import generate

FLOOR = ("import sys, yaml\n"
         "for p in sys.argv[1:]:\n"
         "    with open(p, encoding='utf-8') as f: yaml.load(f.read(), Loader=yaml.CSafeLoader)\n")
WRAP = ("import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([time.perf_counter() - t, r.ru_utime + r.ru_stime, r.ru_maxrss]))\n")


def yaml_files(inv: Path) -> list[str]:
    return sorted(str(p) for p in inv.rglob("*.yml"))


def vars_files(inv: Path) -> list[str]:
    return sorted(str(p) for d in ("group_vars", "host_vars") for p in (inv / d).rglob("*.yml"))


def tools(inv: Path, peers: bool = True) -> dict[str, list[str]]:
    cfg = {"ANSIBLE_CONFIG": str(inv / "empty.cfg")}
    (inv / "empty.cfg").write_text("[defaults]\n")
    os.environ.update(cfg)
    pdlint = [str(BIN / "pdlint"), "--loader", "fast", str(inv)]
    found = {
        "parse floor (CSafeLoader)": [sys.executable, "-c", FLOOR, *yaml_files(inv)],
        "pdlint cold (--no-cache)": [*pdlint, "--no-cache"],
        "pdlint warm, unchanged": pdlint,
        "pdlint warm, 1 group_vars edited": pdlint,
        "pdlint warm, 1 host_vars edited": pdlint,
    }
    if peers:
        found.update({
            "pdlint (reference)": [str(BIN / "pdlint"), "--loader", "ansible", "--no-cache", str(inv)],
            "ansible-inventory --list": [str(BIN / "ansible-inventory"), "-i", str(inv), "--list"],
            "check-jsonschema": [str(BIN / "check-jsonschema"), "--schemafile",
                                 str(ROOT / "schemas" / "pdlint-vars.schema.json"), *vars_files(inv)],
        })
    return found


SLOW = {"pdlint (reference)", "ansible-inventory --list", "check-jsonschema"}


def _toggle(path: Path, a: str, b: str) -> Callable[[], None]:
    """An edit that flips a value back and forth: every call changes the file."""
    def edit() -> None:
        text = path.read_text()
        path.write_text(text.replace(a, b) if a in text else text.replace(b, a))
    return edit


def edits(inv: Path) -> dict[str, Callable[[], None] | None]:
    """What happens before each measured run of a tool (the edited file is the first one of its kind)."""
    host_vars = sorted((inv / "host_vars").glob("*.yml"))[0]
    return {"pdlint warm, 1 group_vars edited": _toggle(inv / "group_vars" / "dep0000.yml",
                                                        "vllm_dtype: bfloat16", "vllm_dtype: float16"),
            "pdlint warm, 1 host_vars edited": _toggle(host_vars, "vllm_port: 8000", "vllm_port: 8001")}


def measure(cmd: list[str], runs: int, before: Callable[[], None] | None = None) -> tuple[float, float, float]:
    """Median wall seconds, median CPU seconds (user+sys: less sensitive to a shared machine), max peak RSS (MB)."""
    times, cpus, peaks = [], [], []
    subprocess.run(cmd, capture_output=True)  # warm runs find the cache this leaves; cold ones ignore it
    for _ in range(runs):
        if before is not None:
            before()
        out = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True, check=True)
        seconds, cpu, kb = json.loads(out.stdout)
        times.append(seconds)
        cpus.append(cpu)
        peaks.append(kb / 1024)
    return statistics.median(times), statistics.median(cpus), max(peaks)


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--shapes", default="bench,few,fleet,args", help="inventory shapes of bench/generate.py")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--slow-runs-at-10k", type=int, default=1)
    ap.add_argument("--no-peers", action="store_true", help="only the floor and pdlint's fast path")
    ap.add_argument("--out", help="keep the generated inventories here")
    args = ap.parse_args()
    # As users run it: pip compiles an installed package's bytecode, and a normal environment writes it on first
    # import. With PYTHONDONTWRITEBYTECODE set (as on CI machines) an editable install would compile every
    # module on every run (about 0.07 s); compile them once, as pip would, before anything is timed.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "plugins" / "plugin_utils" / "pdlint")],
                   check=True)
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="pdlint-bench-"))
    rows = []
    for shape in args.shapes.split(","):
        for n in map(int, args.sizes.split(",")):
            inv = base / f"{shape}{n}"
            if not inv.exists():
                generate(n, inv, shape)
            cache = Path(tempfile.mkdtemp(prefix="pdlint-bench-cache-"))
            os.environ["PDLINT_CACHE_DIR"] = str(cache)
            os.environ.pop("PDLINT_NO_CACHE", None)
            results = {}
            before = edits(inv)
            for name, cmd in tools(inv, not args.no_peers).items():
                runs = args.slow_runs_at_10k if n >= 10000 and name in SLOW else args.runs
                results[name] = (*measure(cmd, runs, before.get(name)), runs)
                print(f"  {shape:5} {n:>6} {name:34} {results[name][0]:8.3f} s wall {results[name][1]:8.3f} s cpu "
                      f"{results[name][2]:7.1f} MB ({runs} runs)", file=sys.stderr, flush=True)
            print(f"  {shape:5} {n:>6} inventory {size_mb(inv):.1f} MB, cache {size_mb(cache):.3f} MB",
                  file=sys.stderr, flush=True)
            shutil.rmtree(cache)
            floor, floor_cpu = results["parse floor (CSafeLoader)"][:2]
            for name, (sec, cpu, mb, runs) in results.items():
                rows.append(f"| {shape} | {n:,} | {name} | {sec:.3f} | {sec / floor:.2f}x "
                            f"| {cpu:.3f} | {cpu / floor_cpu:.2f}x | {mb:.0f} | {runs} |")
    print("| shape | hosts | tool | wall (s) | wall / floor | CPU (s) | CPU / floor | peak RSS (MB) | runs |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if not args.out:
        shutil.rmtree(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark pdlint against the parse floor and its peers on generated P/D inventories (not a test).

Usage: .venv/bin/python bench/run.py [--sizes 100,1000,10000] [--runs 5] [--slow-runs-at-10k 1] [--out DIR]

Every tool runs as a fresh process (cold start included), through a small wrapper
that reports the child's CPU time and peak RSS (resource.getrusage(RUSAGE_CHILDREN)).
Needs check-jsonschema in the venv (`.venv/bin/pip install check-jsonschema`).
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


def tools(inv: Path) -> dict[str, list[str]]:
    cfg = {"ANSIBLE_CONFIG": str(inv / "empty.cfg")}
    (inv / "empty.cfg").write_text("[defaults]\n")
    os.environ.update(cfg)
    return {
        "parse floor (CSafeLoader)": [sys.executable, "-c", FLOOR, *yaml_files(inv)],
        "pdlint (fast)": [str(BIN / "pdlint"), "--loader", "fast", str(inv)],
        "pdlint (reference)": [str(BIN / "pdlint"), "--loader", "ansible", str(inv)],
        "ansible-inventory --list": [str(BIN / "ansible-inventory"), "-i", str(inv), "--list"],
        "check-jsonschema": [str(BIN / "check-jsonschema"), "--schemafile",
                             str(ROOT / "schemas" / "pdlint-vars.schema.json"), *vars_files(inv)],
    }


SLOW = {"pdlint (reference)", "ansible-inventory --list", "check-jsonschema"}


def measure(cmd: list[str], runs: int) -> tuple[float, float, float]:
    """Median wall seconds, median CPU seconds (user+sys: less sensitive to a shared machine), max peak RSS (MB)."""
    times, cpus, peaks = [], [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True, check=True)
        seconds, cpu, kb = json.loads(out.stdout)
        times.append(seconds)
        cpus.append(cpu)
        peaks.append(kb / 1024)
    return statistics.median(times), statistics.median(cpus), max(peaks)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--slow-runs-at-10k", type=int, default=1)
    ap.add_argument("--out", help="keep the generated inventories here")
    args = ap.parse_args()
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="pdlint-bench-"))
    rows = []
    for n in map(int, args.sizes.split(",")):
        inv = base / f"inv{n}"
        if not inv.exists():
            generate(n, inv)
        results = {}
        for name, cmd in tools(inv).items():
            runs = args.slow_runs_at_10k if n >= 10000 and name in SLOW else args.runs
            results[name] = (*measure(cmd, runs), runs)
            print(f"  {n:>6} {name:28} {results[name][0]:8.3f} s wall {results[name][1]:8.3f} s cpu "
                  f"{results[name][2]:7.1f} MB ({runs} runs)", file=sys.stderr, flush=True)
        floor, floor_cpu = results["parse floor (CSafeLoader)"][:2]
        ai, ai_cpu = results["ansible-inventory --list"][:2]
        for name, (sec, cpu, mb, runs) in results.items():
            rows.append(f"| {n:,} | {name} | {sec:.3f} | {sec / floor:.2f}x | {sec / ai:.3f}x "
                        f"| {cpu:.3f} | {cpu / floor_cpu:.2f}x | {cpu / ai_cpu:.3f}x | {mb:.0f} | {runs} |")
    print("| hosts | tool | wall (s) | wall / floor | wall / ansible-inventory "
          "| CPU (s) | CPU / floor | CPU / ansible-inventory | peak RSS (MB) | runs |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if not args.out:
        shutil.rmtree(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

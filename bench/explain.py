"""`pdlint explain` against `pdlint` on a generated inventory (not a test), with bench/run.py's harness.

Usage: .venv/bin/python bench/explain.py [--hosts 1000] [--runs 5]
Prints a Markdown table: wall and CPU seconds (median), peak RSS, and the output size of each format.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate
from run import BIN, measure


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pdlint-explain-bench-") as tmp:
        inv = Path(tmp) / "inv"
        generate(args.hosts, inv)
        (inv / "empty.cfg").write_text("[defaults]\n")
        os.environ["ANSIBLE_CONFIG"] = str(inv / "empty.cfg")  # as bench/run.py: no developer ansible.cfg
        pdlint = str(BIN / "pdlint")
        cases = {"pdlint": [pdlint, str(inv)]}
        for fmt in ("text", "json", "markdown", "html"):
            cases[f"pdlint explain -f {fmt}"] = [pdlint, "explain", str(inv), "-f", fmt, "-o", f"{tmp}/out.{fmt}"]
        rows = []
        base = 0.0
        for name, cmd in cases.items():
            wall, cpu, mb = measure(cmd, args.runs)
            base = base or wall
            fmt = cmd[-3] if "-o" in cmd else None
            size = f"{Path(f'{tmp}/out.{fmt}').stat().st_size / 1e6:.1f} MB" if fmt else "-"
            rows.append(f"| {name} | {wall:.2f} | {wall / base:.2f}x | {cpu:.2f} | {mb:.0f} | {size} |")
            print(f"  {name:28} {wall:6.2f} s", file=sys.stderr, flush=True)
    print(f"| {args.hosts:,} hosts | wall (s) | vs pdlint | CPU (s) | peak RSS (MB) | output |")
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Record pdlint's output over every example, fixture, hostile case and generated inventory, to compare two trees.

A speed change must not change one byte of output: run this for the tree before and the tree after, then
`diff -r OUT_BEFORE OUT_AFTER`. The run time pdlint prints ("(0.12 s)") is blanked.

Usage: .venv/bin/python bench/golden.py TREE OUT [--gen DIR]
       TREE is the plugins/plugin_utils folder of the tree to run (put first on PYTHONPATH); generated
       inventories (every shape of bench/generate.py at 100 and 1,000 hosts) are kept in --gen and reused.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from generate import SHAPES, generate

FORMATS = ("text", "json", "sarif")
_SECONDS = re.compile(rb"\(\d+\.\d+ s\)")


def cases(gen: Path) -> list[Path]:
    """Every inventory to run: examples/*, tests/fixtures/* (and their inventory subfolders), hostile cases."""
    found = [p for p in sorted((ROOT / "examples").iterdir()) if p.is_dir()]
    for top in sorted((ROOT / "tests" / "fixtures").iterdir()):
        if top.is_dir():
            found.append(top)
            found += [p for p in sorted(top.iterdir()) if p.is_dir() and p.name not in ("group_vars", "host_vars")]
    found += [p for p in sorted((ROOT / "tests" / "hostile" / "cases").iterdir()) if p.is_dir()]
    for shape in SHAPES:
        for n in (100, 1000):
            inv = gen / f"{shape}{n}"
            if not inv.exists():
                generate(n, inv, shape)
            found.append(inv)
    return found


def run(tree: Path, args: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    done = subprocess.run([sys.executable, "-m", "pdlint.cli", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=300, check=False)
    return _SECONDS.sub(b"(T s)", b"rc=%d\n--stdout\n%s\n--stderr\n%s" % (done.returncode, done.stdout, done.stderr))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("out")
    ap.add_argument("--gen", default=str(Path(tempfile.gettempdir()) / "pdlint-golden-gen"))
    args = ap.parse_args()
    tree, out = Path(args.tree).resolve(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = out / "empty.cfg"  # no ansible.cfg of the machine's
    cfg.write_text("[defaults]\n")
    env = {**os.environ, "PYTHONPATH": str(tree), "ANSIBLE_CONFIG": str(cfg.resolve())}
    env.pop("GITHUB_ACTIONS", None)
    for inv in cases(Path(args.gen)):
        name = str(inv.relative_to(ROOT) if inv.is_relative_to(ROOT) else inv.name).replace("/", "__")
        for fmt in FORMATS:
            (out / f"{name}.{fmt}").write_bytes(run(tree, ["--no-cache", "-f", fmt, "."], inv, env))
        # the cached path: a first run fills a fresh cache, the second reads it
        with tempfile.TemporaryDirectory() as cache:
            warm = {**env, "PDLINT_CACHE_DIR": cache}
            for step in ("fill", "hit"):
                (out / f"{name}.cache-{step}").write_bytes(run(tree, ["-f", "json", "."], inv, warm))
        (out / f"{name}.explain").write_bytes(run(tree, ["explain", "-f", "json", "."], inv, env))
        print(name, file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

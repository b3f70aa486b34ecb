"""The README's quickstart shape at scale: one deployment, prefill:decode 1:3, the side channel host (not a test).

`template` is the quickstart as written: `VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ inventory_hostname }}"` once in
group_vars/all.yml. `written` is the same inventory with the value written on every host in hosts.yml, which is
what the template renders to, so the two give the same findings and their ratio is the template's cost.
Each size and shape runs as a fresh process (`--no-cache`), the shapes paired A B A B; the figures are the median
wall time and the largest peak RSS.

Usage: .venv/bin/python bench/quickstart.py [--sizes 1000,10000,100000] [--runs 3] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRAP = ("import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter(); done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([time.perf_counter() - t, r.ru_maxrss, done.returncode, done.stdout[-300:]]))\n")
SHAPES = ("template", "written")


def generate(n: int, out: Path, shape: str) -> None:
    (out / "group_vars").mkdir(parents=True, exist_ok=True)
    env = '\nvllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ inventory_hostname }}"\n' if shape == "template" else "\n"
    (out / "group_vars" / "all.yml").write_text(
        "vllm_pd_deployment: chat\nvllm_model: meta-llama/Llama-3.1-8B-Instruct" + env, encoding="utf-8")
    for role, tp, kv_role in (("prefill", 2, "kv_producer"), ("decode", 4, "kv_consumer")):
        (out / "group_vars" / f"chat_{role}.yml").write_text(
            f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {tp}\n"
            f"vllm_kv_transfer_config: {{kv_connector: NixlConnector, kv_role: {kv_role}}}\n", encoding="utf-8")
    prefill = n // 4
    lines = ["all:", "  children:"]
    for role, first, count, tag in (("prefill", 0, prefill, "p"), ("decode", 0, n - prefill, "d")):
        lines += [f"    chat_{role}:", "      hosts:"]
        for i in range(first, first + count):
            host = f"gpu-{tag}{i}"
            own = "{}" if shape == "template" else json.dumps({"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": host}})
            lines.append(f"        {host}: {own}")
    (out / "hosts.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(inv: Path) -> tuple[float, float, int, str]:
    cmd = [sys.executable, "-m", "pdlint.cli", "--no-cache", str(inv)]
    done = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True, check=True)
    wall, kb, code, tail = json.loads(done.stdout)
    return wall, kb / 1024, code, tail.strip().splitlines()[-1] if tail.strip() else ""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", help="keep the generated inventories here")
    args = ap.parse_args()
    base = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="pdlint-quickstart-"))
    print("| hosts | shape | wall s (median) | peak MB | exit | summary |")
    print("|---:|---|---:|---:|---:|---|")
    for n in map(int, args.sizes.split(",")):
        invs = {shape: base / f"{shape}{n}" for shape in SHAPES}
        for shape, inv in invs.items():
            if not inv.exists():
                generate(n, inv, shape)
        walls: dict[str, list[float]] = {s: [] for s in SHAPES}
        peaks: dict[str, float] = {s: 0.0 for s in SHAPES}
        last: dict[str, tuple[int, str]] = {}
        for _ in range(args.runs):
            for shape, inv in invs.items():
                wall, mb, code, summary = run(inv)
                walls[shape].append(wall)
                peaks[shape] = max(peaks[shape], mb)
                last[shape] = (code, summary)
        for shape in SHAPES:
            code, summary = last[shape]
            summary = summary.split(";")[0]
            print(f"| {n:,} | {shape} | {statistics.median(walls[shape]):.2f} | {peaks[shape]:.0f} | {code} | {summary} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

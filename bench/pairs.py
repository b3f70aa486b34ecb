"""Pair rules at scale: one deployment, prefill:decode 1:3, every host with values of its own (not a test).

Each host sets its own vllm_port, VLLM_NIXL_SIDE_CHANNEL_HOST and _PORT and UCX/NCCL devices, as a real multi-host
NIXL fleet does; decode TP 6 on a 64-head model, so tp[heads] hints run for every decode host. This tree and a
baseline tree (`--base DIR`, its plugins/plugin_utils put first on PYTHONPATH) run as fresh processes, paired
(A B A B) at each size; the figure is each run's wall time and peak RSS, and the ratio of medians.

Usage: .venv/bin/python bench/pairs.py [--prefill 100,300,5000] [--base /path/to/other/checkout] [--runs 2]
       [--base-limit 2000] (the baseline is skipped above that many prefill hosts: it walks P x D pairs)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRAP = ("import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([time.perf_counter() - t, r.ru_maxrss]))\n")


def generate(prefill: int, out: Path) -> None:
    (out / "group_vars").mkdir(parents=True, exist_ok=True)
    (out / "group_vars" / "all.yml").write_text(
        "vllm_pd_deployment: chat\nvllm_model: meta-llama/Llama-3.3-70B-Instruct\nvllm_version: 0.32.0\n"
        "vllm_host_gpu_count: 8\n", encoding="utf-8")
    for role, tp, kv_role in (("prefill", 4, "kv_producer"), ("decode", 6, "kv_consumer")):
        (out / "group_vars" / f"chat_{role}.yml").write_text(
            f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {tp}\n"
            f"vllm_kv_transfer_config: {{kv_connector: NixlConnector, kv_role: {kv_role}}}\n", encoding="utf-8")
    lines = ["all:", "  children:"]
    for role, count, tag in (("prefill", prefill, "p"), ("decode", 3 * prefill, "d")):
        lines += [f"    chat_{role}:", "      hosts:"]
        for i in range(count):
            host = f"gpu-{tag}{i:05d}"
            own = {"vllm_port": 8000 + i % 1000,
                   "vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": host, "VLLM_NIXL_SIDE_CHANNEL_PORT": str(5600 + i % 97),
                                "UCX_NET_DEVICES": f"mlx5_{i % 7}:1", "NCCL_SOCKET_IFNAME": f"eth{i % 3}"}}
            lines.append(f"        {host}: {json.dumps(own)}")
    (out / "hosts.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(tree: Path, inv: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(tree / "plugins" / "plugin_utils")}
    done = subprocess.run([sys.executable, "-c", WRAP, sys.executable, "-m", "pdlint.cli", "--no-cache", str(inv)],
                          env=env, capture_output=True, text=True, check=True)
    wall, rss = json.loads(done.stdout)
    return wall, rss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefill", default="100,300,5000")
    ap.add_argument("--base", type=Path)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--base-limit", type=int, default=2000)
    args = ap.parse_args()
    print("| prefill x decode hosts | this tree: wall s (peak MB) | base: wall s (peak MB) | base / this |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for prefill in map(int, args.prefill.split(",")):
            inv = Path(tmp) / f"p{prefill}"
            generate(prefill, inv)
            trees = [ROOT] + ([args.base] if args.base and prefill <= args.base_limit else [])
            times: dict[Path, list[tuple[float, int]]] = {t: [] for t in trees}
            for _ in range(args.runs):  # paired: A B A B
                for tree in trees:
                    times[tree].append(run(tree, inv))
            cells = []
            for tree in (ROOT, args.base):
                if tree in times:
                    wall = statistics.median(w for w, _ in times[tree])
                    cells.append((wall, f"{wall:.2f} ({max(r for _, r in times[tree]) // 1024})"))
                else:
                    cells.append((0.0, "not run"))
            ratio = f"{cells[1][0] / cells[0][0]:.1f}x" if cells[1][0] else "-"
            print(f"| {prefill:,} x {3 * prefill:,} | {cells[0][1]} | {cells[1][1]} | {ratio} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

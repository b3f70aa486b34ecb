"""Write a realistic N-host P/D inventory: hosts.yml, group_vars/ per deployment and role, host_vars/ per host.

Shapes: `bench` (the default) writes a host_vars file for every host; `few` writes one for every
FEW_EVERY-th host only (most fleets set per-host values in hosts.yml or not at all), so the
inventory has far fewer files per host and pdlint's per-host work is not hidden behind parsing.
`fleet` is what most fleets look like: deployments of 3 prefill + 5 decode hosts, the hosts of one role in
one deployment identical engines (group_vars per deployment and per role), a host_vars file for one host in
FLEET_EVERY only.
`args` is `fleet` kept as a vLLM role keeps it (examples/role): each role's engine a `vllm_args` command line in
its group_vars (model, parallelism, block size, KV transfer config), which the launch stage reads into the contract.

Usage: python bench/generate.py N DIR [bench|few|fleet|args]
"""
from __future__ import annotations

import sys
from pathlib import Path

SHAPES = ("bench", "few", "fleet", "args")
FEW_EVERY = 16  # `few`: one host in 16 has a host_vars file
FLEET_EVERY = 4  # `fleet`: one host in 4 has a host_vars file
PER_DEPLOYMENT = 8  # 4 prefill + 4 decode hosts (`fleet`: 3 + 5), one engine each
MODELS = [("meta-llama/Llama-3.3-70B-Instruct", "NixlConnector", 4, 8),
          ("Qwen/Qwen2.5-72B-Instruct", "NixlConnector", 4, 4),
          ("deepseek-ai/DeepSeek-R1", "MooncakeConnector", 8, 8)]


def _role_args(role: str, model: str, tp: int, connector: str, kv_role: str) -> str:
    """A role's group_vars with its engine as the command line a role's template passes to `vllm serve`."""
    return (f"vllm_pd_role: {role}\nvllm_args: >-\n  vllm serve {model}\n  --tensor-parallel-size {tp}\n"
            f"  --block-size 16\n  --kv-transfer-config\n"
            f"  '{{\"kv_connector\": \"{connector}\", \"kv_role\": \"{kv_role}\"}}'\n")


def generate(n: int, out: Path, shape: str = "bench") -> None:
    (out / "group_vars").mkdir(parents=True, exist_ok=True)
    (out / "host_vars").mkdir(exist_ok=True)
    (out / "group_vars" / "all.yml").write_text(
        "vllm_version: 0.32.0\nvllm_host_gpu_count: 8\nvllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_PORT: '5600'\n")
    lines = ["all:", "  children:"]
    for d in range((n + PER_DEPLOYMENT - 1) // PER_DEPLOYMENT):
        model, connector, p_tp, d_tp = MODELS[d % len(MODELS)]
        dep = f"dep{d:04d}"
        (out / "group_vars" / f"{dep}.yml").write_text(
            f"vllm_pd_deployment: {dep}\nvllm_dtype: bfloat16\n" if shape == "args" else
            f"vllm_pd_deployment: {dep}\nvllm_model: {model}\nvllm_block_size: 16\nvllm_dtype: bfloat16\n")
        lines += [f"    {dep}:", "      children:"]
        size = min(PER_DEPLOYMENT, n - d * PER_DEPLOYMENT)
        prefill = min(size, 3) if shape in ("fleet", "args") else (size + 1) // 2
        first = {"prefill": d * PER_DEPLOYMENT, "decode": d * PER_DEPLOYMENT + prefill}
        count = {"prefill": prefill, "decode": size - prefill}
        for role, tp, kv_role in (("prefill", p_tp, "kv_producer"), ("decode", d_tp, "kv_consumer")):
            group = f"{dep}_{role}"
            (out / "group_vars" / f"{group}.yml").write_text(
                _role_args(role, model, tp, connector, kv_role) if shape == "args" else
                f"vllm_pd_role: {role}\nvllm_tensor_parallel_size: {tp}\nvllm_kv_transfer_config:\n"
                f"  kv_connector: {connector}\n  kv_role: {kv_role}\n")
            lines += [f"        {group}:", "          hosts:"]
            for index in range(first[role], first[role] + count[role]):
                host = f"gpu{index:05d}"
                address = f"10.{index // 65536}.{index // 256 % 256}.{index % 256}"
                if shape == "few":  # per-host values inline in hosts.yml; a host_vars file for a few hosts only
                    lines.append(f"            {host}: {{ansible_host: {address}, "
                                 f"vllm_env: {{VLLM_NIXL_SIDE_CHANNEL_HOST: {address}}}}}")
                    if index % FEW_EVERY:
                        continue
                elif shape in ("fleet", "args"):
                    lines.append(f"            {host}: {{ansible_host: {address}}}")
                    if index % FLEET_EVERY:
                        continue
                else:
                    lines.append(f"            {host}: {{ansible_host: {address}}}")
                (out / "host_vars" / f"{host}.yml").write_text(
                    f"vllm_node: {host}\nvllm_port: 8000\nvllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: {host}.fleet\n"
                    f"  VLLM_NIXL_SIDE_CHANNEL_PORT: '5600'\n  CUDA_VISIBLE_DEVICES: '{','.join(map(str, range(tp)))}'\n")
    (out / "hosts.yml").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    generate(int(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:4])

"""Cached runs on a fleet whose hosts share profiles say what uncached runs say.

Most hosts of such a fleet have no values of their own: the hosts of one role in one deployment resolve to one
variable set (group_vars per deployment and per role, the role files one text in every deployment, which the
preflight scans once), a few hosts have a host_vars file, and one role's value is a template reading
inventory_hostname (so each of those hosts renders its own). Half the deployments keep each role's engine as a
`vllm_args` command line in its group_vars, as a vLLM role does. Warm, and after an edit of a group_vars file and
of a host_vars file, the cached answer is the uncached one, in text and in JSON.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pdlint.cli import main
from pdlint.engine import core as engine

MODELS = ("meta-llama/Llama-3.3-70B-Instruct", "Qwen/Qwen2.5-72B-Instruct")
PREFILL, DECODE = 3, 5  # hosts per role in each deployment
_TIME = re.compile(r"\(\d+\.\d+ s\)")  # the run time the text summary prints
_TEMPLATE = 'vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: "{{ inventory_hostname }}.fleet"}\n'


def _role(role: str, model: str, tp: int, args: bool) -> str:
    kv_role = "kv_producer" if role == "prefill" else "kv_consumer"
    if args:
        return (f"vllm_pd_role: {role}\nvllm_args: >-\n  vllm serve {model}\n  --tensor-parallel-size {tp}\n"
                f"  --kv-transfer-config\n  '{{\"kv_connector\": \"NixlConnector\", \"kv_role\": \"{kv_role}\"}}'\n")
    return (f"vllm_pd_role: {role}\nvllm_model: {model}\nvllm_tensor_parallel_size: {tp}\n"
            f"vllm_kv_transfer_config:\n  kv_connector: NixlConnector\n  kv_role: {kv_role}\n"
            + (_TEMPLATE if role == "prefill" else ""))


def _fleet(base: Path, deployments: int = 6) -> Path:
    """Deployments of 3 prefill + 5 decode hosts; the last one's decode TP 6 against prefill 4 (findings)."""
    inv = base / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "host_vars").mkdir()
    (inv / "group_vars" / "all.yml").write_text("vllm_version: 0.32.0\nvllm_host_gpu_count: 8\n")
    lines = ["all:", "  children:"]
    index = 0
    for d in range(deployments):
        dep, model, args = f"dep{d}", MODELS[d % 2], d % 4 >= 2
        (inv / "group_vars" / f"{dep}.yml").write_text(f"vllm_pd_deployment: {dep}\nvllm_dtype: bfloat16\n")
        lines += [f"    {dep}:", "      children:"]
        for role, count, tp in (("prefill", PREFILL, 4), ("decode", DECODE, 6 if d == deployments - 1 else 4)):
            (inv / "group_vars" / f"{dep}_{role}.yml").write_text(_role(role, model, tp, args))
            lines += [f"        {dep}_{role}:", "          hosts:"]
            for _unused in range(count):
                host = f"gpu{index:03d}"
                lines.append(f"            {host}: {{ansible_host: 10.0.0.{index + 1}}}")
                if index % 4 == 0:  # a host_vars file for a quarter of the hosts
                    (inv / "host_vars" / f"{host}.yml").write_text(f"vllm_node: {host}\nvllm_port: 8000\n")
                index += 1
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    return inv


def _run(inv: Path, fmt: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*extra, "--format", fmt, str(inv)])
    out, err = capsys.readouterr()
    return code, _TIME.sub("(T s)", out), err


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_cached_equals_uncached_on_a_fleet_of_shared_profiles(fmt: str, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("PDLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("PDLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    inv = _fleet(tmp_path)
    plain = _run(inv, fmt, capsys, "--no-cache")
    assert plain[0] == 1 and "gpu045" in plain[1] and "gpu000.fleet" not in plain[1]  # the last deployment's
    assert _run(inv, fmt, capsys) == plain  # fills the cache
    computed: list[int] = []
    real = engine.lint
    monkeypatch.setattr(engine, "lint", lambda *a, **k: computed.append(1) or real(*a, **k))
    assert _run(inv, fmt, capsys) == plain and not computed  # warm: answered from the cache
    monkeypatch.setattr(engine, "lint", real)
    edits = [  # a role file one text with another deployment's, one host's own file, a role's command line
        (inv / "group_vars" / "dep1_decode.yml", "vllm_tensor_parallel_size: 4", "vllm_tensor_parallel_size: 3"),
        (inv / "host_vars" / "gpu004.yml", "vllm_port: 8000\n", "vllm_port: 8000\nvllm_tensor_parallel_size: 6\n"),
        (inv / "group_vars" / "dep2_prefill.yml", "--tensor-parallel-size 4", "--tensor-parallel-size 6"),
    ]
    before = plain
    for path, old, new in edits:
        _edit(path, old, new)
        cached = _run(inv, fmt, capsys)
        assert cached == _run(inv, fmt, capsys, "--no-cache"), path.name
        assert _run(inv, fmt, capsys) == cached, path.name  # and again, from the entry just written
        assert cached != before, path.name  # each edit changes the answer, so the cache cannot hide it
        before = cached

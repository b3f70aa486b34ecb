"""examples/kubernetes: the seed's mistake (MoRIIO, prefill TP 4, decode TP 6) in each system's manifests, found by
the real `pdlint` command at the decode's TP as written (the argument item, the word inside a `sh -c` string, the
pool's parallelism.tensor, the chart value)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

EXAMPLES = ROOT / "examples" / "kubernetes"
MORIIO = "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)"
HEADS = "128 attention heads are not divisible by TP 6"


def pdlint(*args: str, cwd: Path = ROOT) -> tuple[int, str, str]:
    """The real command, in a child process with this tree's package first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PDLINT_"))}
    env["PYTHONPATH"] = str(ROOT / "plugins" / "plugin_utils")
    env["PDLINT_NO_CACHE"] = "1"
    done = subprocess.run([sys.executable, "-m", "pdlint.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    return done.returncode, done.stdout, done.stderr


def findings(*args: str) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = pdlint(*args, "--format", "json")
    assert code in (0, 1), err + out
    return code, json.loads(out)


# (folder, file, decode TP's line and column, deployment, the decode and prefill hosts, extra options)
CASES = [
    ("plain", "deepseek.yaml", 52, 15, "deepseek-r1", ["deepseek-decode-0", "deepseek-prefill-0"], []),
    ("dynamo", "deepseek.yaml", 55, 15, "deepseek-dynamo",
     ["deepseek-dynamo-vllmdecodeworker-0", "deepseek-dynamo-vllmprefillworker-0"], []),
    ("kserve", "deepseek.yaml", 17, 13, "deepseek-kserve", ["deepseek-kserve-decode-0", "deepseek-kserve-prefill-0"],
     []),
    ("aibrix", "deepseek.yaml", 53, 23, "deepseek-aibrix", ["deepseek-aibrix-decode-0", "deepseek-aibrix-prefill-0"],
     []),
    ("llm-d", "deepseek.yaml", 48, 23, "deepseek-llm-d", ["deepseek-llm-d-decode-0", "deepseek-llm-d-prefill-0"], []),
    ("modelservice", "values.yaml", 17, 13, "deepseek-ai/DeepSeek-V3",
     ["deepseek-ai-deepseek-v3-decode-0", "deepseek-ai-deepseek-v3-prefill-0"], ["--vllm-version", "0.32.0"]),
]


@pytest.mark.parametrize(("folder", "name", "line", "column", "deployment", "hosts", "extra"), CASES,
                         ids=[c[0] for c in CASES])
def test_seed_mistake_at_the_decode_tp(folder: str, name: str, line: int, column: int, deployment: str,
                                       hosts: list[str], extra: list[str]) -> None:
    code, found = findings(f"examples/kubernetes/{folder}", *extra)
    file = f"examples/kubernetes/{folder}/{name}"
    assert code == 1
    assert [(f["rule"], f["message"], f["file"], f["line"], f["column"], f["hosts"], f["deployment"])
            for f in found] == [
        ("tp-ratio[moriio]", MORIIO, file, line, column, hosts, deployment),
        ("tp[heads]", HEADS, file, line, column, hosts[:1], deployment),
    ]
    written = (EXAMPLES / folder / name).read_text(encoding="utf-8").splitlines()[line - 1]
    assert written[column - 1:].startswith(("--tensor-parallel-size", "6")), written


def test_the_text_output_points_at_the_line() -> None:
    code, out, _err = pdlint("examples/kubernetes/plain")
    assert code == 1
    assert out.splitlines()[0] == f"examples/kubernetes/plain/deepseek.yaml:52:15: tp-ratio[moriio] {MORIIO}"
    assert out.splitlines()[-1].startswith("pdlint: 2 errors in 2 hosts, 1 deployment (")


def test_the_whole_folder_is_one_set() -> None:
    """Every system at once: each keeps its own deployment (nothing pairs across systems)."""
    code, found = findings("examples/kubernetes", "--vllm-version", "0.32.0")
    assert code == 1
    assert sorted((f["deployment"], f["rule"]) for f in found) == sorted(
        (c[4], rule) for c in CASES for rule in ("tp-ratio[moriio]", "tp[heads]"))


def test_explain_says_how_each_value_was_decided() -> None:
    """The side, the deployment, the release and the GPUs: each with the marker it came from and its line."""
    code, out, _err = pdlint("explain", "examples/kubernetes/dynamo")
    assert code == 0
    file = "examples/kubernetes/dynamo/deepseek.yaml"
    assert "deployment deepseek-dynamo (vLLM 0.32.0)" in out
    assert (f"deepseek-dynamo-vllmdecodeworker-0: vllm_pd_role decode <- Dynamo service VllmDecodeWorker: "
            f"subComponentType decode ({file}:43:25)") in out
    assert (f"deepseek-dynamo-vllmdecodeworker-0, deepseek-dynamo-vllmprefillworker-0: vllm_pd_deployment "
            f"deepseek-dynamo <- the DynamoGraphDeployment deepseek-dynamo ties its services ({file}:8:9)") in out
    assert (f"vllm_version 0.32.0 <- annotation pdlint.io/vllm-version on the DynamoGraphDeployment "
            f"({file}:10:29)") in out
    assert f"vllm_host_gpu_count 8 <- Dynamo service VllmDecodeWorker: resources gpu ({file}:47:16)" in out


def test_explain_names_the_kv_role_and_the_annotation() -> None:
    code, out, _err = pdlint("explain", "examples/kubernetes/plain")
    file = "examples/kubernetes/plain/deepseek.yaml"
    assert code == 0
    assert f"deepseek-decode-0: vllm_pd_role decode <- kv_role kv_consumer in --kv-transfer-config ({file}:55:15)" in out
    assert (f"vllm_pd_deployment deepseek-r1 <- annotation pdlint.io/deployment on the Deployment ({file}:37:27)"
            in out)
    assert f"vllm_version 0.32.0 <- the image tag v0.32.0 ({file}:48:18)" in out

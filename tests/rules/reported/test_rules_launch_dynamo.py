"""Dynamo workers (`python -m dynamo.vllm`) as Dynamo runs them: no vLLM HTTP API
(the ingress is `python -m dynamo.frontend`), an engine-only vLLM parser, and launchers pdlint does not model."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.engine import core as engine
from pdlint.load import select

NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
HEAD = """\
all:
  vars: {vllm_pd_deployment: qwen, vllm_version: "%s", vllm_host_gpu_count: 2}
  hosts:
    gpu-n01:
      vllm_instances:
"""


def _lint(tmp_path: Path, text: str, loader: str = "fast") -> engine.Result:
    write_tree(tmp_path, {"hosts.yml": text})
    return engine.lint(select.load([str(tmp_path / "hosts.yml")], loader=loader))


def _where(text: str, marker: str, after: str = "") -> tuple[int, int]:
    """1-based line and column of marker's first appearance after the text after."""
    index = text.index(marker, text.index(after) if after else 0)
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _item(shape: str, side: str, env: str, port: str = "") -> str:
    """One vllm_instances item running a Dynamo worker, its line written in shape."""
    words = ["python3", "-m", "dynamo.vllm", "--model", "Qwen/Qwen3-0.6B", "--disaggregation-mode", side,
             "--kv-transfer-config", NIXL]
    extra = f"          port: {port}\n" if port else ""
    if shape == "list":
        listed = "".join(f"            - '{w}'\n" for w in words)
        return f"        - args:\n{listed}{extra}          env: {env}\n"
    if shape == "launcher variable":  # the engine written in variables, vllm_launcher saying who starts it
        return (f"        - pd_role: {side}\n          launcher: dynamo\n          model: Qwen/Qwen3-0.6B\n"
                f"          kv_transfer_config: {NIXL}\n{extra}          env: {env}\n")
    line = " ".join(words[:-1]) + f" '{NIXL}'"
    return f"        - args: >-\n            {line}\n{extra}          env: {env}\n"


@pytest.mark.parametrize("port", ["", "8000", "null"])
@pytest.mark.parametrize("shape", ["string", "list", "launcher variable"])
def test_a_dynamo_worker_binds_no_api_port(tmp_path: Path, shape: str, port: str) -> None:
    """Two workers on one node, neither with a port of its own (or both with the same): no API-port collision."""
    text = HEAD % "0.33.0" + _item(shape, "decode", '{CUDA_VISIBLE_DEVICES: "0", DYN_SYSTEM_PORT: "9345"}', port) \
        + _item(shape, "prefill", '{CUDA_VISIBLE_DEVICES: "1", DYN_SYSTEM_PORT: "9346", '
                'VLLM_NIXL_SIDE_CHANNEL_PORT: "21000"}', port)
    result = _lint(tmp_path, text)
    assert result.findings == [], result.findings
    assert {i.launcher for i in result.topology.instances} == {"dynamo"}


@pytest.mark.parametrize("shape", ["string", "list"])
def test_dynamo_system_ports_collide(tmp_path: Path, shape: str) -> None:
    """DYN_SYSTEM_PORT is the worker's system status server (lib/runtime/src/config.rs): two on one port collide."""
    text = HEAD % "0.32.0" + _item(shape, "decode", '{CUDA_VISIBLE_DEVICES: "0", DYN_SYSTEM_PORT: "7001"}') \
        + _item(shape, "prefill", '{CUDA_VISIBLE_DEVICES: "1", DYN_SYSTEM_PORT: "7001", '
                'VLLM_NIXL_SIDE_CHANNEL_PORT: "21000"}')
    found = [f for f in _lint(tmp_path, text).findings]
    assert [(f.rule, f.message) for f in found] == [
        ("port[collision]", "gpu-n01[1] Dynamo system status server uses port 7001, already taken on gpu-n01 by "
                            "gpu-n01[0] Dynamo system status server")]
    # at the prefill's value (the second listener on the port)
    assert (found[0].origin.line, found[0].origin.column) == _where(text, '"7001"', 'CUDA_VISIBLE_DEVICES: "1"')


def test_a_dynamo_system_port_on_a_nixl_side_channel(tmp_path: Path) -> None:
    """The system status server on the other worker's NIXL side channel (5600: VLLM_NIXL_SIDE_CHANNEL_PORT's
    default); DYN_SYSTEM_PORT 0 (a random port) and -1 (off) bind nothing pdlint can place."""
    text = HEAD % "0.33.0" + _item("string", "decode", '{CUDA_VISIBLE_DEVICES: "0", DYN_SYSTEM_PORT: "0"}') \
        + _item("string", "prefill", '{CUDA_VISIBLE_DEVICES: "1", DYN_SYSTEM_PORT: "5600", '
                'VLLM_NIXL_SIDE_CHANNEL_PORT: "21000"}')
    found = _lint(tmp_path, text).findings
    assert [(f.rule, f.message) for f in found] == [
        ("port[collision]", "gpu-n01[1] Dynamo system status server uses port 5600, already taken on gpu-n01 by "
                            "gpu-n01[0] NIXL side channel (DP rank 0)")]
    assert _lint(tmp_path, text.replace('"5600"', '"-1"')).findings == []


def test_a_vllm_serve_pair_still_collides_on_8000(tmp_path: Path) -> None:
    """The same two items as `vllm serve` lines: each runs vLLM's API server on the default port 8000."""
    text = (HEAD % "0.33.0" + _item("string", "decode", '{CUDA_VISIBLE_DEVICES: "0"}')
            + _item("string", "prefill", '{CUDA_VISIBLE_DEVICES: "1", VLLM_NIXL_SIDE_CHANNEL_PORT: "21000"}'))
    text = text.replace("python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --disaggregation-mode decode",
                        "vllm serve Qwen/Qwen3-0.6B").replace(
        "python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --disaggregation-mode prefill", "vllm serve Qwen/Qwen3-0.6B")
    text = text.replace("        - args: >-\n            vllm serve Qwen/Qwen3-0.6B --kv", "        - pd_role: decode\n"
                        "          args: >-\n            vllm serve Qwen/Qwen3-0.6B --kv", 1)
    text = text.replace("        - args: >-\n            vllm serve", "        - pd_role: prefill\n"
                        "          args: >-\n            vllm serve", 1)
    found = _lint(tmp_path, text).findings
    assert [f.rule for f in found] == ["port[collision]"] and "API port uses port 8000" in found[0].message


@pytest.mark.parametrize(("release", "flags"), [
    ("0.33.0", ["--port 8001", "--host 0.0.0.0", "--api-key secret"]),
    ("0.33.0", ["--port=8001", "--uvicorn-log-level debug"]),
    ("0.32.0", ["--enable-auto-tool-choice", "--tool-call-parser hermes"]),
    ("0.13.0", ["--api-k secret", "--root-path /v1"]),  # a prefix of a server flag is still one
    ("0.10.1", ["--allowed-origins '[\"*\"]'", "--ssl-keyfile k.pem"]),
])
@pytest.mark.parametrize("shape", ["string", "list"])
def test_a_dynamo_worker_refuses_the_api_server_s_flags(tmp_path: Path, release: str, flags: list[str],
                                                       shape: str) -> None:
    """Dynamo's args.py parse_args hands its leftover words to AsyncEngineArgs.add_cli_args's parser alone: each
    API-server flag is vllm-args[invalid] at the flag; the line's engine flags are still read (-tp 2)."""
    words = ["python3", "-m", "dynamo.vllm", "--model", "Qwen/Qwen3-0.6B", *" ".join(flags).split(" "),
             "--disaggregation-mode", "decode", "-tp", "2", "--kv-transfer-config", NIXL]
    if shape == "list":
        item = "        - args:\n" + "".join(f"            - '{w.strip(chr(39))}'\n" for w in words)
    else:
        item = "        - args: >-\n            " + " ".join(w if w != NIXL else f"'{NIXL}'" for w in words) + "\n"
    text = HEAD % release + item + '          env: {CUDA_VISIBLE_DEVICES: "0,1"}\n'
    result = _lint(tmp_path, text)
    # (a decode alone: deployment[incomplete] says so)
    invalid = [f for f in result.findings if f.rule != "deployment[incomplete]"]
    found = [(f.rule, f.origin.line, f.origin.column) for f in invalid]
    expected = [("vllm-args[invalid]", *_where(text, f.split(" ")[0].split("=")[0], "args:")) for f in flags]
    assert found == expected, result.findings
    for finding, flag in zip(invalid, flags):
        assert finding.message.startswith(f"vllm_instances.0.args: unrecognized arguments: {flag.split(' ')[0]}")
        assert finding.message.endswith(f"(Dynamo's worker refuses to start: it parses vLLM {release}'s engine "
                                        "flags alone)")
        assert finding.hint == "a Dynamo worker runs no HTTP server (the ingress is `python -m dynamo.frontend`): " \
                               "drop it from the line"
    assert result.topology.instances[0].tp == 2


def test_dynamo_s_own_headless_is_not_the_api_server_s(tmp_path: Path) -> None:
    """--headless is vLLM serve's flag and Dynamo's own (backend_args.py DynamoVllmArgGroup): Dynamo's parser takes
    it first, so the engine-only parser never sees it; no vllm-args finding."""
    text = HEAD % "0.33.0" + (f"        - args: >-\n            python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --headless "
                              f"--disaggregation-mode decode --kv-transfer-config '{NIXL}'\n")
    assert [f.rule for f in _lint(tmp_path, text).findings if f.rule.startswith("vllm-args")] == []

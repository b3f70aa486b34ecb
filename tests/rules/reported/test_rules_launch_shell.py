"""Command lines copied from vLLM's and Dynamo's docs, read as a shell runs them:
`NAME=value` prefixes are the engine's environment, operators end the argv, a line that is not one vLLM
command says so once, and a launcher pdlint does not model is one warning naming it."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.engine import core as engine
from pdlint.load import select

NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
HEAD = """\
all:
  vars: {vllm_pd_deployment: chat, vllm_version: "0.33.0"}
  hosts:
    p1:
      vllm_pd_role: prefill
      vllm_model: meta-llama/Llama-3.1-8B-Instruct
      vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: p1}
      vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
    d1:
      vllm_pd_role: decode
      vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: d1%s}
"""
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _lint(tmp_path: Path, text: str) -> engine.Result:
    write_tree(tmp_path, {"hosts.yml": text})
    return engine.lint(select.load([str(tmp_path / "hosts.yml")]))


def _where(text: str, marker: str) -> tuple[int, int]:
    index = text.index(marker, text.index("vllm_args: >-", text.index("    d1:")) + len("vllm_args: >-"))
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _text(line: str, env: str = "") -> str:
    return HEAD % env + f"      vllm_args: >-\n        {line}\n"


def _decode(result: engine.Result):
    return next(i for i in result.topology.instances if i.role == "decode")


@pytest.mark.parametrize("line", [
    f"CUDA_VISIBLE_DEVICES=1,2,3 vllm serve {MODEL} --port 8200 -tp 3 --kv-transfer-config '{NIXL}' > /tmp/d.log 2>&1 &",
    f"CUDA_VISIBLE_DEVICES=1,2,3 VLLM_LOGGING_LEVEL=DEBUG nohup vllm serve {MODEL} -tp 3 --kv-transfer-config '{NIXL}' &>> log &",
    f"cd /opt/vllm && CUDA_VISIBLE_DEVICES=1,2,3 exec vllm serve {MODEL} -tp 3 --kv-transfer-config '{NIXL}' 2>/dev/null",
    f"env CUDA_VISIBLE_DEVICES=1,2,3 vllm serve {MODEL} -tp 3 --kv-transfer-config '{NIXL}' | tee -a /var/log/d.log",
    f"CUDA_VISIBLE_DEVICES=1,2,3 uv run vllm serve {MODEL} -tp 3 --kv-transfer-config '{NIXL}'>log;echo started",
    f"CUDA_VISIBLE_DEVICES=1,2,3 /usr/bin/python3.11 -m vllm.entrypoints.openai.api_server --model {MODEL} -tp 3 "
    f"--kv-transfer-config '{NIXL}' < /dev/null",
])
def test_a_shell_line_is_read_as_the_command_it_runs(tmp_path: Path, line: str) -> None:
    """Only the flags' findings (the -tp 3 of a 32-head model), at the flag; the prefix is the engine's env."""
    text = _text(line)
    result = _lint(tmp_path, text)
    assert [(f.rule, f.origin.line, f.origin.column) for f in result.findings] == [
        ("tp[heads]", *_where(text, "-tp 3")), ("tp[kv-heads]", *_where(text, "-tp 3"))], result.findings
    decode = _decode(result)
    assert decode.env["CUDA_VISIBLE_DEVICES"] == "1,2,3" and decode.connector == "NixlConnector"
    assert (decode.origins["env.CUDA_VISIBLE_DEVICES"].line,
            decode.origins["env.CUDA_VISIBLE_DEVICES"].column) == _where(text, "CUDA_VISIBLE_DEVICES=1,2,3")


def test_an_assignment_that_contradicts_vllm_env_is_a_conflict(tmp_path: Path) -> None:
    text = _text(f"CUDA_VISIBLE_DEVICES=0 vllm serve {MODEL} --kv-transfer-config '{NIXL}'",
                 ', CUDA_VISIBLE_DEVICES: "1"')
    found = _lint(tmp_path, text).findings
    assert [(f.rule, f.origin.line, f.origin.column) for f in found] == [
        ("vllm-args[conflict]", *_where(text, "CUDA_VISIBLE_DEVICES=0"))], found
    assert found[0].message.startswith("vllm_env.CUDA_VISIBLE_DEVICES is '1' (") and \
        found[0].message.endswith("but vllm_args gives CUDA_VISIBLE_DEVICES=0: which one the engine gets depends on "
                                  "the role's template")
    same = _text(f"CUDA_VISIBLE_DEVICES=1 vllm serve {MODEL} --kv-transfer-config '{NIXL}'", ', CUDA_VISIBLE_DEVICES: "1"')
    assert _lint(tmp_path, same).findings == []


@pytest.mark.parametrize(("line", "marker", "why"), [
    (f"vllm serve {MODEL} --port $PORT --kv-transfer-config '{NIXL}'", "$PORT", "$PORT is expanded by the shell"),
    (f"vllm serve {MODEL} -tp ${{TP}} --kv-transfer-config '{NIXL}'", "${TP}", "${TP} is expanded by the shell"),
    (f"vllm serve $(cat /etc/model) --kv-transfer-config '{NIXL}'", "$(cat", "$(cat /etc/model) is expanded"),
    (f'vllm serve {MODEL} --port "`cat /etc/port`"', '`cat', "`cat /etc/port` is expanded"),
    (f"vllm serve {MODEL} --port 8100 && vllm serve {MODEL} --port 8200", f"vllm serve {MODEL} --port 8200",
     f"two commands start vLLM (`vllm serve {MODEL}` and `vllm serve {MODEL}`)"),
    (f"(vllm serve {MODEL} -tp 3)", "(", "`(` starts a subshell or group"),
    ("cd /opt/pd && ./serve-decode.sh -tp 3", "cd", "none of its commands starts vLLM (`cd /opt/pd`, "
                                                    "`./serve-decode.sh -tp 3`)"),
])
def test_a_line_that_is_not_one_command_says_so_once(tmp_path: Path, line: str, marker: str, why: str) -> None:
    """One `unresolved` warning at the word, and no rule runs on what the line would set (no tp[heads] for the
    subshell's -tp 3, no deployment[connector] for the connector it may set)."""
    text = _text(line)
    result = _lint(tmp_path, text)
    assert [(f.rule, f.severity, f.origin.line, f.origin.column) for f in result.findings] == [
        ("unresolved", "warning", *_where(text, marker))], result.findings
    assert why in result.findings[0].message
    assert not _decode(result).knows("tensor_parallel_size", "kv_transfer_config")


@pytest.mark.parametrize(("line", "launcher"), [
    ("python3 -m dynamo.sglang --model-path M --disaggregation-mode decode", "python3 -m dynamo.sglang"),
    ("python serve.py --model M -tp 3", "python serve.py"),
    ("torchrun --nproc-per-node 2 -m vllm.entrypoints.openai.api_server --model M", "torchrun"),
    ("uv run --with nixl vllm serve M -tp 3", "uv run"),
    ("vllm bench serve --model M", "vllm bench"),
    ("./start-decode.sh --tp 3", "./start-decode.sh"),
    ("env -i PATH=/usr/bin vllm serve M -tp 3", "env -i"),
])
def test_a_launcher_pdlint_does_not_model_is_one_warning(tmp_path: Path, line: str, launcher: str) -> None:
    """Never errors attributed to vLLM: one warning naming the launcher, at its first word."""
    text = _text(line)
    result = _lint(tmp_path, text)
    assert [(f.rule, f.severity, f.origin.line, f.origin.column) for f in result.findings] == [
        ("unresolved", "warning", *_where(text, line.split()[0]))], result.findings
    assert f"pdlint does not model the launcher `{launcher}`" in result.findings[0].message


@pytest.mark.parametrize("module", ["dynamo.vllm.unified_main", "dynamo.vllm"])
@pytest.mark.parametrize("python", ["python3", "python", "/opt/venv/bin/python3.12"])
def test_dynamo_s_unified_entry_point_is_dynamo_s_launcher(tmp_path: Path, module: str, python: str) -> None:
    """disagg.sh --unified runs `python3 -m dynamo.vllm.unified_main`, whose main() calls dynamo.vllm's own
    parse_args: the same words, the side from --disaggregation-mode."""
    text = HEAD.replace("      vllm_pd_role: decode\n", "") % "" + (
        f"      vllm_args: >-\n        {python} -m {module} --model {MODEL} --disaggregation-mode decode -tp 3\n"
        f"        --kv-transfer-config '{NIXL}'\n")
    result = _lint(tmp_path, text)
    assert [f.rule for f in result.findings] == ["tp[heads]", "tp[kv-heads]"], result.findings
    decode = _decode(result)
    assert (decode.launcher, decode.host) == ("dynamo", "d1")


def test_a_list_a_role_joins_into_a_shell_line(tmp_path: Path) -> None:
    """The same in list form: an item `NAME=value` before the program, `2>&1` and `&` items (a role that joins
    the list with spaces hands them to the shell)."""
    items = ["CUDA_VISIBLE_DEVICES=1,2,3", "vllm", "serve", MODEL, "-tp", "3", "--kv-transfer-config", NIXL,
             "2>&1", "&"]
    text = HEAD % "" + "      vllm_args:\n" + "".join(f"        - '{w}'\n" for w in items)
    result = _lint(tmp_path, text)
    line = text.splitlines().index("        - '-tp'") + 1
    assert [(f.rule, f.origin.line) for f in result.findings] == [("tp[heads]", line), ("tp[kv-heads]", line)]
    assert _decode(result).env["CUDA_VISIBLE_DEVICES"] == "1,2,3"

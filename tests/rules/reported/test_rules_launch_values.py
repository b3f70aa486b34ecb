"""A command line with one bad value, or a --config FILE on the GPU host, is still read:
the refused flag is its own finding and unset, every other flag is read and checked, and no rule runs on what the
line does not say."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.engine import core as engine
from pdlint.load import select

NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
HEAD = """\
all:
  vars: {vllm_pd_deployment: chat, vllm_version: "%s", vllm_model: meta-llama/Llama-3.1-8B-Instruct}
  hosts:
    p1:
      vllm_pd_role: prefill
      vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: p1}
      vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
    d1:
      vllm_pd_role: decode
      vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: d1}
"""


def _lint(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> engine.Result:
    write_tree(tmp_path, {"hosts.yml": text, **(files or {})})
    return engine.lint(select.load([str(tmp_path / "hosts.yml")]))


def _where(text: str, marker: str) -> tuple[int, int]:
    index = text.index(marker, text.index("    d1:"))
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _found(result: engine.Result) -> list[tuple[str, str, int | None, int | None]]:
    return sorted((f.rule, f.severity, f.origin.line, f.origin.column) for f in result.findings)


@pytest.mark.parametrize(("release", "bad", "message"), [
    ("0.33.0", "--max-model-len 32Ki", "argument --max-model-len: invalid human_readable_int_or_auto value: '32Ki'"),
    ("0.13.0", "--max-model-len=1.5Ki", "argument --max-model-len: invalid human_readable_int value: '1.5Ki'"),
    ("0.33.0", "--gpu-memory-utilization most", "argument --gpu-memory-utilization/--device-memory-utilization: invalid float "
                                        "value: 'most'"),
    ("0.11.0", "--block-size 256", "argument --block-size: invalid choice: 256 (choose from 1, 8, 16, 32, 64, 128)"),
    ("0.33.0", "--kv-cache-memory-bytes 2.5Gi", "argument --kv-cache-memory-bytes: Value 2.5Gi cannot be converted "
                                                "to <function human_readable_int>."),
])
def test_one_bad_value_leaves_the_rest_of_the_line_checked(tmp_path: Path, release: str, bad: str,
                                                           message: str) -> None:
    """The refused flag is vllm-args[invalid] at its value; `-tp 3` after it is still read (32 heads, 8 KV heads:
    tp[heads] and tp[kv-heads]), and the NixlConnector it sets is seen (no deployment[connector])."""
    text = HEAD % release + f"      vllm_args: {bad} --kv-transfer-config '{NIXL}' -tp 3\n"
    result = _lint(tmp_path, text)
    value = bad if "=" in bad else bad.split(" ")[1]  # --flag=value is one word
    tp = _where(text, "-tp 3")
    assert _found(result) == sorted([("tp[heads]", "error", *tp), ("tp[kv-heads]", "error", *tp),
                                     ("vllm-args[invalid]", "error", *_where(text, value))]), result.findings
    invalid = next(f for f in result.findings if f.rule == "vllm-args[invalid]")
    assert invalid.message == f"vllm_args: {message} (vLLM {release} refuses to start)"


def test_a_refused_connector_config_skips_the_rules_that_need_it(tmp_path: Path) -> None:
    """A kv-transfer-config vLLM refuses (not JSON) is unset and unknown: no deployment[connector] 'none'."""
    text = HEAD % "0.33.0" + "      vllm_args: >-\n        --kv-transfer-config '{\"kv_connector\": Nixl}' -tp 2\n"
    result = _lint(tmp_path, text)
    assert [(f.rule, f.origin.line, f.origin.column) for f in result.findings] == [
        ("vllm-args[invalid]", *_where(text, '{"kv'))], result.findings
    assert "invalid loads value" in result.findings[0].message or "JSON" in result.findings[0].message
    decode = next(i for i in result.topology.instances if i.role == "decode")
    assert decode.tp == 2 and not decode.knows("kv_transfer_config")


def test_a_refused_value_leaves_the_host_s_own_variable(tmp_path: Path) -> None:
    """vllm_max_model_len set on the host stands; the line's refused value is reported, never a conflict."""
    text = HEAD % "0.33.0" + f"      vllm_max_model_len: 8192\n      vllm_args: --max-model-len 8Ki --kv-transfer-config '{NIXL}'\n"
    result = _lint(tmp_path, text)
    assert [f.rule for f in result.findings] == ["vllm-args[invalid]"], result.findings


@pytest.mark.parametrize("path", ["/etc/vllm/decode.yaml", "/srv/pd/conf/decode-8b.yml"])
def test_a_config_file_on_the_gpu_host_is_unresolved(tmp_path: Path, path: str) -> None:
    """An absolute --config path the controller lacks: one `unresolved` warning at the path, the line's own flags
    read (its connector: no deployment[connector]; its -tp 3: tp[heads]), what it leaves out never guessed."""
    text = HEAD % "0.33.0" + f"      vllm_args: vllm serve M --config {path} --kv-transfer-config '{NIXL}' -tp 3\n"
    result = _lint(tmp_path, text)
    tp = _where(text, "-tp 3")
    assert _found(result) == sorted([("tp[heads]", "error", *tp), ("tp[kv-heads]", "error", *tp),
                                     ("unresolved", "warning", *_where(text, path))]), result.findings
    warning = next(f for f in result.findings if f.rule == "unresolved")
    assert warning.message == (f"vllm_args: --config {path} is not on this machine (vLLM reads it on the GPU host): "
                               "the arguments it sets are not checked, and rules that need one the line leaves out "
                               "are skipped")
    decode = next(i for i in result.topology.instances if i.role == "decode")
    assert not decode.knows("block_size") and decode.knows("tensor_parallel_size")


def test_a_relative_config_file_is_read_as_before(tmp_path: Path) -> None:
    """Relative to the inventory file: a missing one is vllm-args[invalid] (vLLM refuses), the rest still read."""
    text = HEAD % "0.33.0" + f"      vllm_args: --config conf/missing.yaml --kv-transfer-config '{NIXL}' -tp 3\n"
    result = _lint(tmp_path, text)
    tp = _where(text, "-tp 3")
    assert _found(result) == sorted([("tp[heads]", "error", *tp), ("tp[kv-heads]", "error", *tp),
                                     ("vllm-args[invalid]", "error", *_where(text, "conf/missing.yaml"))])
    assert "Unable to read the config file at" in next(f.message for f in result.findings
                                                       if f.rule == "vllm-args[invalid]")
    found = _lint(tmp_path, text, files={"conf/missing.yaml": "tensor-parallel-size: 2\n"}).findings
    assert [f.rule for f in found] == ["tp[heads]", "tp[kv-heads]"]  # the line's -tp 3 wins over the file's 2

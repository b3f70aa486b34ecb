"""The launch stage: a command line kept in `vllm_args` is read as the host's release reads it, and its arguments
stand for the contract's variables, each at the flag's own line and column."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.engine import core as engine
from pdlint.load import select

MORIIO = ('{"kv_connector": "MoRIIOConnector", "kv_role": "%s", "kv_connector_extra_config": '
          '{"read_mode": "true", "http_port": "8000"}}')

# The seed's mistake, prefill TP 4 and decode TP 6 on MoRIIO, with decode's TP written in a command line.
HEAD = """\
all:
  vars: {vllm_pd_deployment: chat, vllm_version: "0.32.0", vllm_model: deepseek-ai/DeepSeek-V3}
  hosts:
    p1:
      vllm_pd_role: prefill
      vllm_tensor_parallel_size: 4
      vllm_kv_transfer_config: {kv_connector: MoRIIOConnector, kv_role: kv_producer,
                                kv_connector_extra_config: {read_mode: "true", http_port: "8000"}}
    d1:
      vllm_pd_role: decode
"""
CONSUMER = MORIIO % "kv_consumer"
TIGHT = CONSUMER.replace(": ", ":").replace(", ", ",")  # JSON a plain YAML scalar can hold (no ": ")

SHAPES = {
    "plain": f"      vllm_args: vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 6 --kv-transfer-config '{TIGHT}'\n",
    "double-quoted": "      vllm_args: \"--port 8000 --tensor-parallel-size 6 --kv-transfer-config '"
                     + CONSUMER.replace('"', '\\"') + "'\"\n",
    "single-quoted": "      vllm_args: 'vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 6 --kv-transfer-config=''"
                     + CONSUMER + "'''\n",
    "folded": f"      vllm_args: >-\n        vllm serve deepseek-ai/DeepSeek-V3\n        --port 8000\n"
              f"        --tensor-parallel-size 6\n        --kv-transfer-config '{CONSUMER}'\n",
    "literal": f"      vllm_args: |\n        vllm serve deepseek-ai/DeepSeek-V3 \\\n          --tensor-parallel-size 6 \\\n"
               f"          --kv-transfer-config '{CONSUMER}'\n",
    "list": f"      vllm_args:\n        - vllm\n        - serve\n        - deepseek-ai/DeepSeek-V3\n        - --tensor-parallel-size\n"
            f"        - 6\n        - --kv-transfer-config\n        - '{CONSUMER}'\n",
    "list, flag=value": f"      vllm_args: [--port=8000, --tensor-parallel-size=6, '--kv-transfer-config={CONSUMER}']\n",
    "list, joined items": f"      vllm_args:\n        - --tensor-parallel-size 6\n        - --kv-transfer-config '{TIGHT}'\n",
    "alias": f"      vllm_args: -tp 6 --kv-transfer-config '{TIGHT}'\n",
    "underscores": f"      vllm_args: --tensor_parallel_size=6 --kv_transfer_config '{TIGHT}'\n",
}


def _where(text: str, marker: str) -> tuple[int, int]:
    """1-based line and column of marker's first appearance after the decode host."""
    index = text.index(marker, text.index("    d1:"))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _lint(tmp_path: Path, text: str, loader: str = "fast", files: dict[str, str] | None = None) -> engine.Result:
    write_tree(tmp_path, {"hosts.yml": text, **(files or {})})
    return engine.lint(select.load([str(tmp_path / "hosts.yml")], loader=loader))


@pytest.mark.parametrize("loader", ["fast", "ansible"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_seed_mistake_in_a_command_line_is_found_at_the_flag(tmp_path: Path, shape: str, loader: str) -> None:
    text = HEAD + SHAPES[shape]
    result = _lint(tmp_path, text, loader)
    ratio = [f for f in result.findings if f.rule == "tp-ratio[moriio]"]
    assert len(ratio) == 1, result.findings
    flag = "-tp" if shape == "alias" else "--tensor_parallel_size" if shape == "underscores" else "--tensor-parallel-size"
    assert (ratio[0].origin.line, ratio[0].origin.column) == _where(text, flag)
    assert ratio[0].hosts == ("d1", "p1")
    assert not [f for f in result.findings if f.rule.startswith(("vllm-args", "schema"))], result.findings


@pytest.mark.parametrize(("args", "extra", "rule", "marker"), [
    ("--tensor-paralel-size 6", "", "vllm-args[invalid]", "--tensor-paralel-size"),
    ("--tensor-parallel-size six", "", "vllm-args[invalid]", "six"),
    ("--tensor-parallel-size", "", "vllm-args[invalid]", "--tensor-parallel-size"),
    ("'--port 8000", "", "vllm-args[invalid]", "\"'--port"),  # an unclosed quote: at the scalar
    ("--tensor-parallel-size 6", "      vllm_tensor_parallel_size: 4\n", "vllm-args[conflict]", "--tensor-parallel-size"),
    ("-tp 4", "      vllm_tensor_parallel_size: 4\n", None, ""),        # the same value twice: no conflict
    ("-tp 4", "      vllm_tensor_parallel_size: '4'\n", None, ""),
    ("--kv-transfer-config '" + TIGHT.replace('"', '\\"') + "'",
     "      vllm_kv_transfer_config: {kv_connector: MoRIIOConnector, kv_role: kv_consumer,\n"
     "                                kv_connector_extra_config: {read_mode: 'true', http_port: '8000'}}\n", None, ""),
])
def test_what_the_command_line_itself_gets_wrong(tmp_path: Path, args: str, extra: str, rule: str | None,
                                                 marker: str) -> None:
    text = HEAD + extra + f'      vllm_args: "{args}"\n'
    found = [f for f in _lint(tmp_path, text).findings if f.rule.startswith("vllm-args")]
    if rule is None:
        assert found == []
        return
    assert [f.rule for f in found] == [rule], found
    assert (found[0].origin.line, found[0].origin.column) == _where(text, marker)
    assert found[0].hosts == ("d1",)


def test_conflict_names_both_places(tmp_path: Path) -> None:
    text = HEAD + "      vllm_tensor_parallel_size: 4\n      vllm_args: -tp 8\n"
    (found,) = [f for f in _lint(tmp_path, text).findings if f.rule == "vllm-args[conflict]"]
    assert "vllm_tensor_parallel_size is 4 (" in found.message and "hosts.yml:11:" in found.message
    assert "-tp 8" in found.message and found.severity == "error"


def test_an_instance_item_has_a_command_line_of_its_own(tmp_path: Path) -> None:
    text = """\
all:
  vars: {vllm_pd_deployment: chat, vllm_version: "0.32.0", vllm_model: deepseek-ai/DeepSeek-V3, vllm_host_gpu_count: 16}
  hosts:
    n1:
      vllm_instances:
        - pd_role: prefill
          args: ["--port", "8100", "-tp", "4", "--kv-transfer-config", '%s']
        - pd_role: decode
          args: ["--port", "8200", "--tensor-parallel-size", "6", "--kv-transfer-config", '%s']
""" % (MORIIO.replace("8000", "8100") % "kv_producer", MORIIO.replace("8000", "8200") % "kv_consumer")  # noqa: UP031 - YAML braces
    result = _lint(tmp_path, text)
    ratio = [f for f in result.findings if f.rule == "tp-ratio[moriio]"]
    assert len(ratio) == 1, result.findings
    line = text.splitlines().index('          args: ["--port", "8200", "--tensor-parallel-size", "6", "--kv-transfer-config", '
                                   + "'" + MORIIO.replace("8000", "8200") % "kv_consumer" + "']") + 1
    assert (ratio[0].origin.line, ratio[0].origin.column) == (line, text.splitlines()[line - 1].index("--tensor") + 1)
    ports = sorted(i.port for i in result.topology.instances)
    assert ports == [8100, 8200]


def test_a_config_file_named_by_the_command_line(tmp_path: Path) -> None:
    text = HEAD + f"      vllm_args: --config decode.yaml --kv-transfer-config '{TIGHT}'\n"
    result = _lint(tmp_path, text, files={"decode.yaml": "port: 8000\ntensor-parallel-size: 6\n"})
    ratio = [f for f in result.findings if f.rule == "tp-ratio[moriio]"]
    assert len(ratio) == 1, result.findings
    assert ratio[0].origin.file.endswith("decode.yaml") and ratio[0].origin.line == 2


def test_a_templated_command_line_is_rendered_first(tmp_path: Path) -> None:
    text = HEAD.replace("vllm_model: deepseek-ai/DeepSeek-V3}", "vllm_model: deepseek-ai/DeepSeek-V3, decode_tp: 6}") + \
        f"      vllm_args: \"--tensor-parallel-size {{{{ decode_tp }}}} --kv-transfer-config '{CONSUMER.replace(chr(34), chr(92) + chr(34))}'\"\n"
    result = _lint(tmp_path, text)
    assert [f.rule for f in result.findings if f.rule == "tp-ratio[moriio]"] == ["tp-ratio[moriio]"], result.findings


def test_the_editor_points_into_its_unsaved_buffer(tmp_path: Path) -> None:
    """The language server's check reads the command line's words from the buffer, not the file on disk."""
    import shutil

    from conftest import ROOT

    from pdlint.lsp import inventory

    shutil.copytree(ROOT / "examples" / "role", tmp_path / "role")
    decode = tmp_path / "role" / "group_vars" / "decode.yml"
    consumer = ('{"kv_connector": "MoRIIOConnector", "kv_role": "kv_consumer", "kv_connector_extra_config": '
                '{"read_mode": "true", "http_port": "8000", "handshake_port": "6301", "notify_port": "61005"}}')
    # unsaved: the list became a folded string, the flag on its third line
    edited = ("vllm_pd_role: decode\nvllm_args: >-\n  serve deepseek-ai/DeepSeek-V3\n  --port 8000 --block-size 64\n"
              f"  --max-model-len 4096 --tensor-parallel-size 6\n  --kv-transfer-config '{consumer}'\n")
    outcome = inventory.check(str(tmp_path / "role"), {str(decode): edited})
    ratio = [f for f in outcome.findings if f.rule == "tp-ratio[moriio]"]
    assert [(f.origin.line, f.origin.column) for f in ratio] == [(5, 24)], outcome.findings
    on_disk = inventory.check(str(tmp_path / "role"), {})
    assert [(f.origin.line, f.origin.column) for f in on_disk.findings if f.rule == "tp-ratio[moriio]"] == [(8, 5)]


PD = ('{"kv_connector":"PdConnector","kv_connector_module_path":"kvbm.vllm_integration.connector","kv_role":"kv_both",'
      '"kv_connector_extra_config":{"connectors":[{"kv_connector":"DynamoConnector","kv_connector_module_path":'
      '"kvbm.vllm_integration.connector","kv_role":"kv_both"},{"kv_connector":"NixlConnector","kv_role":"kv_both"}]}}')
DYNAMO = """\
all:
  vars: {vllm_pd_deployment: qwen, vllm_model: Qwen/Qwen3-0.6B, vllm_version: "0.33.0", vllm_host_gpu_count: 2}
  hosts:
    gpu-d01:
      vllm_instances:
        - args: >-
            %s
          port: null
          env: {CUDA_VISIBLE_DEVICES: "0", VLLM_NIXL_SIDE_CHANNEL_PORT: 20097}
        - pd_role: decode
          port: null
          env: {CUDA_VISIBLE_DEVICES: "1", VLLM_NIXL_SIDE_CHANNEL_PORT: 20098}
          kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}
"""


@pytest.mark.parametrize(("line", "rules"), [
    # plain vLLM: PdConnector inherits MultiConnector's SupportsHMA, HMA stays on, MultiConnector.__init__ asserts
    (f"vllm serve Qwen/Qwen3-0.6B --kv-transfer-config '{PD}'", None),
    # Dynamo's launcher turns HMA off for it: it starts, and NIXL's hash then differs from the decode's (HMA on)
    (f"python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --disaggregation-mode prefill --namespace dyn "
     f"--kv-transfer-config '{PD}'", ["pd-mismatch[hma]"]),
    (f"python -m dynamo.vllm --is-prefill-worker --model Qwen/Qwen3-0.6B --kv-transfer-config '{PD}'",
     ["pd-mismatch[hma]"]),
    ("python -m dynamo.vllm --disaggregation-mode=prefill --model Qwen/Qwen3-0.6B",
     ["deployment[connector]", "vllm-args[invalid]"]),
    (f"python -m dynamo.vllm --disaggregation-mode prefill --no-such-flag --kv-transfer-config '{PD}'",
     ["pd-mismatch[hma]", "unresolved"]),
])
def test_dynamos_launcher(tmp_path: Path, line: str, rules: list[str] | None) -> None:
    text = DYNAMO % line
    if rules is None:  # vllm serve names no side: the inventory does
        text = text.replace("        - args: >-", "        - pd_role: prefill\n          args: >-")
        rules = ["connector[config]"]
    result = _lint(tmp_path, text)
    assert sorted({f.rule for f in result.findings}) == rules, result.findings
    prefill = [i for i in result.topology.instances if i.role == "prefill"]
    assert len(prefill) == 1 and prefill[0].launcher == ("dynamo" if "dynamo" in line else "vllm")


def test_dynamos_own_words_are_taken_as_its_parser_takes_them() -> None:
    from pdlint.vllm.arguments import dynamo

    words = ["--namespace", "dyn", "--model", "m", "--is-prefill-worker", "--connector", "nixl", "kvbm",
             "--enforce-eager", "-tp", "2", "--endpoint=dyn://a.b.c", "--no-fpm-trace", "--namespac", "x"]
    own, rest = dynamo.split(words)
    assert [(w.flag, w.values) for w in own] == [
        ("--namespace", ("dyn",)), ("--is-prefill-worker", ()), ("--connector", ("nixl", "kvbm")),
        ("--enforce-eager", ()), ("--endpoint", ("dyn://a.b.c",)), ("--no-fpm-trace", ())]
    assert [words[i] for i in rest] == ["--model", "m", "-tp", "2", "--namespac", "x"]  # allow_abbrev=False
    assert dynamo.side(own) == ("prefill", own[1])
    assert dynamo.side(dynamo.split(["--is-prefill-worker", "--disaggregation-mode", "decode"])[0])[0] == "decode"


def test_a_roles_own_command_line_mapped_with_variables(tmp_path: Path) -> None:
    """`vllm_args: "{{ vllm_extra_args }}"` in .pdlint.yaml: the role's line is read, the finding at its flag."""
    from pdlint.config import files as configfile

    text = HEAD.replace("      vllm_pd_role: decode\n", "      vllm_pd_role: decode\n"
                        f"      vllm_extra_args: -tp 6 --kv-transfer-config '{TIGHT}'\n")
    write_tree(tmp_path, {"hosts.yml": text, ".pdlint.yaml": 'variables:\n  vllm_args: "{{ vllm_extra_args }}"\n'})
    config = configfile.load(tmp_path)
    result = engine.lint(select.load([str(tmp_path / "hosts.yml")], keep_names=frozenset({"vllm_extra_args"})), config)
    ratio = [f for f in result.findings if f.rule == "tp-ratio[moriio]"]
    assert [(f.origin.line, f.origin.column) for f in ratio] == [_where(text, "-tp")], result.findings

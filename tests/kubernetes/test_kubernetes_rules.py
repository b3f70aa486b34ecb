"""The rules fire from manifests at the value as written: the argument item, the env value, the GPU limit's engine
argument, a word inside a `sh -c` string; bad input is exit 2 with its file and line; a clean example of each system
gives no error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from test_examples_kubernetes import CASES, findings, pdlint

FIXTURES = "tests/fixtures/kubernetes"


def _rows(*args: str) -> list[tuple[str, str, str, int, int, list[str]]]:
    _code, found = findings(*args)
    return [(f["rule"], f["message"], f["file"], f["line"], f["column"], f["hosts"]) for f in found]


def test_a_clean_pair_gives_nothing() -> None:
    code, found = findings(f"{FIXTURES}/rules/clean")
    assert (code, found) == (0, [])


@pytest.mark.parametrize(("case", "row"), [
    ("gpu", ("gpu[oversubscribed]", "node chat-decode-0 has 2 GPUs but its instances need 4 (chat-decode-0 4)",
             45, 15, ["chat-decode-0"])),
    ("side-channel", ("nixl[side-channel-host]", "prefill chat-prefill-0 advertises NIXL side channel host "
                      "'127.0.0.1', unreachable from chat-decode-0", 23, 22, ["chat-prefill-0"])),
    ("block-size", ("pd-mismatch[block-size]", "decode block size 16 vs prefill block size 64: NIXL in vLLM 0.32.0 "
                    "needs the decode block size to be a multiple of the other side's", 47, 15,
                    ["chat-decode-0", "chat-prefill-0"])),
    ("hma", ("pd-mismatch[hma]", "hybrid KV cache manager is on on prefill but off on decode (NIXL in vLLM 0.32.0 "
             "hashes it at handshake: \"NIXL compatibility hash mismatch\")", 46, 15,
             ["chat-decode-0", "chat-prefill-0"])),
    ("unknown-flag", ("vllm-args[invalid]", "unrecognized arguments: --tensor-paralel-size=4 (vLLM 0.32.0 "
                      "refuses to start)", 46, 15, ["chat-decode-0"])),
])
def test_a_rule_at_the_manifest_line(case: str, row: tuple[str, str, int, int, list[str]]) -> None:
    rule, message, line, column, hosts = row
    file = f"{FIXTURES}/rules/{case}/pods.yaml"
    assert _rows(f"{FIXTURES}/rules/{case}") == [(rule, message, file, line, column, hosts)]
    written = (ROOT / file).read_text(encoding="utf-8").splitlines()[line - 1][column - 1:]
    assert written.startswith(("--", "\"127.0.0.1\"")), written


def test_leader_worker_set_groups_are_one_engine_over_its_pods() -> None:
    """TP 8 x PP 2 over size 2: 8 GPUs a pod; the decode pods are granted 4, each pod is reported at the TP word
    inside the leader's `bash -c` string (the word after `ray start ... &&`)."""
    file = f"{FIXTURES}/lws/lws.yaml"
    rows = _rows(f"{FIXTURES}/lws")
    assert rows[:2] == [
        ("gpu[oversubscribed]", f"node big-decode-0-{n} has 4 GPUs but its instances need 8 (big-decode-0-{n} 8)",
         file, 57, 62, [f"big-decode-0-{n}"]) for n in (0, 1)]
    assert rows[2][0] == "tp-ratio[nixl]" and rows[2][5] == ["big-decode-0-0", "big-decode-0-1", "big-prefill-0-0",
                                                              "big-prefill-0-1"]
    assert (ROOT / file).read_text(encoding="utf-8").splitlines()[56][61:].startswith("--tensor-parallel-size 8")


def test_an_inference_pool_ties_the_pods_it_selects() -> None:
    """No side channel host set: each prefill replica advertises localhost, at its --kv-transfer-config."""
    file = f"{FIXTURES}/pool/pool.yaml"
    _code, found = findings(f"{FIXTURES}/pool")
    assert [(f["rule"], f["file"], f["line"], f["column"], f["hosts"], f["deployment"]) for f in found] == [
        ("nixl[side-channel-host]", file, 32, 15, [f"qwen-prefill-{n}"], "qwen-pool") for n in (0, 1)]
    assert "advertises NIXL side channel host 'localhost', unreachable from qwen-decode-0" in found[0]["message"]


def test_a_list_and_a_merged_anchor_keep_their_lines() -> None:
    file = f"{FIXTURES}/list/list.yaml"
    rows = _rows(f"{FIXTURES}/list")
    assert ("tp-ratio[moriio]", "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)", file, 35, 19,
            ["list-decode-0", "list-prefill-0"]) in rows
    # the prefill's words are the anchor's own: its TP is on line 20
    assert [r[2:5] for r in rows if r[0] == "kv-heads[moriio-replicated]"] == [(file, 20, 56)]


def test_a_folder_of_manifests_and_an_inventory_is_refused() -> None:
    code, out, _err = pdlint(f"{FIXTURES}/mixed")
    assert code == 2
    assert out.startswith(f"{FIXTURES}/mixed: load-error {FIXTURES}/mixed holds Kubernetes manifests "
                          f"({FIXTURES}/mixed/pool.yaml) and an Ansible inventory ({FIXTURES}/mixed/group_vars)")


def test_broken_yaml_is_exit_2_at_its_line() -> None:
    code, out, err = pdlint(f"{FIXTURES}/broken", "--format", "json")
    assert code == 2 and "Traceback" not in err
    assert out.count('"load-error"') == 1 and '"line": 11' in out and f"{FIXTURES}/broken/broken.yaml" in out


def test_manifests_without_vllm_are_clean_and_say_so() -> None:
    code, out, err = pdlint(f"{FIXTURES}/none")
    assert code == 0
    assert "no pod of the 1 manifest file(s) runs vLLM: nothing to check" in err
    assert out.startswith("pdlint: 0 errors in 0 hosts, 0 deployments")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_system_clean_gives_no_error(case: tuple[object, ...], tmp_path: Path) -> None:
    """The example with decode TP 4 (what the hint says): no finding at all."""
    folder, name = str(case[0]), str(case[1])
    work = tmp_path / folder
    shutil.copytree(ROOT / "examples" / "kubernetes" / folder, work)
    text = (work / name).read_text(encoding="utf-8")
    fixed = text.replace("--tensor-parallel-size=6", "--tensor-parallel-size=4").replace(
        "--tensor-parallel-size 6", "--tensor-parallel-size 4").replace("tensor: 6", "tensor: 4")
    assert fixed != text
    (work / name).write_text(fixed, encoding="utf-8")
    code, found = findings(str(work), *[str(a) for a in case[6]])  # type: ignore[attr-defined]
    assert (code, found) == (0, [])


def test_containers_of_one_pod_share_its_ports() -> None:
    """Two vLLM containers in one pod are two engines of one host: both on port 8000 (and P2pNccl's kv_port)
    collide in the pod's network namespace; the finding names the second container's engine."""
    file = f"{FIXTURES}/one-pod/pod.yaml"
    assert _rows(f"{FIXTURES}/one-pod") == [
        ("port[collision]", "pair-0[1] API port uses port 8000, already taken on pair-0 by pair-0[0] API port", file,
         20, 36, ["pair-0"]),
        ("port[collision]", "pair-0[1] P2pNccl kv_port (rank 0) uses port 14579, already taken on pair-0 by pair-0[0] "
         "P2pNccl kv_port (rank 0)", file, 20, 36, ["pair-0"]),
    ]


def test_env_references_are_expanded_as_kubernetes_does() -> None:
    """$(TP) is the decode's env value 6 (the finding at that item); $(MAX_LEN), set nowhere, reaches vLLM as
    written and is refused there."""
    file = f"{FIXTURES}/env-expansion/pods.yaml"
    rows = _rows(f"{FIXTURES}/env-expansion")
    assert ("tp-ratio[moriio]", "decode TP 6 is not a multiple of prefill TP 4 (MoRIIO needs 6/4 acks)", file, 33, 15,
            ["exp-decode-0", "exp-prefill-0"]) in rows
    assert ("vllm-args[invalid]", "argument --max-model-len: invalid human_readable_int_or_auto value: "
            "'$(MAX_LEN)' (vLLM 0.32.0 refuses to start)", file, 15, 59, ["exp-prefill-0"]) in rows


def test_a_pod_with_no_side_is_said_never_passed_silently() -> None:
    code, found = findings(f"{FIXTURES}/sideless")
    assert code == 0
    assert [(f["rule"], f["severity"], f["file"], f["line"], f["column"], f["hosts"]) for f in found] == [
        ("unresolved", "warning", f"{FIXTURES}/sideless/both.yaml", 14, 49, ["both-0", "both-1"])]
    assert found[0]["message"].startswith("the pod's --kv-transfer-config names no side (kv_role kv_both)")
    assert "label llm-d.ai/role or annotation pdlint.io/role" in found[0]["hint"]


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_every_format_points_at_the_manifest_line(fmt: str) -> None:
    code, out, _err = pdlint(f"{FIXTURES}/rules/gpu", "--format", fmt)
    assert code == 1
    if fmt == "github":
        assert f"::error file={FIXTURES}/rules/gpu/pods.yaml,line=45,col=15" in out, out
    else:
        import json

        [result] = json.loads(out)["runs"][0]["results"]
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (result["ruleId"], region["startLine"], region["startColumn"]) == ("gpu[oversubscribed]", 45, 15)


def test_dynamo_multinode_spreads_one_engine_over_its_nodes() -> None:
    """nodeCount 2: the decode's TP 16 is 8 GPUs on each of its two pods (no finding); the prefill's TP 16 on one
    pod of 8 GPUs is reported at its TP value. Dynamo's launcher sets the side channel host itself: no finding."""
    file = f"{FIXTURES}/dynamo-multinode/graph.yaml"
    assert _rows(f"{FIXTURES}/dynamo-multinode") == [
        ("gpu[oversubscribed]", "node wide-prefill-0 has 8 GPUs but its instances need 16 (wide-prefill-0 16)", file,
         18, 62, ["wide-prefill-0"])]
    code, out, _err = pdlint("explain", f"{FIXTURES}/dynamo-multinode")
    assert code == 0
    assert f"wide-decode-0-0, wide-decode-0-1: vllm_nnodes 2 <- Dynamo service Decode: multinode.nodeCount ({file}:23:30)" \
        in out
    assert "wide-decode-0-1: vllm_env.VLLM_NIXL_SIDE_CHANNEL_HOST <- Dynamo's launcher sets it to the pod's own address" \
        in out


def test_kserve_without_extra_arguments_is_its_model_and_parallelism() -> None:
    file = f"{FIXTURES}/kserve-plain/service.yaml"
    assert _rows(f"{FIXTURES}/kserve-plain") == [
        ("tp[heads]", "32 attention heads are not divisible by TP 3", file, 10, 25, ["plain-decode-0"]),
        ("tp[kv-heads]", "TP 3 cannot split the model's 8 KV heads evenly", file, 10, 25, ["plain-decode-0"]),
    ]


def test_a_chart_folder_reads_its_values_and_skips_its_templates() -> None:
    """templates/ with `{{ }}` is no manifest until rendered (a parse would fail): the values file alone is read."""
    file = f"{FIXTURES}/chart/values.yaml"
    rows = _rows(f"{FIXTURES}/chart")
    assert {r[2] for r in rows} == {file}
    assert ("tp-ratio[nixl]", "decode TP 3 is not a multiple of prefill TP 2: NIXL in vLLM 0.32.0 pairs ranks by "
            "whole ratios", file, 6, 25, ["qwen-qwen3-8b-decode-0", "qwen-qwen3-8b-prefill-0"]) in rows


def test_the_api_server_module_and_a_script_of_several_commands() -> None:
    """The prefill runs the OpenAI api_server module; the decode's `bash -c` script runs `echo`, `nvidia-smi` and
    then vLLM (`;`, `&&`, `exec`, a continuation): its TP is found at its own line inside the block scalar."""
    file = f"{FIXTURES}/launchers/pods.yaml"
    assert [r[:5] for r in _rows(f"{FIXTURES}/launchers")] == [
        ("tp-ratio[nixl]", "decode TP 3 is not a multiple of prefill TP 2: NIXL in vLLM 0.32.0 pairs ranks by whole "
         "ratios", file, 37, 17),
        ("tp[heads]", "32 attention heads are not divisible by TP 3", file, 37, 17),
        ("tp[kv-heads]", "TP 3 cannot split the model's 8 KV heads evenly", file, 37, 17),
    ]
    assert (ROOT / file).read_text().splitlines()[36][16:].startswith("--tensor-parallel-size 3")


@pytest.mark.parametrize(("case", "rule", "hint"), [
    ("side-channel", "nixl[side-channel-host]", "set the container's env VLLM_NIXL_SIDE_CHANNEL_HOST to the pod's IP "
                                                "(valueFrom: fieldRef: fieldPath: status.podIP)"),
    ("hma", "pd-mismatch[hma]", "set --disable-hybrid-kv-cache-manager the same on both sides"),
])
def test_hints_are_in_the_manifests_words(case: str, rule: str, hint: str) -> None:
    """The rules' hints name inventory variables (vllm_env.NAME, vllm_disable_...); on a manifest they name the
    container's env entry and the command line's flag."""
    _code, found = findings(f"{FIXTURES}/rules/{case}")
    assert [(f["rule"], f["hint"]) for f in found] == [(rule, hint)]

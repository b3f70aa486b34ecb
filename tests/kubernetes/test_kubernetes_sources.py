"""Each system's own published example (tests/fixtures/kubernetes/SOURCES.md), as pdlint reads it."""
from __future__ import annotations

from test_examples_kubernetes import findings, pdlint

FIXTURES = "tests/fixtures/kubernetes"


def test_kserve_sample_is_clean_with_its_prefill_pool_of_two() -> None:
    code, out, err = pdlint(f"{FIXTURES}/kserve")
    assert code == 0, out + err
    # decode 1 replica, prefill 2; the release comes from the config object, so it is assumed
    assert out.startswith("pdlint: 0 errors in 3 hosts, 1 deployment; vLLM 0.33.0 assumed where vllm_version is unset")


def test_modelservice_values_are_clean_as_the_chart_renders_them() -> None:
    code, out, _err = pdlint(f"{FIXTURES}/modelservice")
    assert code == 0
    assert out.startswith("pdlint: 0 errors in 2 hosts, 1 deployment; vLLM 0.33.0 assumed")


def test_dynamo_prefill_worker_without_a_kv_transfer_config() -> None:
    """The example's prefill worker names no connector: the launcher's own check, at its --is-prefill-worker."""
    code, found = findings(f"{FIXTURES}/dynamo")
    assert code == 1
    assert [(f["rule"], f["file"], f["line"], f["column"], f["hosts"]) for f in found] == [
        ("vllm-args[invalid]", f"{FIXTURES}/dynamo/disagg.yaml", 55, 15, ["vllm-disagg-vllmprefillworker-0"])]
    assert "Dynamo's launcher refuses a prefill worker without --kv-transfer-config" in found[0]["message"]


def test_aibrix_sample_advertises_the_unspecified_address() -> None:
    """VLLM_NIXL_SIDE_CHANNEL_HOST 0.0.0.0 is no address a peer can dial; the image's vLLM 0.10.0 refuses --model
    after `vllm serve` (the word inside each role's `sh -c` string)."""
    code, found = findings(f"{FIXTURES}/aibrix")
    file = f"{FIXTURES}/aibrix/1p1d.yaml"
    assert code == 1
    assert [(f["rule"], f["line"], f["column"], f["hosts"]) for f in found] == [
        ("vllm-args[invalid]", 48, 23, ["vllm-1p1d-prefill-0"]),
        ("nixl[side-channel-host]", 57, 30, ["vllm-1p1d-prefill-0"]),
        ("vllm-args[invalid]", 127, 23, ["vllm-1p1d-decode-0"]),
    ]
    assert all(f["file"] == file for f in found)
    assert "advertises NIXL side channel host '0.0.0.0', unreachable from vllm-1p1d-decode-0" in found[1]["message"]
    assert "(vLLM 0.10.0 refuses to start)" in found[0]["message"]


def test_llm_d_disaggregated_set_is_clean() -> None:
    """Its roles name the sides; the image is a placeholder, so the release is the configured one."""
    code, found = findings(f"{FIXTURES}/llm-d", "--vllm-version", "0.20.1")
    assert (code, found) == (0, [])
    code, out, _err = pdlint("explain", f"{FIXTURES}/llm-d", "--vllm-version", "0.20.1")
    assert "deployment pd-disagg-vllm (vLLM 0.20.1)" in out
    assert "pd-disagg-vllm-decode-0: vllm_pd_role decode <- DisaggregatedSet role decode" in out

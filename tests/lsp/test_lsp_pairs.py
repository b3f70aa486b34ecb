"""Hover on a TP value: which cursor positions count, and the pairs, rank maps and acks it shows (explain model)."""
from __future__ import annotations

import pytest
from conftest import ROOT

from pdlint.explain.model import DeploymentView, EngineView, Explanation, Link, PairView
from pdlint.lsp import hover, inventory, pairs

INVENTORY = ROOT / "examples" / "inventory"


_TOP, _ITEM = "vllm_tensor_parallel_size", "tensor_parallel_size"


@pytest.mark.parametrize(("line", "character", "key"), [
    ("vllm_tensor_parallel_size: 6", 0, _TOP),
    ("vllm_tensor_parallel_size: 6", 27, _TOP),  # the value
    ("vllm_tensor_parallel_size: 6  # six", 33, None),  # the comment
    ("vllm_tensor_parallel_size=8", 26, _TOP),  # INI
    ("    tensor_parallel_size: 4", 6, _ITEM),  # an instance item
    ("  - {pd_role: decode, tensor_parallel_size: 2, port: 8200}", 44, _ITEM),
    ("  - {pd_role: decode, tensor_parallel_size: 2, port: 8200}", 49, None),
    ("vllm_pipeline_parallel_size: 2", 5, None),
    ("vllm_pd_role: decode", 3, None),
])
def test_tp_at_is_the_tp_key_or_its_value(line: str, character: int, key: str | None) -> None:
    assert pairs.tp_at(line, character) == key


def _hover(file: str) -> str | None:
    outcome = inventory.check(str(INVENTORY), {})
    assert outcome.topology is not None
    readers = {hv.host for hv in hover.seeing(outcome.hosts, str(INVENTORY / file))}
    return pairs.describe(pairs.model(outcome.topology, outcome.findings, readers), readers)


@pytest.mark.parametrize(("file", "shown", "not_shown"), [
    ("host_vars/mi-b02.yml", ["**1 P/D pair**", ("**`mi-b01` -> `mi-b02`** (deployment `deepseek-r1`): **rejected** by "
                              "`tp-ratio[moriio]`; MoRIIOConnector, vLLM 0.32.0"),
                              "vLLM cannot map the ranks: local tp_size 6 must be a multiple of remote tp_size 4"],
     ["gpu-a01", "| decode rank |"]),
    ("group_vars/deepseek_prefill.yml", ["`mi-b01` -> `mi-b02`", "**rejected**"], ["llama70b"]),
    ("group_vars/llama70b_prefill.yml", [
        "**2 P/D pairs**", ("**`gpu-a01` -> `gpu-a02`, `gpu-a01` -> `gpu-a03`** (deployment `llama70b-chat`): ok; "
        "NixlPullConnector, decode reads, vLLM 0.32.0; each prefill rank waits for 2 completion notifications "
        "per request"), "| decode rank | prefill ranks | KV heads |", "| 0 | 0 | head 0 |", "| 7 | 3 | head 7 |"],
     ["rejected", "mi-b01"]),
    ("group_vars/llama70b_decode.yml", ["`gpu-a01` -> `gpu-a02`, `gpu-a01` -> `gpu-a03`", "2 completion notifications"],
     []),
    ("host_vars/gpu-c01.yml", ["`gpu-c01[0]` -> `gpu-c01[1]`", "ok; MooncakeConnector",
                               "pdlint does not model the rank map of MooncakeConnector"], ["| decode rank |"]),
    ("group_vars/all.yml", ["**4 P/D pairs**", "deepseek-r1", "llama70b-chat", "qwen3-chat"], []),
])
def test_hover_shows_each_pair_of_the_files_hosts(file: str, shown: list[str], not_shown: list[str]) -> None:
    text = _hover(file)
    assert text is not None
    for fragment in shown:
        assert fragment in text
    for fragment in not_shown:
        assert fragment not in text


def _engine(name: str, role: str, tp: int) -> EngineView:
    return EngineView(name, role, "0.32.0", "NixlConnector", tp, 1, 1, 1, (name,), (), (), ())


@pytest.mark.parametrize(("mode", "header", "first"), [
    ("decode reads", "| decode rank | prefill ranks | KV heads |", "| 0 | 0 | head 0 |"),
    ("prefill writes", "| prefill rank | decode ranks | KV heads |", "| 0 | 0,1 | heads 0-1 |"),
])
def test_rank_map_is_keyed_by_the_driving_side_and_capped(mode: str, header: str, first: str) -> None:
    links = tuple(Link(d, d // 2, (d,), "heads", False) for d in range(64))  # decode TP 64 over prefill TP 32
    pair = PairView("p", "d", "NixlConnector", "0.32.0", mode, "ok", links, None, None, None, ())
    dep = DeploymentView("dep", ("0.32.0",), (_engine("p", "prefill", 32), _engine("d", "decode", 64)), (pair,), ())
    text = pairs.describe(Explanation((dep,), ()), {"p"})
    assert text is not None
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0] == header and rows[1] == first
    more = 48 if mode == "decode reads" else 16
    assert len(rows) == 1 + pairs.RANKS + 1 and rows[-1].startswith(f"| ... | {more} more ")


def test_pairs_of_other_hosts_are_left_out_and_none_is_no_hover() -> None:
    assert _hover("does-not-exist.yml") is None

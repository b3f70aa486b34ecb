"""examples/dynamo and examples/dynamo-hma: a Dynamo-style 1P1D of headless workers, in the CLI with both loaders."""
from __future__ import annotations

import json

import pytest
from conftest import ROOT

from pdlint.cli import main


@pytest.mark.parametrize("loader", ["fast", "ansible"])
@pytest.mark.parametrize(("example", "code", "expected"), [
    # Two Dynamo workers (vllm_launcher: dynamo: no API server) on one host, NIXL side channels 20097 and 20098: clean.
    ("dynamo", 0, []),
    # Prefill on PdConnector(DynamoConnector + NixlConnector) with HMA off, decode on NIXL with HMA left on: the
    # pair is checked through PdConnector's NIXL child (no deployment[connector]) and the HMA flags differ; the
    # finding sits on the decode's kv_transfer_config, the side that can change.
    ("dynamo-hma", 1, [("pd-mismatch[hma]", "error", 34, ["gpu-d01"])]),
])
def test_example(example: str, code: int, expected: list[tuple[str, str, int, list[str]]], loader: str,
                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ROOT / "examples" / example), "--format", "json", "--loader", loader]) == code
    found = json.loads(capsys.readouterr().out)
    assert [(f["rule"], f["severity"], f["line"], f["hosts"]) for f in found] == expected
    assert all(f["file"].endswith(f"examples/{example}/hosts.yml") for f in found)


def test_the_hma_example_s_prefill_cannot_simply_turn_hma_on(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Leaving the prefill's flag unset instead: PdConnector keeps HMA on and its DynamoConnector child fails."""
    text = (ROOT / "examples" / "dynamo-hma" / "hosts.yml").read_text()
    (tmp_path / "hosts.yml").write_text(text.replace("          disable_hybrid_kv_cache_manager: true\n", ""))
    assert main([str(tmp_path / "hosts.yml"), "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert [(f["rule"], f["line"]) for f in found] == [("connector[config]", 25)]  # its connectors list
    assert "HMA should not be enabled unless all sub-connectors support it" in found[0]["message"]

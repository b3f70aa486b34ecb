"""inventory[no-pd-hosts]: no host takes part but the inventory looks like P/D - never a silent pass."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdlint import cli

RULE = "inventory[no-pd-hosts]"
GROUPS = "all:\n  children:\n    prefill:\n      hosts:\n        p1: {tp: 4}\n    decode:\n      hosts:\n        d1: {tp: 6}\n"
HOSTS = "all:\n  hosts:\n    chat-prefill-0: {tp: 4}\n    chat-decode-0: {tp: 6}\n"
COMMAND = ("all:\n  hosts:\n    a: {}\n    b: {}\n  vars:\n    launch: >-\n      vllm serve m\n"
           "      --kv-transfer-config '{\"kv_connector\": \"NixlConnector\", \"kv_role\": \"kv_both\"}'\n")
PLAIN = "all:\n  hosts:\n    web1: {http_port: 80}\n    web2: {}\n  vars:\n    # kv_connector: not yet\n    x: 1\n"
TAKES_PART = GROUPS.replace("{tp: 4}", "{vllm_pd_role: prefill, vllm_pd_deployment: chat}")


def _run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], loader: str) -> list[dict]:
    (tmp_path / "hosts.yml").write_text(text, encoding="utf-8")
    cli.main([str(tmp_path), "--format", "json", "--no-cache", "--loader", loader])
    return [f for f in json.loads(capsys.readouterr().out) if f["rule"] == RULE]


@pytest.mark.parametrize("loader", ["fast", "ansible"])
@pytest.mark.parametrize(("text", "seen", "line"), [
    (GROUPS, "groups decode, prefill", None),
    (HOSTS, "hosts chat-decode-0, chat-prefill-0", None),
    (COMMAND, "--kv-transfer-config at ", 8),
    (PLAIN, None, None),
    (TAKES_PART, None, None),
])
def test_looks_like_pd(tmp_path: Path, capsys: pytest.CaptureFixture[str], loader: str, text: str,
                       seen: str | None, line: int | None) -> None:
    found = _run(tmp_path, text, capsys, loader)
    if seen is None:
        assert found == []
        return
    [warning] = found
    assert warning["severity"] == "warning" and seen in warning["message"] and warning["line"] == line
    assert "variables:\n  vllm_pd_role: \"{{" in warning["hint"]


def test_hint_maps_the_groups_seen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [warning] = _run(tmp_path, GROUPS.replace("prefill:", "gpu_prefill:"), capsys, "fast")
    assert ("vllm_pd_role: \"{{ 'prefill' if 'gpu_prefill' in group_names else 'decode' if 'decode' in group_names "
            "else none }}\"") in warning["hint"]

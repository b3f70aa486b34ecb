"""connector[extra-key]: a kv_connector_extra_config key the connector never reads in the pinned release is a
warning, never an error."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tree

from pdlint.engine import core as engine
from pdlint.load import select

HEAD = """\
all:
  vars:
    vllm_pd_deployment: chat
    vllm_version: "%s"
    vllm_model: Qwen/Qwen3-0.6B
    vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: 10.0.0.1}
  hosts:
    p1:
      vllm_pd_role: prefill
      vllm_kv_transfer_config: {kv_connector: %s, kv_role: kv_producer}
    d1:
      vllm_pd_role: decode
      vllm_kv_transfer_config:
        kv_connector: %s
        kv_role: kv_consumer
        kv_connector_extra_config: %s
"""


def _lint(tmp_path: Path, text: str) -> engine.Result:
    write_tree(tmp_path, {"hosts.yml": text})
    return engine.lint(select.load([str(tmp_path / "hosts.yml")]))


@pytest.mark.parametrize(("release", "connector", "extra", "rule", "key", "hint"), [
    ("0.33.0", "NixlConnector", "{http_port: 8000}", "connector[extra-key]", "http_port",
     "it is MoRIIO's key (left from another connector?): remove it"),
    ("0.20.0", "NixlConnector", "{num_thread: 8}", "connector[extra-key]", "num_thread", "did you mean num_threads?"),
    ("0.20.0", "NixlConnector", "{kv_lease_duration: 60}", "connector[extra-key]", "kv_lease_duration",
     "NIXL reads it in vLLM 0.22.0+; remove it, or pin that release"),
    ("0.22.0", "NixlConnector", "{kv_lease_duration: 60}", None, "", ""),
    ("0.33.0", "MooncakeConnector", "{mooncake_protocl: tcp}", "connector[extra-key]", "mooncake_protocl",
     "did you mean mooncake_protocol?"),
    ("0.33.0", "LMCacheConnectorV1", "{anything: 1}", None, "", ""),  # the lmcache package reads its own keys
])
def test_a_key_the_connector_never_reads_is_a_warning(tmp_path: Path, release: str, connector: str, extra: str,
                                                      rule: str | None, key: str, hint: str) -> None:
    text = HEAD % (release, connector, connector, extra)
    found = [f for f in _lint(tmp_path, text).findings if f.rule in ("connector[extra-key]", "schema")]
    if rule is None:
        assert found == []
        return
    line = text.splitlines().index(f"        kv_connector_extra_config: {extra}") + 1
    assert [(f.rule, f.severity, f.origin.line) for f in found] == [(rule, "warning", line)], found
    label = {"NixlConnector": "NIXL", "MooncakeConnector": "Mooncake"}[connector]
    assert found[0].message == f"kv_connector_extra_config key {key!r} has no effect: {label} in vLLM {release} " \
                               "never reads it"
    assert found[0].hint == hint and found[0].hosts == ("d1",)


def test_a_multiconnector_child_is_checked_as_its_own(tmp_path: Path) -> None:
    extra = "{connectors: [{kv_connector: NixlConnector, kv_role: kv_both, kv_connector_extra_config: {http_port: 1}}]}"
    text = HEAD % ("0.33.0", "NixlConnector", "MultiConnector", extra)
    found = [f for f in _lint(tmp_path, text).findings if f.rule == "connector[extra-key]"]
    assert [f.message for f in found] == ["connectors[0].kv_connector_extra_config key 'http_port' has no effect: "
                                          "NIXL in vLLM 0.33.0 never reads it"]
    assert found[0].severity == "warning"

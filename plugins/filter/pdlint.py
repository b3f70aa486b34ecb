"""Filters over the pdlint rules core: ack_count, remote_ranks, findings, explain."""
from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint import requires
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.engine import core as engine
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.engine import tp_pair as pairing
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load import tagged
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.vllm.connectors import moriio


def ack_count(producer_tp: int, consumer_tp: int) -> int:
    try:
        return moriio.ack_count(int(producer_tp), int(consumer_tp))
    except ValueError as exc:
        raise AnsibleFilterError(f"pdlint.topology.ack_count: {exc}") from exc


def remote_ranks(local_rank: int, local_tp: int, remote_tp: int, connector: str = "moriio") -> list[int]:
    try:
        return pairing.remote_ranks(int(local_rank), int(local_tp), int(remote_tp), connector)
    except ValueError as exc:
        raise AnsibleFilterError(f"pdlint.topology.remote_ranks: {exc}") from exc


def findings(hostvars: Any, hosts: list[str]) -> list[dict[str, Any]]:
    problem = requires.missing()
    if problem:
        raise AnsibleFilterError(problem)
    return [f.as_dict() for f in engine.lint(tagged.from_play(hostvars, hosts)).findings]


def explain(hostvars: Any, hosts: list[str], format: str = "json") -> Any:  # `format`: the CLI option name
    """pdlint explain's model of the hosts: the JSON model as data, or text/markdown/html as a string."""
    from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.explain import as_json, compute
    from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.explain.formats import FORMATS

    if format not in FORMATS:
        raise AnsibleFilterError(f"pdlint.topology.explain: format must be one of {', '.join(sorted(FORMATS))}")
    loaded = tagged.from_play(hostvars, hosts)
    result = engine.lint(loaded)
    found, topology = result.findings, result.topology
    model = compute.explain(topology, found, loaded)
    return as_json.as_dict(model) if format == "json" else FORMATS[format](model, False)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ack_count": ack_count, "remote_ranks": remote_ranks, "findings": findings, "explain": explain}

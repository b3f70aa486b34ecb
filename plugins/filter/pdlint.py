"""Filters over the pdlint rules core: ack_count, remote_ranks, findings."""
from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.pdlint.topology.plugins.module_utils.pdlint import engine, pairing, requires
from ansible_collections.pdlint.topology.plugins.module_utils.pdlint.vllm import moriio
from ansible_collections.pdlint.topology.plugins.module_utils.pdlint.load import tagged


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
    return [f.as_dict() for f in engine.check(tagged.from_play(hostvars, hosts))]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"ack_count": ack_count, "remote_ranks": remote_ranks, "findings": findings}

"""MoRIIO listener ports of one engine against each release's own code (port[collision]).

Per release (0.14.0+) the worker's listener port is the expression its MoRIIOConnectorWorker.__init__ assigns to
`self.side_channel_port` (handshake_port + get_port_offset(self.dp_rank, self.tp_rank)), with get_port_offset
lifted from moriio_common.py, evaluated for every worker of an engine on one host: DP 1, 2, 4 (all local) x TP
1, 2, 4 x PP 1, 2 (the stages do not enter the offset). Two workers on one port hang the engine at start
(register_kv_caches waits on ready_event); pdlint must report port[collision] on the instance itself, saying so,
exactly then.
"""
from __future__ import annotations

import ast
import functools
import itertools
import types
from typing import Any

import pytest
import vllm_source

from pdlint.engine import core as engine
from pdlint.hostvars import HostVars
from pdlint.vllm.connectors import registry
from pdlint.vllm.releases import KNOWN, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

RELEASES = [r for r in KNOWN if registry.registered("MoRIIOConnector", r)]
ROOTS = vllm_source.roots(RELEASES)
DIR = f"{vllm_source.KV}/v1/moriio"


@functools.cache
def _port(release: Release) -> Any:
    """fn(self, get_port_offset) -> the release's self.side_channel_port expression."""
    root = ROOTS[release]
    offset = vllm_source.lift(root, f"{DIR}/moriio_common.py", {"get_port_offset"})["get_port_offset"]
    tree = ast.parse((root / DIR / "moriio_connector.py").read_text(encoding="utf-8"))
    expr = next(n.value for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and n.value is not None and
                ast.unparse(n.target) == "self.side_channel_port")
    code = compile(ast.Expression(expr), "side_channel_port", "eval")
    return lambda me: eval(code, {"self": me, "get_port_offset": offset})  # noqa: S307 - vLLM's own expression


def vllm_collides(release: Release, dp: int, tp: int, pp: int) -> bool:
    ports = [_port(release)(types.SimpleNamespace(moriio_config=types.SimpleNamespace(handshake_port=6301),
                                                  dp_rank=d, tp_rank=t))
             for d, t, _ in itertools.product(range(dp), range(tp), range(pp))]
    return len(set(ports)) != len(ports)


def _hosts(release: Release, dp: int, tp: int, pp: int) -> list[HostVars]:
    common = {"vllm_pd_deployment": "x", "vllm_version": release.text, "vllm_model": "deepseek-ai/DeepSeek-V3",
              "vllm_data_parallel_size": dp, "vllm_tensor_parallel_size": tp, "vllm_pipeline_parallel_size": pp}
    extra = {"http_port": 8000, "read_mode": "true", "handshake_port": 6301}
    return [HostVars(name, {**common, "vllm_pd_role": role, "vllm_kv_transfer_config": {
        "kv_connector": "MoRIIOConnector", "kv_role": kv_role, "kv_connector_extra_config": extra}})
        for name, role, kv_role in (("p", "prefill", "kv_producer"), ("d", "decode", "kv_consumer"))]


@pytest.mark.parametrize("release", RELEASES, ids=str)
def test_moriio_workers_of_one_engine_share_no_port(release: Release) -> None:
    wrong = []
    for dp, tp, pp in itertools.product((1, 2, 4), (1, 2, 4), (1, 2)):
        found = [f for f in engine.lint(_hosts(release, dp, tp, pp)).findings if f.rule == "port[collision]"
                 and "MoRIIO handshake" in f.message and "the same instance" in f.message]
        if bool(found) != vllm_collides(release, dp, tp, pp):
            wrong.append((dp, tp, pp, [f.message for f in found]))
        for finding in found:
            assert "waits forever on ready_event" in finding.message, finding.message
    assert not wrong, f"{release}: {wrong[:4]}"

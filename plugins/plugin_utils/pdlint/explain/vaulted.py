"""Which parts of the explain model would show vault-decrypted values: those are <vaulted>, in every format.

A value is masked where it is shown (TP, a port, a CUDA device, a name) and wherever it can be read off what is
shown: an engine of vaulted shape lists no workers, a pair with a vaulted TP or model has no rank map or ack count.
Every string of the model is also masked token by token, as findings are (engine/redact.py).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from ..engine import redact
from ..finding import Finding
from ..hostvars import HostVars
from ..topology.types import Instance
from ..vllm.connectors.ports import Bind

MASK = redact.MASK
# What the worker list (DP/PP/TP ranks per host) is computed from.
SHAPE = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "data_parallel_size_local",
         "data_parallel_start_rank", "nnodes", "node_rank")
# What a rank map (links, KV heads moved, acks) is computed from, besides the connector.
RANK_MAP = ("tensor_parallel_size", "model", "model_num_attention_heads", "model_num_kv_heads", "model_is_mla",
            "model_has_ssm", "model_sliding_window")
# What a pair's why-block (explain/why.py) reads: any of these vaulted and the block is not shown.
WHY = (*SHAPE, *RANK_MAP, "kv_transfer_config", "version", "disable_hybrid_kv_cache_manager", "env", "revision")
_BIND_FIELD = {"port": "port", "kv_port": "kv_transfer_config.kv_port"}


class Vault:
    """The vaulted contract values of each instance of these hosts (none: nothing is masked)."""

    def __init__(self, hosts: Sequence[HostVars] = ()) -> None:
        self._hosts = {hv.host: hv for hv in hosts if hv.secrets}
        self._texts = redact.secret_texts(hosts)  # every host: a deployment another sets in clear is no secret
        self._cache: dict[tuple[str, int | None], frozenset[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._hosts)

    def fields(self, inst: Instance) -> frozenset[str]:
        key = (inst.host, inst.index)
        if key not in self._cache:
            hv = self._hosts.get(inst.host)
            fields = redact.vaulted_fields(hv, inst.index) if hv else frozenset()
            # the side's role word and a deployment named in clear elsewhere are said anyway (redact.secret_texts)
            said = {"pd_role": inst.role, "pd_deployment": inst.deployment}
            self._cache[key] = frozenset(f for f in fields if (head := f.split(".")[0]) not in said
                                         or said[head] in self._texts)
        return self._cache[key]

    def any(self, instances: Iterable[Instance], *names: str) -> bool:
        """Whether any of names is vaulted on any of the instances."""
        return any(redact.vaulted(self.fields(i), n) for i in instances for n in names) if self else False

    def value(self, instances: Iterable[Instance], name: str, shown: Any) -> Any:
        """shown, or <vaulted> when name is vaulted on one of the instances."""
        return MASK if self.any(instances, name) else shown

    def ports(self, inst: Instance, binds: Iterable[Bind]) -> list[tuple[int | str, str]]:
        """(port, what) of each listener as shown. A connector's listeners follow its config and, where the engine's
        shape is vaulted, their ranks and count would show it: then one row per kind of listener, port <vaulted>."""
        if not self:
            return [(b.port, b.what) for b in binds]
        shape = self.any((inst,), *SHAPE)
        connector = self.any((inst,), "kv_transfer_config.kv_connector")
        shown: list[tuple[int | str, str]] = []
        for bind in binds:
            field = bind.field
            if field.startswith("extra."):
                field = "kv_transfer_config.kv_connector_extra_config." + field[len("extra."):]
            if not bind.kind:  # the API port
                shown.append((self.value((inst,), _BIND_FIELD.get(field, field), bind.port), bind.what))
            elif shape or connector:
                row = (MASK, MASK if connector else bind.what.split(" (")[0])
                if row not in shown:
                    shown.append(row)
            else:
                shown.append((self.value((inst,), _BIND_FIELD.get(field, field), bind.port), bind.what))
        return shown

    def strings(self, model: Any) -> Any:
        """model with every secret text in its strings masked (findings are masked already)."""
        if not self._texts:
            return model
        return _walk(model, self._texts)


def _walk(value: Any, texts: set[str]) -> Any:
    if isinstance(value, str):  # a bare number (a CUDA device) is masked by field, never because it equals a secret
        return redact.mask_text(value, texts) if not value.isdigit() and any(t in value for t in texts) else value
    if isinstance(value, Finding):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _walk(getattr(value, f.name), texts)
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, tuple):
        return tuple(_walk(v, texts) for v in value)
    return value

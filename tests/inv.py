"""Tiny inventory builders for the rule tables."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from pdlint.finding import Finding


def pair(connector: str | None = "NixlConnector", p: dict[str, Any] | None = None, d: dict[str, Any] | None = None,
         extra: dict[str, Any] | None = None, model: str | None = "meta-llama/Llama-3.3-70B-Instruct",
         **common: Any) -> str:
    """hosts.yml with one prefill host p1 and one decode host d1 in deployment 'dep' (where() spells its paths)."""
    def host(role: str, own: dict[str, Any] | None) -> dict[str, Any]:
        h: dict[str, Any] = {"vllm_pd_role": role}
        if connector:
            kv: dict[str, Any] = {"kv_connector": connector,
                                  "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
            if extra is not None:
                kv["kv_connector_extra_config"] = dict(extra)
            h["vllm_kv_transfer_config"] = kv
        for key, value in (own or {}).items():
            if key.startswith("kv."):
                h.setdefault("vllm_kv_transfer_config", {})[key[3:]] = value
            elif key.startswith("extra."):
                h["vllm_kv_transfer_config"].setdefault("kv_connector_extra_config", {})[key[6:]] = value
            else:
                h["vllm_" + key] = value
        return h

    top: dict[str, Any] = {"vllm_pd_deployment": "dep", **{"vllm_" + k: v for k, v in common.items()}}
    if model:
        top["vllm_model"] = model
    doc = {"all": {"vars": top, "hosts": {"p1": host("prefill", p), "d1": host("decode", d)}}}
    return flow(doc)


def flow(doc: dict[str, Any]) -> str:
    """doc as one line of flow-style YAML under its top key. Not as bare JSON: Ansible tries JSON first, and what
    it reads as JSON keeps no line or column, so the rows could not say where a finding points."""
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in doc.items())


MORIIO_READ = {"http_port": 8000, "read_mode": "true"}


def _step(node: yaml.Node, name: str) -> tuple[yaml.Node, yaml.Node]:
    """The (key, value) nodes of one step below node: a mapping key or a sequence index."""
    if isinstance(node, yaml.SequenceNode):
        child = node.value[int(name)]
        return child, child
    assert isinstance(node, yaml.MappingNode), (name, node)
    for key, value in node.value:
        if key.value == name:
            return key, value
    raise KeyError(name)


def where(text: str, path: str) -> tuple[int, int]:
    """1-based (line, column) of the value at path in text, found by PyYAML's own composer (not pdlint's loader).

    path is spelled as the row builders take it: 'd1.tensor_parallel_size' is all.hosts.d1.vllm_tensor_parallel_size,
    'd1.kv.kv_role' all.hosts.d1.vllm_kv_transfer_config.kv_role, 'd1.kv.extra.x' its kv_connector_extra_config.x,
    'vars.model' all.vars.vllm_model; later steps are literal keys or sequence indexes ('gpu1.instances.0.port').
    A path starting 'all.' is taken literally throughout. A null or boolean value reports its key: Ansible keeps no
    position for those, so pdlint (and an editor) can only point at the key's line.
    """
    steps = path.split(".")
    if steps[0] != "all":
        head = ["vars"] if steps[0] == "vars" else ["hosts", steps[0]]
        rest = ["vllm_kv_transfer_config" if s == "kv" else "vllm_" + s for s in steps[1:2]]
        rest += ["kv_connector_extra_config" if s == "extra" else s for s in steps[2:]]
        steps = ["all", *head, *rest]
    node: yaml.Node = yaml.compose(text)
    key = node
    for name in steps:
        key, node = _step(node, name)
    if isinstance(node, yaml.ScalarNode) and node.tag in ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool"):
        node = key
    return node.start_mark.line + 1, node.start_mark.column + 1


def assert_points(found: list[Finding], rule: str, at: str | None, text: str, file: str = "hosts.yml") -> None:
    """rule fired with a finding at where(text, at) in file, or (at None) did not fire at all."""
    places = [(f.origin.file, f.origin.line, f.origin.column) for f in found if f.rule == rule]
    if at is None:
        assert not places, places
    else:
        assert (file, *where(text, at)) in places, (at, places)


def row_ids(rows: Sequence[Any]) -> list[str]:
    """Row ids as rule-fires?-index, for plain rows and pytest.param rows alike."""
    plain = [getattr(row, "values", row) for row in rows]
    return [f"{row[0]}-{row[1] is not None}-{i}" for i, row in enumerate(plain)]

"""Turn resolved host variables into a Topology (plus findings about values it cannot use)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .. import NEWEST_VLLM, lax
from ..contract import MAX_SIZE, PORT, VARIABLES, host_var, int_bounds
from ..finding import UNKNOWN, Finding, Origin, rehosted
from ..hostvars import HostVars, Profiles, Unresolved
from . import facts
from .coerce import as_int, coerce, kv_config, unreadable_number  # kv_config: schema.check imports it from here
from .types import Bodies, Deployment, Engine, Instance, Topology, Undecided, share_bodies

_FIELDS = {  # contract name -> Instance attribute
    "pd_deployment": "deployment", "pd_role": "role", "model": "model", "revision": "revision", "version": "version",
    "tensor_parallel_size": "tp", "pipeline_parallel_size": "pp", "data_parallel_size": "dp",
    "data_parallel_size_local": "dp_local", "data_parallel_start_rank": "dp_start",
    "nnodes": "nnodes", "node_rank": "node_rank", "instance_id": "instance_id", "node": "node",
    "port": "port", "block_size": "block_size", "dtype": "dtype", "kv_cache_dtype": "kv_cache_dtype",
    "disable_hybrid_kv_cache_manager": "disable_hma", "host_gpu_count": "gpu_count", "launcher": "launcher",
    "host_gpu_type": "gpu_type", "host_gpu_memory_gib": "gpu_memory_gib",
}
_FACTS = {
    "model_num_attention_heads": "heads", "model_num_kv_heads": "kv_heads", "model_is_mla": "mla",
    "model_has_ssm": "ssm", "model_sliding_window": "sliding_window",
}
_KV = {"kv_connector": "connector", "kv_role": "kv_role", "kv_port": "kv_port", "engine_id": "engine_id",
       "kv_connector_module_path": "module_path", "kv_connector_extra_config": "extra",
       "kv_buffer_device": "kv_buffer_device"}


class _Source:
    """The merged view of one instance: an item of vllm_instances over the host's own values."""

    def __init__(self, hv: HostVars, index: int | None) -> None:
        self.hv = hv
        self.index = index
        item = hv.values.get("vllm_instances")
        self.item: Mapping[str, Any] = item[index] if index is not None and isinstance(item, list) else {}
        # a vault-encrypted file the host reads (no password) may set any name the host does not
        self.hidden = bool(hv.hidden) and index is None

    def path(self, name: str) -> tuple[str | int, ...] | None:
        """Where name is set: the item first, then the host; None when unset."""
        if self.index is not None and name in self.item:
            return ("vllm_instances", self.index, name)
        key = host_var(name)
        return (key,) if key in self.hv.values else None

    def get(self, name: str, key: str | None = None) -> tuple[Any, Origin | None]:
        """name's value and origin (None, None: unset); key, its inventory name, saves the lookup."""
        if self.index is None:  # a host's own variable: the common case, read directly
            key = key or host_var(name)
            if key not in self.hv.values:
                return None, None
            return self.hv.values[key], self.hv.origins.get((key,), UNKNOWN)
        where = self.path(name)
        if where is None:
            return None, None
        return self.hv.get(*where), self.hv.origin(*where)

    def origin_in(self, name: str, *sub: str | int) -> Origin:
        where = self.path(name)
        return self.hv.origin(*where, *sub) if where else Origin()


def _unresolved(src: _Source, name: str, why: str, origin: Origin | None) -> Finding:
    return Finding(
        origin=origin or Origin(), rule="unresolved", severity="warning",
        message=f"{host_var(name)} cannot be rendered statically ({why}); rules that need it are skipped",
        hint=("pass --vault-password-file FILE (or set ANSIBLE_VAULT_PASSWORD_FILE) to check it" if "vault" in why
              else "set a literal value, or define the variables the template uses in the inventory"),
        hosts=(src.hv.host,),
    )


# The contract variables _instance reads one by one (with their inventory names); kv_transfer_config and env
# have readers of their own, and args is read by the launch stage (launch/command.py) into the others.
_READ = tuple((v.name, host_var(v.name)) for v in VARIABLES if v.name not in ("kv_transfer_config", "env", "args"))
_NAME_OF = {key: name for name, key in _READ}


def _instance(src: _Source, problems: list[Finding], models: facts.ModelLookup) -> Instance | None:
    hv = src.hv
    fields: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    unresolved: set[str] = set()
    fact_values: dict[str, Any] = {}
    # A host's own variables: only those it sets (most hosts set a dozen of the contract's names).
    read = _READ if src.index is not None else [(_NAME_OF[k], k) for k in src.hv.values if k in _NAME_OF]
    for name, key in read:
        value, origin = src.get(name, key)
        if origin is not None and value is None and name == "port":
            fields["port"], origins["port"] = None, origin  # explicit null: no API server (headless engine)
        if origin is None or value is None:
            continue
        origins[name] = origin
        if isinstance(value, Unresolved):
            unresolved.add(name)
            if not value.reported:
                problems.append(_unresolved(src, name, value.reason, origin))
            continue
        value, usable = coerce(name, value)
        if not usable:
            unresolved.add(name)  # reported by the schema rule
        elif name in _FIELDS:
            fields[_FIELDS[name]] = value
        elif name in _FACTS:
            fact_values[_FACTS[name]] = value
    if src.hidden:
        unresolved.update(name for name, _key in _READ if name not in origins)
        if "kv_transfer_config" not in origins:
            unresolved.update(("kv_transfer_config", *_KV))
        if "env" not in origins:
            unresolved.add("env")
    if fields.get("role") not in ("prefill", "decode"):
        return None
    if "deployment" not in fields and "pd_deployment" not in unresolved:
        problems.append(Finding(
            origin=origins.get("pd_role", Origin()), rule="schema", severity="error",
            message="vllm_pd_role is set but vllm_pd_deployment is missing",
            hint="set vllm_pd_deployment to the name of the P/D deployment this instance belongs to",
            hosts=(hv.host,),
        ))
    _kv_fields(src, fields, origins, unresolved, problems)
    _sizing(src, fields, origins, unresolved)
    _env(src, fields, origins, unresolved, problems)
    skip = hv.values.get("pdlint_skip")
    dp = fields.get("dp", 1)
    fields.setdefault("dp_local", dp)
    _bound_gpus(src, fields, origins, unresolved, problems)
    known = facts.with_inventory(fields.get("model"), fields.get("revision"),
                                 str(fields.get("version", NEWEST_VLLM)), fact_values, models)
    return Instance(
        host=hv.host, index=src.index, deployment=fields.pop("deployment", None), role=fields.pop("role"),
        instance_id=str(fields.pop("instance_id", hv.host if src.index is None else f"{hv.host}[{src.index}]")), node=str(fields.pop("node", hv.host)),
        version=str(fields.pop("version", NEWEST_VLLM)), facts=known,
        skip=frozenset(s for s in skip if isinstance(s, str)) if isinstance(skip, list) else frozenset(),
        origins=origins, unresolved=frozenset(unresolved), **fields,
    )


_SIZES = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp_local": "data_parallel_size_local"}


def _bound_gpus(src: _Source, fields: dict[str, Any], origins: dict[str, Origin], unresolved: set[str],
                problems: list[Finding]) -> None:
    """An engine of more than MAX_SIZE GPUs is a typo: report it, and let no rule walk its ranks."""
    gpus = fields.get("tp", 1) * fields.get("pp", 1) * fields["dp_local"]
    if gpus <= MAX_SIZE:
        return
    problems.append(Finding(
        origin=origins.get("tensor_parallel_size", origins.get("pd_role", Origin())), rule="schema", severity="error",
        message=(f"TP {fields.get('tp', 1)} x PP {fields.get('pp', 1)} x local DP {fields['dp_local']} = {gpus} GPUs "
                 f"for one engine; pdlint checks engines of up to {MAX_SIZE} GPUs"),
        hint="check vllm_tensor_parallel_size, vllm_pipeline_parallel_size and vllm_data_parallel_size(_local) "
             "for a typo", hosts=(src.hv.host,)))
    for attr, name in _SIZES.items():
        fields.pop(attr, None)
        unresolved.add(name)
    fields["dp_local"] = 1


# vLLM arguments (not contract variables: the schema checks them as the host's release parses them) that size the
# engine's memory; the vllm layer reads them (vllm/model/memory.py)
SIZING = ("max_model_len", "gpu_memory_utilization", "kv_cache_memory_bytes", "max_num_batched_tokens",
          "quantization", "enable_expert_parallel", "cpu_offload_gb", "decode_context_parallel_size")


def _sizing(src: _Source, fields: dict[str, Any], origins: dict[str, Origin], unresolved: set[str]) -> None:
    found: dict[str, Any] = {}
    for name in SIZING:
        value, origin = src.get(name)
        if origin is None:
            continue
        origins[name] = origin
        if isinstance(value, Unresolved):
            unresolved.add(name)  # the schema and unresolved rules report it
        elif value is not None:
            found[name] = value
    if found:
        fields["sizing"] = found


def _kv_fields(src: _Source, fields: dict[str, Any], origins: dict[str, Origin],
               unresolved: set[str], problems: list[Finding]) -> None:
    raw, origin = src.get("kv_transfer_config")
    if origin is None or raw is None:
        return
    fields["kv_config_set"] = True
    origins["kv_transfer_config"] = origin
    if isinstance(raw, Unresolved):
        unresolved.update(("kv_transfer_config", *_KV))
        if not raw.reported:
            problems.append(_unresolved(src, "kv_transfer_config", raw.reason, origin))
        return
    config, _error = kv_config(raw)
    if config is None:
        unresolved.update(("kv_transfer_config", *_KV))  # the schema rule reports it
        return
    from_json = isinstance(raw, str)
    for key, attr in _KV.items():
        if key not in config:
            continue
        value = config[key]
        origins[key] = origin if from_json else src.origin_in("kv_transfer_config", key)
        if value is None:
            continue  # kept unset, but where it was written down stays known (kv_role: null)
        if isinstance(value, Unresolved):
            unresolved.add(key)
            problems.append(_unresolved(src, f"kv_transfer_config.{key}", value.reason, origins[key]))
        elif key == "kv_port":
            number = as_int(lax.to_int(value), int_bounds(PORT))  # pydantic lax mode: 14580.0, "14580" (lax.py)
            fields[attr] = number
            if number is None:
                unresolved.add(key)
        elif key == "kv_connector_extra_config":
            if isinstance(value, dict):
                fields[attr] = value
                for sub in value:
                    origins[f"extra.{sub}"] = origin if from_json else src.origin_in(
                        "kv_transfer_config", key, sub)
                _child_origins(src, value.get("connectors"), origin if from_json else None, origins)
            else:
                unresolved.add(key)
        elif key != "kv_role" and not isinstance(value, str):
            unresolved.add(key)  # the schema rule reports it; kv-role[invalid] reports any kv_role
        else:
            fields[attr] = value


def _child_origins(src: _Source, items: Any, whole: Origin | None, origins: dict[str, Origin]) -> None:
    """Where each item of a composite's connectors list and each of its keys is written (extra.connectors.0,
    extra.connectors.0.kv_role), so a finding about one child points at that child, not at the list."""
    if not isinstance(items, list):
        return
    for index, item in enumerate(items):
        at = f"extra.connectors.{index}"
        origins[at] = whole or src.origin_in("kv_transfer_config", "kv_connector_extra_config", "connectors", index)
        for name in item if isinstance(item, dict) else ():
            origins[f"{at}.{name}"] = whole or src.origin_in(
                "kv_transfer_config", "kv_connector_extra_config", "connectors", index, name)


def _env(src: _Source, fields: dict[str, Any], origins: dict[str, Origin], unresolved: set[str],
         problems: list[Finding]) -> None:
    raw, origin = src.get("env")
    if origin is None or not isinstance(raw, dict):
        if isinstance(raw, Unresolved):  # the whole mapping (`vllm_env: "{{ envs }}"`): none of its names is known
            unresolved.add("env")
            problems.append(_unresolved(src, "env", raw.reason, origin))
        return
    env: dict[str, str] = {}
    for key, value in raw.items():
        origins[f"env.{key}"] = src.origin_in("env", str(key))
        if isinstance(value, Unresolved):  # the rules reading it skip this instance (Instance.knows)
            unresolved.add(f"env.{key}")
            problems.append(_unresolved(src, f"env.{key}", value.reason, origins[f"env.{key}"]))
        elif isinstance(value, str) and unreadable_number(value):
            unresolved.add(f"env.{key}")
            problems.append(Finding(
                origin=origins[f"env.{key}"], rule="schema", severity="error",
                message=f"vllm_env.{key}: {value[:20]!r}{'...' if len(value) > 20 else ''} is written in digits "
                        f"that Python's int() cannot read ({len(value)} characters)",
                hint="write the number with the digits 0-9", hosts=(src.hv.host,)))
        elif value is not None:
            env[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    fields["env"] = env


def _sources(hv: HostVars) -> Iterator[_Source]:
    items = hv.values.get("vllm_instances")
    if isinstance(items, list) and items:
        for index, item in enumerate(items):
            if isinstance(item, dict):
                yield _Source(hv, index)
    else:
        yield _Source(hv, None)


def _undecided(src: _Source, inst: Instance | None) -> Undecided | None:
    """The source, when its side or deployment is unresolved and it may still be a side of some deployment."""
    if inst is not None and inst.deployment is not None:
        return None
    role, _unused = src.get("pd_role")
    dep, _unused = src.get("pd_deployment")
    if src.hidden:  # unset, but maybe set in a vault-encrypted file it reads
        role = Unresolved("vault") if role is None else role
        dep = Unresolved("vault") if dep is None else dep
    if not (isinstance(role, Unresolved) or isinstance(dep, Unresolved)):
        return None
    if not (isinstance(role, Unresolved) or role in ("prefill", "decode")):
        return None  # a role no template makes valid: the schema rule's
    if not (isinstance(dep, Unresolved) or (isinstance(dep, str) and dep)):
        return None  # no deployment (or one the schema rejects): a side of none
    return Undecided(src.hv.host, None if isinstance(dep, Unresolved) else dep,
                     None if isinstance(role, Unresolved) else role)


def build(hosts: Iterable[HostVars], models: facts.ModelLookup = facts.table_lookup,
          earlier: Bodies | None = None) -> tuple[Topology, list[Finding]]:
    """All instances of all hosts, grouped into engines and deployments; models gives each model's facts.
    earlier (share_bodies): an earlier build's bodies; given, the topology carries its own for the next build."""
    problems: list[Finding] = []
    instances: list[Instance] = []
    undecided: list[Undecided] = []
    firsts: list[tuple[Instance, Instance]] = []
    copies: list[tuple[Instance, Instance]] = []  # (a profile's other host's instance, the first host's)
    profiles: Profiles[tuple[list[tuple[Instance | None, Undecided | None]], list[Finding]]] = Profiles()
    for hv in hosts:
        known = profiles.get(hv)
        if known is None:  # a profile's first host: built; the others re-issue what it found under their name
            mark = len(problems)
            parts = [(inst, _undecided(src, inst)) for src in _sources(hv)
                     for inst in (_instance(src, problems, models),)]
            known = (hv, profiles.put(hv, (parts, problems[mark:])))
        else:
            problems.extend(rehosted(known[1][1], known[0].host, hv.host))
        for inst, unsure in known[1][0]:
            if inst is not None:
                instances.append(inst if known[0] is hv else inst.as_host(hv.host))
                (firsts if known[0] is hv else copies).append((instances[-1], inst))
            if unsure is not None:
                undecided.append(unsure if known[0] is hv else dataclasses.replace(unsure, host=hv.host))
    bodies = share_bodies((inst for inst, _unused in firsts), copies, earlier)
    by_dep: dict[str, dict[str, dict[str, list[Instance]]]] = {}
    for inst in instances:
        if inst.deployment is None:
            continue
        side = by_dep.setdefault(inst.deployment, {"prefill": {}, "decode": {}})[inst.role]
        side.setdefault(inst.instance_id, []).append(inst)
    deployments = tuple(
        Deployment(
            name=name,
            prefill=tuple(Engine(tuple(group)) for _unused, group in sorted(sides["prefill"].items())),
            decode=tuple(Engine(tuple(group)) for _unused, group in sorted(sides["decode"].items())),
        )
        for name, sides in sorted(by_dep.items())
    )
    return Topology(tuple(instances), deployments, tuple(undecided), None if earlier is None else bodies), problems

"""KVTransferConfig by release: its fields, what vLLM does with other keys, and its kv_role checks.

Read from each wheel's KVTransferConfig (0.8.5 - 0.10.0 vllm/config.py, 0.10.1 vllm/config/__init__.py,
0.10.2+ vllm/config/kv_transfer.py) and the CLI parser of --kv-transfer-config (engine/arg_utils.py);
tests/vllm/connectors/test_vllm_registry.py reads them again and compares.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import lax
from ..history import history
from ..releases import Release, Timeline
from . import registry

_C = "KVTransferConfig"
_085 = ("kv_connector", "kv_buffer_device", "kv_buffer_size", "kv_role", "kv_rank", "kv_parallel_size", "kv_ip",
        "kv_port", "kv_connector_extra_config")
_090 = (*_085, "engine_id", "kv_connector_module_path")
_0111 = (*_090, "enable_permute_local_kv")
_0130 = (*_0111, "kv_load_failure_policy")
REMOVED_IN_0320 = ("kv_buffer_size", "kv_rank", "kv_parallel_size", "kv_ip")

FIELDS: Timeline[frozenset[str]] = Timeline(
    "KVTransferConfig fields",
    ("0.8.5", frozenset(_085), f"config.py {_C} (pydantic BaseModel)"),
    ("0.9.0", frozenset(_090), f"config.py {_C}", "+ engine_id, kv_connector_module_path"),
    ("0.11.1", frozenset(_0111), f"config/kv_transfer.py {_C}", "+ enable_permute_local_kv"),
    ("0.13.0", frozenset(_0130), f"config/kv_transfer.py {_C}", "+ kv_load_failure_policy"),
    ("0.32.0", frozenset(k for k in _0130 if k not in REMOVED_IN_0320), f"config/kv_transfer.py {_C}",
     "- kv_buffer_size, kv_rank, kv_parallel_size, kv_ip (removed)"),
)
# Every key some release accepts: the editor schema accepts these whatever the release.
ALL_FIELDS: tuple[str, ...] = tuple(sorted(frozenset().union(*(s.value for s in FIELDS.steps))))

# What --kv-transfer-config does with a key that is not a field.
EXTRA: Timeline[str] = Timeline(
    "unknown KVTransferConfig keys",
    ("0.8.5", "ignored", f"config.py {_C}.from_cli (model_validate_json, pydantic's default extra='ignore')",
     "silently ignored"),
    ("0.9.0", "rejected", ("engine/arg_utils.py _get_kwargs (`f(**json.loads(x))` on the dataclass: TypeError, "
     "argparse \"invalid <lambda> value\")"), "rejected: the dataclass gets an unexpected keyword argument"),
    ("0.9.1", "ignored", "engine/arg_utils.py parse_dataclass (TypeAdapter(cls).validate_json, extra='ignore')",
     "silently ignored"),
    ("0.16.0", "rejected", ("config/utils.py config (ConfigDict(extra=\"forbid\")); engine/arg_utils.py "
     "parse_dataclass"), "rejected: \"Extra inputs are not permitted\""),
)

# KVTransferConfig.__post_init__ (model_post_init in 0.8.5): kv_connector without kv_role.
ROLE_REQUIRED: Timeline[str] = Timeline(
    "kv_connector without kv_role",
    ("0.8.5", "Please specify kv_disagg_role when kv_connector is set", f"{_C}.__post_init__",
     "ValueError \"Please specify kv_disagg_role when kv_connector is set\""),
    ("0.11.1", "Please specify kv_role when kv_connector is set", f"config/kv_transfer.py {_C}.__post_init__",
     "ValueError \"Please specify kv_role when kv_connector is set\""),
)
# The three kv_role values are the same in every release (0.8.5 a list in model_post_init; 0.9.0+ the KVRole Literal).
ROLE_INVALID: Timeline[str] = Timeline(
    "kv_role not kv_producer, kv_consumer or kv_both",
    ("0.8.5", "Unsupported kv_role", f"config.py {_C}.model_post_init", "ValueError \"Unsupported kv_role\""),
    ("0.9.1", "Input should be 'kv_producer', 'kv_both' or 'kv_consumer'", ("engine/arg_utils.py parse_dataclass "
     "(the KVRole Literal fails pydantic validation first)"), "pydantic literal_error on the CLI"),
)


# The numeric and boolean fields' types (the annotations of each release's KVTransferConfig, lifted by
# tests/vllm/connectors/test_vllm_kv_lax.py): int kv_port, kv_parallel_size, kv_rank (Optional), float kv_buffer_size (until 0.31.0),
# bool enable_permute_local_kv (0.11.1+). str fields need no entry: pydantic converts no number to a str.
_NUMBERS_085 = {"kv_port": "int", "kv_parallel_size": "int", "kv_rank": "int", "kv_buffer_size": "float"}
NUMBER_FIELDS: Timeline[Mapping[str, str]] = Timeline(
    "KVTransferConfig number and bool fields",
    ("0.8.5", _NUMBERS_085, f"config.py {_C}", "kv_port, kv_parallel_size, kv_rank int; kv_buffer_size float"),
    ("0.11.1", {**_NUMBERS_085, "enable_permute_local_kv": "bool"}, f"config/kv_transfer.py {_C}",
     "+ enable_permute_local_kv bool"),
    ("0.32.0", {"kv_port": "int", "enable_permute_local_kv": "bool"}, f"config/kv_transfer.py {_C}",
     "kv_port int, enable_permute_local_kv bool"),
)
# How --kv-transfer-config turns JSON into those types.
PARSE: Timeline[str] = Timeline(
    "--kv-transfer-config value conversion",
    ("0.8.5", "lax", f"config.py {_C}.from_cli (model_validate_json: pydantic lax mode)",
     "pydantic lax mode: 14580.0 and \"14580\" are an int, \"1e9\" a float, \"yes\" a bool"),
    ("0.9.0", "as-written", "engine/arg_utils.py _get_kwargs (`f(**json.loads(x))` on a plain dataclass)",
     "no conversion: the connector gets each value as written (\"14580\" stays a string)"),
    ("0.9.1", "lax", "engine/arg_utils.py parse_dataclass (TypeAdapter(cls).validate_json: pydantic lax mode)",
     "pydantic lax mode: 14580.0 and \"14580\" are an int, \"1e9\" a float, \"yes\" a bool"),
)
_CONVERT = {"int": lax.to_int, "float": lax.to_float, "bool": lax.to_bool}
_PYTHON = {"int": int, "float": float, "bool": bool}


def converted(config: Mapping[str, Any], release: Release) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """config with each number/bool field as release's parser makes it, and (key, warning) for values vLLM 0.9.0
    passes on unconverted; a value the parser rejects stays as written, for the schema to report."""
    out = dict(config)
    notes: list[tuple[str, str]] = []
    for key, kind in NUMBER_FIELDS.at(release).items():
        value = config.get(key)
        if value is None:
            continue
        number = _CONVERT[kind](value)
        if number is None or (key == "kv_port" and not 1 <= number <= 65535):
            continue  # the schema reports the value as written (kv_port false is not the port 0)
        out[key] = number
        # pylint: disable-next=unidiomatic-typecheck  # exactly the type json.loads made: a bool is not an int here
        if PARSE.at(release) == "as-written" and type(value) is not _PYTHON[kind]:
            notes.append((key, f"{key}: vLLM {release} does not convert --kv-transfer-config values (json.loads into "
                               f"a plain dataclass): the connector gets {value!r}, not the {kind} {number!r}"))
    return out, notes


def fields(release: Release) -> frozenset[str]:
    return FIELDS.at(release)


def unknown_key(key: str, release: Release) -> tuple[str, str] | None:
    """(severity, message) for a kv_transfer_config key release does not have; None when it is a field."""
    if key in fields(release):
        return None
    if key in REMOVED_IN_0320 and release >= FIELDS.steps[-1].since:
        what = f"key {key!r} was removed from KVTransferConfig in vLLM 0.32.0"
    else:
        what = f"unknown key {key!r}: not a KVTransferConfig field in vLLM {release}"
    if EXTRA.at(release) == "rejected":
        how = ("\"Extra inputs are not permitted\"" if release >= EXTRA.steps[-1].since
               else "TypeError: unexpected keyword argument")
        return "error", f"{what}; vLLM {release} rejects it ({how})"
    return "warning", f"{what}; vLLM {release} silently ignores it, so the setting has no effect"


def _declare() -> None:
    """The timelines of this module and the registry that decide rules (pdlint rules ID, rules-provenance.md)."""

    declared: tuple[tuple[str, Timeline[Any]], ...] = (("connector[unknown]", registry.documented(registry.NAMES)),
                                                       ("connector[unknown]", registry.UNKNOWN_NAME),
                                                       ("connector[config]", registry.HMA_DEFAULT),
                                                       ("connector[config]", registry.documented(registry.SUPPORTS_HMA)),
                                                       ("deployment[connector]", registry.ALIASES), ("kv-role[missing]", ROLE_REQUIRED),
                                                       ("kv-role[invalid]", ROLE_INVALID), ("schema", FIELDS), ("schema", EXTRA),
                                                       ("schema", NUMBER_FIELDS), ("schema", PARSE))
    for rule_id, timeline in declared:
        history(rule_id, timeline)


_declare()

"""The inventory contract: every variable pdlint reads, described once.

The JSON Schema (schemas/pdlint-vars.schema.json), the `schema` rule and the
README's contract table are all generated from VARIABLES.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from . import lax

# What vllm_version accepts (vllm/releases.py parses it): 0.25.1, v0.25.1, 0.25, 0.25.1.post1, 0.25.1+cpu.
# Pre-releases (0.14.0rc1, 0.14.0.dev0, 0.14.0rc1.dev12+gabc: what vllm.__version__ of an rc or a source build reads,
# PEP 440 as setuptools-scm writes it) parse too: releases.resolve says which release's rules they get.
VERSION_PATTERN = (r"^\s*[vV]?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[.-]?(?:a|b|rc)\d+)?(?:[.-]?post\d+)?"
                   r"(?:[.-]?dev\d+)?(?:\+[0-9A-Za-z.]+)?\s*$")
PRE_RELEASE = r"(?:a|b|rc|dev)\d+"
INT_STRING = r"^\s*[0-9]+\s*$"
NUMBER_STRING = r"^\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*$"  # float() of digits with one point
TEMPLATE = r"(\{\{|\{%|\{#)"  # hostvars.is_template's start strings: Ansible renders comments too


@dataclasses.dataclass(frozen=True)
class Var:
    """One inventory variable (name without the vllm_ prefix where it has one)."""

    name: str
    schema: dict[str, Any]
    description: str
    default: Any = None
    in_instances: bool = True  # may be set on an item of vllm_instances
    expect: str = ""  # what a valid value is, in words, for schema messages


# The largest size pdlint checks: an engine of more GPUs than this is a typo, and the rules' rank
# arithmetic (rank maps, per-rank ports, divisor hints) walks every rank.
MAX_SIZE = 65536


def _same_length(low: str, high: str) -> str:
    """A regex for the decimal numbers from low to high, both written with the same number of digits."""
    if low == high:
        return low
    if len(low) == 1:
        return f"[{low}-{high}]"
    rest = len(low) - 1
    parts = []
    first, last = int(low[0]), int(high[0])
    if low[1:] != "0" * rest:
        parts.append(low[0] + "(?:" + _same_length(low[1:], "9" * rest) + ")")
        first += 1
    tail = ""
    if high[1:] != "9" * rest:
        tail = high[0] + "(?:" + _same_length("0" * rest, high[1:]) + ")"
        last -= 1
    if first <= last:
        parts.append((str(first) if first == last else f"[{first}-{last}]") + f"[0-9]{{{rest}}}")
    return "|".join([*parts, tail] if tail else parts)


def range_pattern(minimum: int, maximum: int) -> str:
    """A regex for minimum <= n <= maximum written in decimal (leading zeros and spaces allowed), as int() reads it."""
    spans = []
    for digits in range(len(str(minimum)), len(str(maximum)) + 1):
        low = max(minimum, 10 ** (digits - 1) if digits > 1 else 0)
        high = min(maximum, 10 ** digits - 1)
        spans.append(_same_length(str(low), str(high)))
    return rf"^\s*0*(?:{'|'.join(spans)})\s*$"


def int_schema(minimum: int, maximum: int) -> dict[str, Any]:
    number: dict[str, Any] = {"type": "integer", "minimum": minimum, "maximum": maximum}
    # vLLM int()-converts these, and its own docs quote ports as strings: the same range, written as digits.
    return {"anyOf": [number, {"title": "an integer written as a string", "type": "string",
                               "pattern": range_pattern(minimum, maximum)}]}


PORT = int_schema(1, 65535)


def lax_int_schema(minimum: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    """A KVTransferConfig int field as pydantic's lax JSON mode reads it (lax.to_int), within the bounds."""
    number: dict[str, Any] = {"type": "integer"}  # JSON Schema's integer: 14580.0 is one, as pydantic reads it
    if minimum is not None and maximum is not None:
        number.update(minimum=minimum, maximum=maximum)
        pattern = lax.int_text_pattern(range_pattern(minimum, maximum))
    else:
        pattern = lax.INT_TEXT_PATTERN
    branches: list[dict[str, Any]] = [number, {"title": "an integer written as a string", "type": "string",
                                               "pattern": pattern}]
    for flag in (False, True):  # JSON false/true: pydantic reads them as 0/1
        if minimum is None or minimum <= int(flag) <= (maximum if maximum is not None else 1):
            branches.append({"title": f"{str(flag).lower()} (read as {int(flag)})", "const": flag})
    return {"anyOf": branches}


LAX_PORT = lax_int_schema(1, 65535)
ROLES = ("prefill", "decode")
KV_ROLES = ("kv_producer", "kv_consumer", "kv_both")
# KVTransferConfig's fields in any release (vllm/connectors/kvconfig.py has them per release; the `schema` rule checks
# a host's keys against its vllm_version, the editor schema accepts every release's).
KV_TRANSFER_FIELDS = (
    "kv_connector",
    "engine_id",
    "kv_buffer_device",
    "kv_role",
    "kv_port",
    "kv_connector_extra_config",
    "kv_connector_module_path",
    "enable_permute_local_kv",
    "kv_load_failure_policy",
    "kv_buffer_size",
    "kv_rank",
    "kv_parallel_size",
    "kv_ip",
)
_OLD = " (vLLM 0.8.5 - 0.31.0; removed in 0.32.0, which rejects it)"

KV_TRANSFER_CONFIG: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kv_connector": {"type": ["string", "null"], "description": "Connector class name, e.g. NixlConnector, "
                         "MoRIIOConnector, MooncakeConnector, LMCacheConnectorV1."},
        "engine_id": {"type": ["string", "null"], "description": "Engine id for KV transfers; must be unique across "
                      "instances (vLLM 0.9.0+)."},
        "kv_buffer_device": {"type": "string", "description": "Device of the KV buffer: cuda, cpu or xpu.",
                             "default": "cuda"},
        "kv_role": {"anyOf": [{"enum": list(KV_ROLES)}, {"type": "null"}],
                    "description": "Whether this instance produces, consumes KV cache, or both: kv_producer "
                    "(prefill), kv_consumer (decode) or kv_both."},
        "kv_port": {**LAX_PORT, "description": "The KV connector port (P2pNccl binds kv_port + rank).", "default": 14579},
        "kv_connector_extra_config": {"type": "object", "description": "Connector-specific settings (the keys "
                                      "depend on kv_connector)."},
        "kv_connector_module_path": {"type": ["string", "null"], "description": "Python module to load an "
                                     "out-of-tree connector from (vLLM 0.9.0+)."},
        "enable_permute_local_kv": {**lax.bool_schema(), "description": "Experimental: HND to NHD KV transfer "
                                    "(vLLM 0.11.1+).",
                                    "default": False},
        "kv_load_failure_policy": {"enum": ["recompute", "fail"], "description": "What a failed KV load does: "
                                   "recompute the prefill, or fail the request (vLLM 0.13.0+; default recompute "
                                   "before 0.17.0).", "default": "fail"},
        "kv_buffer_size": {**lax.float_schema(), "description": "KV buffer size in bytes" + _OLD + ".", "default": 1e9},
        "kv_rank": {"anyOf": [lax_int_schema(), {"type": "null"}], "description": "Rank of this instance in the KV transfer" + _OLD
                    + "."},
        "kv_parallel_size": {**lax_int_schema(), "description": "Number of instances in the KV transfer" + _OLD + ".",
                             "default": 1},
        "kv_ip": {"type": "string", "description": "IP of the KV transfer master" + _OLD + ".",
                  "default": "127.0.0.1"},
    },
    "additionalProperties": False,
}

VARIABLES: tuple[Var, ...] = (
    Var("pd_deployment", {"type": "string", "minLength": 1}, "Which P/D deployment this instance belongs to (required)."),
    Var("pd_role", {"enum": list(ROLES)}, "Side of the deployment: prefill or decode."),
    Var("model", {"type": "string", "minLength": 1}, "The exact --model string."),
    Var("revision", {"type": "string", "minLength": 1},
        "--revision: the model's branch, tag or commit; selects the Hugging Face cache snapshot whose config.json "
        "gives the model's facts.", "main"),
    Var("version", {"title": "a release like 0.32.0", "type": "string", "pattern": VERSION_PATTERN},
        "vLLM release, quoted (0.32.0, v0.32.0, 0.32, 0.32.0.post1, 0.32.0+cpu, 0.32.0rc1); selects the rules of "
        "that release (`pdlint versions` lists them).", "newest known"),
    Var("tensor_parallel_size", int_schema(1, MAX_SIZE), "--tensor-parallel-size.", 1),
    Var("pipeline_parallel_size", int_schema(1, MAX_SIZE), "--pipeline-parallel-size.", 1),
    Var("data_parallel_size", int_schema(1, MAX_SIZE), "--data-parallel-size.", 1),
    Var("data_parallel_size_local", int_schema(0, MAX_SIZE), "--data-parallel-size-local: DP ranks run on this host.", "data_parallel_size"),
    Var("data_parallel_start_rank", int_schema(0, MAX_SIZE - 1), "--data-parallel-start-rank: first DP rank on this host.", 0),
    Var("nnodes", int_schema(1, MAX_SIZE), "--nnodes: hosts one engine's TP x PP spans.", 1),
    Var("node_rank", int_schema(0, MAX_SIZE - 1), "--node-rank of this host within the engine.", 0),
    Var("instance_id", {"type": "string", "minLength": 1}, "Hosts sharing an id in a deployment are one (multi-node) engine.", "host name"),
    Var("node", {"type": "string", "minLength": 1}, "Physical machine the host runs on: GPUs are counted per node.", "host name"),
    Var("port", {"anyOf": [PORT, {"type": "null"}]}, "API server port (--port); null for a headless engine.", 8000),
    Var("block_size", int_schema(1, MAX_SIZE), "--block-size (KV cache block, tokens).", None),
    Var("dtype", {"enum": ["auto", "half", "float16", "bfloat16", "float", "float32"]}, "--dtype.", "auto"),
    Var("kv_cache_dtype", {"type": "string", "minLength": 1}, "--kv-cache-dtype.", "auto"),
    Var("disable_hybrid_kv_cache_manager", {"type": ["boolean", "null"]}, "--disable-hybrid-kv-cache-manager (NIXL hashes it).", None),
    Var("kv_transfer_config", {"anyOf": [KV_TRANSFER_CONFIG, {"type": "string"}]}, "--kv-transfer-config, as a mapping or its JSON string."),
    Var("launcher", {"enum": ["vllm", "dynamo"]},
        "What starts the engine: vllm (`vllm serve`) or dynamo (`python -m dynamo.vllm`, which turns the hybrid KV "
        "cache manager off for a PdConnector whose children lack it); `python -m dynamo.vllm` in vllm_args sets it.",
        "vllm"),
    Var("args", {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": ["string", "integer", "number", "boolean"]}},
                           {"type": "null"}]},
        "The command line after `vllm serve` (or `vllm serve ...`, `python -m vllm.entrypoints.openai.api_server ...`), "
        "as one string split as a shell splits it or a list of words; read as the host's release parses it, each "
        "argument it sets standing for its vllm_<name> variable, at the flag's line and column.",
        expect="a command line: a string or a list of strings"),
    Var("env", {"type": "object", "additionalProperties": {"type": ["string", "integer", "number", "boolean"]}}, "Environment of the vLLM process."),
    Var("model_num_attention_heads", int_schema(1, MAX_SIZE), "Model fact H; default from pdlint's model table."),
    Var("model_num_kv_heads", int_schema(1, MAX_SIZE), "Model fact K (num_key_value_heads); default from pdlint's model table."),
    Var("model_is_mla", {"type": "boolean"}, "Model uses MLA (latent KV, replicated across TP)."),
    Var("model_has_ssm", {"type": "boolean"}, "Model has SSM / linear-attention layers (hybrid)."),
    Var("model_sliding_window", {"anyOf": [int_schema(1, 2**31 - 1), {"type": "null"}]}, "Sliding-window size, or null."),
    Var("host_gpu_count", int_schema(0, MAX_SIZE), "GPUs on the node.", None, in_instances=False),
    Var("host_gpu_memory_gib", {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SIZE},
                                          {"type": "string", "pattern": NUMBER_STRING}]},
        "Memory of each GPU on the node in GiB, as the runtime reports it (torch.cuda.mem_get_info's total); "
        "default from vllm_host_gpu_type.", None, in_instances=False, expect="a number of GiB above 0"),
    Var("host_gpu_type", {"type": "string", "minLength": 1},
        "The node's GPU (H100-SXM, A100-80GB, MI300X, ... or the name the runtime reports, `NVIDIA H100 80GB "
        "HBM3`; docs/gpus.md lists them); fills vllm_host_gpu_memory_gib when that is unset.", None,
        in_instances=False),
)

HOST_ONLY = (
    Var("instances", {"type": "array"}, "Several engines on one host; items use the names above without the vllm_ prefix."),
)
SKIP = Var("pdlint_skip", {"type": "array", "items": {"type": "string"}}, "Rule ids to suppress for this host or group.")

BY_NAME = {v.name: v for v in VARIABLES}
INT_FIELDS = frozenset((
    "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "data_parallel_size_local",
    "data_parallel_start_rank", "nnodes", "node_rank", "port", "block_size", "model_num_attention_heads",
    "model_num_kv_heads", "model_sliding_window", "host_gpu_count",
))


def int_bounds(schema: Any) -> tuple[int, int | None] | None:
    """(minimum, maximum) of the integer branch of a schema, or None when it has none."""
    if isinstance(schema, dict):
        if schema.get("type") == "integer":
            return int(schema.get("minimum", 0)), schema.get("maximum")
        for branch in schema.get("anyOf", ()):
            found = int_bounds(branch)
            if found is not None:
                return found
    return None


def host_var(name: str) -> str:
    """The inventory name of a contract variable."""
    return name if name.startswith("pdlint_") else "vllm_" + name

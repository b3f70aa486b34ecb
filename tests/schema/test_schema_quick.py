"""schema_quick.surely_valid never vouches for a value jsonschema rejects, and does vouch for ordinary values."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from pdlint.schema import check as schema
from pdlint.schema.quick import surely_valid

DOC = schema.generate()
VALIDATOR = jsonschema.validators.validator_for(DOC)(DOC)
NAMES = sorted(DOC["properties"])
KEYS = ["kv_connector", "kv_role", "kv_port", "engine_id", "kv_rank", "http_port", "read_mode", "role", "port",
        "tensor_parallel_size", "CUDA_VISIBLE_DEVICES", "pd_role"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=False), st.sampled_from([
    "", " 8000 ", "8000", "abc", "{{ x }}", "{% if %}", "kv_producer", "kv_consumer", "kv_both", "prefill", "decode",
    "NixlConnector", "MoRIIOConnector", "bfloat16", "auto", "fp8", "0,1", "0.32.0", "true", "1", 2.0, 1.5]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
                      max_leaves=8)


def _near(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values shaped by the schema (types, enums, bounds, patterns, keys), valid or just off."""
    if "$ref" in schema:
        return _near(DOC["definitions"][schema["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in schema:
        return st.one_of([_near(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema.get("type", ["string", "integer", "null"])
    options = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind == "string":
            options.append(st.from_regex(schema["pattern"]) if "pattern" in schema else st.text(max_size=3))
        elif kind in ("integer", "number"):
            low, high = schema.get("minimum", -2), schema.get("maximum", 70000)
            options.append(st.integers(low - 1, high + 1) | st.floats(low - 1, high + 1))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "null":
            options.append(st.none())
        elif kind == "array":
            options.append(st.lists(_near(schema.get("items", {"type": "string"})), max_size=3))
        elif kind == "object":
            props = schema.get("properties", {})
            extra = schema.get("additionalProperties", True)
            fixed = st.fixed_dictionaries({}, optional={k: _near(v) for k, v in props.items()})
            if isinstance(extra, dict):
                fixed = st.dictionaries(st.sampled_from(KEYS), _near(extra), max_size=3)
            options.append(fixed)
    return st.one_of(options)


def _valid_values(name: str) -> st.SearchStrategy[Any]:
    return _near(DOC["properties"][name])


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(NAMES), VALUES)
def test_surely_valid_implies_jsonschema_finds_nothing(name: str, value: Any) -> None:
    if surely_valid(DOC["properties"][name], value, DOC):
        assert list(VALIDATOR.iter_errors({name: value})) == []


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(NAMES).flatmap(lambda n: st.tuples(st.just(n), _valid_values(n))))
def test_surely_valid_on_schema_shaped_values(case: tuple[str, Any]) -> None:
    name, value = case
    if surely_valid(DOC["properties"][name], value, DOC):
        assert list(VALIDATOR.iter_errors({name: value})) == []


def test_ordinary_values_skip_jsonschema(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from generate import generate

    generate(24, tmp_path / "inv")
    code = ("import sys; from pdlint import cli; rc = cli.main([sys.argv[1]]); "
            "print(rc, 'jsonschema' in sys.modules, 'ansible' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "inv")], capture_output=True, text=True, check=False)
    assert out.stdout.split()[-3:] == ["0", "False", "False"], out.stdout + out.stderr


def test_required_is_understood() -> None:
    """MoRIIO's kv_connector_extra_config requires http_port (the schema's one `required` outside an `if`)."""
    moriio = {"kv_connector": "MoRIIOConnector", "kv_role": "kv_producer",
              "kv_connector_extra_config": {"http_port": 8000}}
    assert surely_valid(DOC["properties"]["vllm_kv_transfer_config"], moriio, DOC)
    missing = {**moriio, "kv_connector_extra_config": {}}
    assert not surely_valid(DOC["properties"]["vllm_kv_transfer_config"], missing, DOC)
    assert list(VALIDATOR.iter_errors({"vllm_kv_transfer_config": missing}))

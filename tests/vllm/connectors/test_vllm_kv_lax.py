"""--kv-transfer-config values as pydantic reads them, release by release: pdlint's lax.py and schema against pydantic.

Each release's KVTransferConfig field annotations are lifted from its source and handed to pydantic's own
TypeAdapter(...).validate_json (what arg_utils.parse_dataclass runs, lax mode); pdlint's conversion, its CLI
verdict and the editor JSON Schema must agree with it.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Literal, Optional, Union

import jsonschema
import pytest
from vllm_source import roots

from pdlint import lax
from pdlint.contract import KV_TRANSFER_CONFIG
from pdlint.vllm.connectors import kvconfig
from pdlint.vllm.releases import KNOWN, R, Release

pytestmark = pytest.mark.releases  # slow tier: every vLLM release's own code

pydantic = pytest.importorskip("pydantic", reason="pip install -e '.[test]' brings pydantic")
ROOTS = roots(KNOWN)
VALUES: tuple[Any, ...] = (
    14580, 14580.0, 14580.5, "14580", " 14580 ", "+14580", "1_4580", "14580.0", "14580.", "1e3", "0x10", "_1",
    "1__0", "", "abc", True, False, 0, 1, -1, 70000, "70000", 1e9, "1e9", "8e9", "1E9", ".5", "5.", "inf", "-Infinity",
    "nan", "1_0.5", "yes", "no", "on", "OFF", "t", "F", "y", "n", "1", "0", " true ", "true", "True", "maybe", 1.0, 0.0,
    2, None, [], {}, "1.5", 1e20, "0__1",
)


def _annotations(root: Path) -> dict[str, str]:
    for rel in ("vllm/config/kv_transfer.py", "vllm/config/__init__.py", "vllm/config.py"):
        path = root / rel
        if path.exists():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KVTransferConfig"]
            if found:
                return {n.target.id: ast.unparse(n.annotation) for n in found[0].body
                        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    raise AssertionError(f"{root}: no KVTransferConfig")


_TYPES = {"Optional": Optional, "Union": Union, "Literal": Literal, "Any": Any,
          "KVRole": Literal["kv_producer", "kv_consumer", "kv_both"]}


def _pydantic(annotation: str, value: Any) -> tuple[bool, Any]:
    adapter = pydantic.TypeAdapter(eval(annotation, dict(_TYPES)))  # noqa: S307 - vLLM's own annotation text
    try:
        return True, adapter.validate_json(json.dumps(value))
    except pydantic.ValidationError:
        return False, None


_KINDS = {"int": {"int", "Optional[int]", "int | None"}, "float": {"float"}, "bool": {"bool"}}


@pytest.mark.parametrize("release", KNOWN, ids=str)
def test_number_fields_are_the_releases(release: Release) -> None:
    fields = _annotations(ROOTS[release])
    numbers = kvconfig.NUMBER_FIELDS.at(release)
    assert set(numbers) == {k for k, a in fields.items() if a.replace("Optional[int]", "int").split(" |")[0]
                            in ("int", "float", "bool")}
    for key, kind in numbers.items():
        assert fields[key] in _KINDS[kind], (release, key, fields[key])


@pytest.mark.parametrize("release", [r for r in KNOWN if kvconfig.PARSE.at(r) == "lax"], ids=str)
def test_conversion_is_pydantics(release: Release) -> None:
    fields = _annotations(ROOTS[release])
    for key in kvconfig.NUMBER_FIELDS.at(release):
        for value in VALUES:
            if value is None:
                continue  # an unset field: pdlint leaves it to the default, as vLLM does
            ok, got = _pydantic(fields[key], value)
            if key == "kv_port" and ok and not 1 <= got <= 65535:
                ok = False  # pydantic reads it, no socket binds it: left as written for the schema to report
            converted, notes = kvconfig.converted({key: value}, release)
            assert not notes
            mine = converted[key]
            if ok:
                assert type(mine) is type(got) and (mine == got or mine != mine and got != got), (release, key, value)
            else:
                assert mine is value, (release, key, value, mine)


def test_release_090_converts_nothing_and_says_so() -> None:
    release = next(r for r in KNOWN if kvconfig.PARSE.at(r) == "as-written")
    _, notes = kvconfig.converted({"kv_port": "14580", "kv_buffer_size": "1e9"}, release)
    assert {k for k, _ in notes} == {"kv_port", "kv_buffer_size"}
    _, notes = kvconfig.converted({"kv_port": 14580, "kv_buffer_size": 1e9}, release)
    assert not notes


@pytest.mark.parametrize("key", ["kv_port", "kv_buffer_size", "enable_permute_local_kv", "kv_rank", "kv_parallel_size",
                                 "kv_connector", "engine_id", "kv_ip"])
def test_editor_schema_accepts_what_pydantic_does(key: str) -> None:
    """The JSON Schema editors see: valid exactly when pydantic converts the value (and, for kv_port, a port)."""
    annotation = _annotations(ROOTS[KNOWN[-1] if key in kvconfig.fields(KNOWN[-1]) else R("0.31.0")])[key]
    validator = jsonschema.Draft7Validator({k: v for k, v in KV_TRANSFER_CONFIG["properties"][key].items()
                                            if k != "default"})
    for value in VALUES:
        ok, got = _pydantic(annotation, value)
        if key == "kv_port" and ok:
            ok = 1 <= got <= 65535
        if key == "kv_buffer_size" and value is None:
            continue
        if key in ("kv_rank", "kv_parallel_size") and value == 1e20:
            continue  # beyond int64: JSON Schema cannot bound these unbounded fields without an odd message (gap)
        assert validator.is_valid(value) is ok, (key, value)


def test_pydantic_examples_pass_the_cli(lint) -> None:
    """kv_port 14580.0, kv_buffer_size "1e9" and "8e9" (vLLM's own P2pNccl example) are what vLLM accepts."""
    found = lint(json.dumps({"all": {"vars": {"vllm_pd_deployment": "d", "vllm_version": "0.20.0"}, "hosts": {
        "p1": {"vllm_pd_role": "prefill", "vllm_kv_transfer_config": {
            "kv_connector": "P2pNcclConnector", "kv_role": "kv_producer", "kv_port": 14580.0, "kv_buffer_size": "1e9",
            "enable_permute_local_kv": "yes"}},
        "d1": {"vllm_pd_role": "decode", "vllm_kv_transfer_config": json.dumps({
            "kv_connector": "P2pNcclConnector", "kv_role": "kv_consumer", "kv_port": "14580", "kv_buffer_size": "8e9"})},
    }}}))
    assert not [f for f in found if f.rule == "schema"], found


@pytest.mark.parametrize(("field", "value"), [("kv_port", 14580.5), ("kv_port", "14580.5"), ("kv_port", 70000),
                                              ("kv_buffer_size", "1e9x"), ("enable_permute_local_kv", "maybe")])
def test_values_pydantic_rejects_are_schema_errors(lint, field: str, value: Any) -> None:
    found = lint(json.dumps({"all": {"vars": {"vllm_pd_deployment": "d", "vllm_version": "0.20.0"}, "hosts": {
        "p1": {"vllm_pd_role": "prefill", "vllm_kv_transfer_config": {
            "kv_connector": "P2pNcclConnector", "kv_role": "kv_producer", field: value}}}}}))
    assert [f for f in found if f.rule == "schema" and field in f.message], found


def test_lax_int_pattern_bounds() -> None:
    import re

    from pdlint.contract import range_pattern
    pattern = re.compile(lax.int_text_pattern(range_pattern(1, 65535)))
    assert all(pattern.search(t) for t in ("1", "65535", "+1_000", "00080", "80.00"))
    assert not any(pattern.search(t) for t in ("0", "65536", "-1", "1__0", "_1", "1_", "80."))

"""Fuzzing the whole CLI with generated and mutated inventories.

Whatever the input: no exception escapes (no "internal error"), the exit code is
0, 1 or 2, the JSON output parses, and the same input gives the same bytes.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import yaml
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint import cli
from pdlint.contract import VARIABLES

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)
NAMES = sorted({v.name for v in VARIABLES} | {"vllm_unknown", "pdlint_skip", "ansible_host"})
WORDS = ["prefill", "decode", "chat", "NixlConnector", "MoRIIOConnector", "MooncakeConnector", "kv_producer",
         "kv_consumer", "kv_both", "{{ tp }}", "{{ lookup('pipe', 'id') }}", "{% if x %}", "{{ undefined_var }}",
         "!!python/object/apply:os.system", "true", "0x10", "1e3", "8000", "-1", ""]
KEYS = ["kv_connector", "kv_role", "kv_connector_extra_config", "read_mode", "http_port", "handshake_port",
        "notify_port", "engine_id", "kv_buffer_device"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(WORDS),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=3),
                      max_leaves=8)
variables = st.dictionaries(st.sampled_from(NAMES), values, max_size=6)
names = st.text(alphabet="abcdp-_.é0123456789", min_size=1, max_size=6)


@st.composite
def yaml_inventory(draw: st.DrawFn) -> dict[str, str]:
    hosts = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    groups = draw(st.lists(names.filter(lambda n: n not in hosts), max_size=3, unique=True))
    tree: dict = {"all": {"vars": draw(variables), "hosts": {}, "children": {}}}
    for host in hosts:
        group = draw(st.sampled_from([None, *groups]))
        where = tree["all"] if group is None else tree["all"]["children"].setdefault(group, {"hosts": {}})
        where.setdefault("hosts", {})[host] = draw(variables)
    for group in groups:
        entry = tree["all"]["children"].setdefault(group, {})
        entry["vars"] = draw(variables)
        entry["ansible_group_priority"] = draw(st.integers(-3, 3))
    files = {"hosts.yml": yaml.safe_dump(tree, allow_unicode=True)}
    for name in draw(st.lists(st.sampled_from(["all", *groups]), max_size=2, unique=True)):
        files[f"group_vars/{name}.yml"] = yaml.safe_dump(draw(variables), allow_unicode=True)
    for name in draw(st.lists(st.sampled_from(hosts), max_size=2, unique=True)):
        files[f"host_vars/{name}.yml"] = yaml.safe_dump(draw(variables), allow_unicode=True)
    return files


@st.composite
def ini_inventory(draw: st.DrawFn) -> dict[str, str]:
    lines = []
    for group in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
        lines.append(f"[{group}]")
        for host in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
            pairs = draw(st.dictionaries(st.sampled_from(NAMES), st.sampled_from(WORDS) | st.text(max_size=8),
                                         max_size=3))
            lines.append(" ".join([host, *(f"{k}={v}" for k, v in pairs.items())]))
        lines.append(f"[{group}:vars]")
        lines.extend(f"{k}={v}" for k, v in draw(st.dictionaries(st.sampled_from(NAMES), st.sampled_from(WORDS),
                                                                   max_size=2)).items())
    return {"hosts": "\n".join(lines) + "\n"}


def lint_twice(files: dict[str, bytes | str], target: str) -> None:
    """Write the tree, run the CLI twice with JSON output, check the invariants."""
    base = Path(tempfile.mkdtemp(prefix="pdlint-fuzz-"))
    cwd = os.getcwd()
    try:
        for name, content in files.items():
            path = base / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        os.chdir(base)
        outputs = []
        for _ in range(2):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(["--format", "json", target])
            assert "internal error" not in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()
            assert code in (0, 1, 2), (code, err.getvalue())
            if out.getvalue():
                assert isinstance(json.loads(out.getvalue()), list)
            else:
                assert code == 2 and err.getvalue().startswith("pdlint: error:"), err.getvalue()
            outputs.append((code, out.getvalue()))
        assert outputs[0] == outputs[1], "same input, different output"
    finally:
        os.chdir(cwd)
        shutil.rmtree(base, ignore_errors=True)


@SETTINGS
@given(yaml_inventory())
def test_generated_yaml_inventories(files: dict[str, str]) -> None:
    lint_twice(files, ".")


@SETTINGS
@given(ini_inventory())
def test_generated_ini_inventories(files: dict[str, str]) -> None:
    lint_twice(files, "hosts")


EXAMPLE = {str(p.relative_to(ROOT / "examples" / "inventory")): p.read_bytes()
           for p in sorted((ROOT / "examples" / "inventory").rglob("*")) if p.is_file()}


@SETTINGS
@given(st.sampled_from(sorted(EXAMPLE)), st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["delete", "insert", "replace"]),
                                                           st.binary(min_size=1, max_size=3)), min_size=1, max_size=4))
def test_mutated_example(name: str, edits: list[tuple[int, str, bytes]]) -> None:
    data = bytearray(EXAMPLE[name])
    for position, edit, chunk in edits:
        at = position % (len(data) + 1)
        if edit == "delete":
            del data[at:at + len(chunk)]
        elif edit == "insert":
            data[at:at] = chunk
        else:
            data[at:at + len(chunk)] = chunk
    lint_twice({**EXAMPLE, name: bytes(data)}, ".")

"""The one-pass scan of a vars file (load/fast/variables/vars_events.py) against what it replaces: guard.scan_yaml for the scan, and
composing the file + fast_values (keyed_items, from_node, check_tags) for the variables.

Whenever the pass builds variables they are those, value for value (types included) and origin for origin (in
the same order); whenever composing the file would not give variables (Unsupported, an error, not one mapping)
the pass builds none, so the fast loader composes the file and meets the same case."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdlint.load import errors, preflight
from pdlint.load.fast import files
from pdlint.load.fast import loader as fast
from pdlint.load.fast.variables import vars_dirs
from pdlint.load.fast.variables import vars_events as events
from pdlint.load.fast.variables.values import Unsupported
from pdlint.load.preflight import guard

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def composed(text: str) -> Any:
    """What vars_dirs.VarsFiles makes of a YAML vars file by composing it, or why it makes nothing."""
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return "error"
    if len(docs) != 1 or not isinstance(docs[0], yaml.MappingNode):
        return "not one mapping"
    try:
        return vars_dirs.VarsFiles._mapping(docs[0], "group_vars/g.yml")
    except Unsupported:
        return "unsupported"
    except Exception as exc:  # noqa: BLE001 - e.g. `!!int abc` in a pdlint variable: the pass must not build it
        return f"raises {type(exc).__name__}"


def exact(variables: dict[str, Any]) -> list[Any]:
    """Variables compared with types (1, 1.0 and True differ) and origins in order."""
    return [(name, repr(value), list(origins.items())) for name, (value, origins) in variables.items()]


def one_pass(text: str, limits: guard.Limits | None = None) -> tuple[guard.Scan, Any]:
    return events.scan_vars(text, "group_vars/g.yml", limits or guard.Limits(), "group_vars/g.yml")


def assert_same(text: str) -> Any:
    scan, built = one_pass(text)
    assert scan == guard.scan_yaml(text, "group_vars/g.yml", guard.Limits())
    expected = composed(text)
    if built is None:
        return expected
    assert isinstance(expected, dict), (text, expected)
    assert exact(built) == exact(expected), text
    return built


# ---- generated YAML ----------------------------------------------------------------------------------------

TOP_KEYS = ["vllm_a", "vllm_b", "pdlint_c", "vllm_a", "other", "ansible_host", "1", "true", "'vllm_q'", "~"]
KEYS = ["a", "b", "a", "1", "1.0", "true", "'1'", "null", "~", "0x1", '"a b"', "yes", "-0.0", "0.0", "!!str 1",
        "!!int '7'", "! 8", ".nan", "''"]
SCALARS = ["1", "-2", "0x1F", "0o17", "017", "1_000", "1:30", "2.5", "1e3", "6.02e+23", ".inf", "-.Inf", ".nan",
           "true", "False", "yes", "No", "on", "OFF", "null", "~", "Null", "'1'", '"true"', "'{{ x }}'", "abc",
           "vllm_port", "gpu01.fleet", "0.32.0", "'5600'", '"a\\tb"', "!!str 12", "!!int 7", "!!int '0x1F'",
           "!!float 1", "!!bool yes", "!!null ''", "! 12", "! abc", "''", "+12", "0b101", "190:20:30.15", "y", "n"]
WILD_SCALARS = ["2024-01-01", "<<", "=", "!vault x", "!unsafe y", "!foo z", "!!binary aGk=", "!!int abc",
                "!!timestamp 2001-12-14", "!!map x", "!!bool maybe"]
COLLECTION_TAGS = ["!!map", "!!seq", "!", "!foo"]


class _Doc:
    def __init__(self, draw: st.DrawFn, wild: bool) -> None:
        self.draw, self.wild = draw, wild
        self.closed: list[str] = []  # anchors an alias may name
        self.open: list[str] = []
        self.count = 0

    def chance(self, n: int) -> bool:
        return self.draw(st.integers(0, n - 1)) == 0

    def anchor(self) -> str:
        if not self.chance(4):
            return ""
        if self.wild and self.closed and self.chance(10):
            return f"&{self.draw(st.sampled_from(self.closed))} "  # a repeated anchor
        self.count += 1
        return f"&a{self.count} "

    def alias(self) -> str | None:
        names = self.closed + (self.open if self.wild else [])
        if self.wild and self.chance(30):
            return "*nowhere"
        if names and self.chance(5):
            return "*" + self.draw(st.sampled_from(names))
        return None

    def scalar(self, pool: list[str]) -> str:
        pool = pool + WILD_SCALARS if self.wild and self.chance(6) else pool
        text = self.draw(st.sampled_from(pool))
        anchor = self.anchor()
        if anchor:
            self.closed.append(anchor[1:-1])
        return anchor + text

    def key(self, top: bool = False) -> str:
        if self.wild and self.chance(20):
            return "<<"
        if self.wild and not top and self.chance(15):
            return "[1, 2]" if self.chance(2) else "{k : 1}"
        alias = self.alias()
        if alias is not None:
            return alias
        return self.scalar(TOP_KEYS if top else KEYS)

    def node(self, depth: int) -> str:
        alias = self.alias()
        if alias is not None:
            return alias
        kind = self.draw(st.integers(0, 5)) if depth > 0 else 5
        if kind >= 3:
            return self.scalar(SCALARS)
        anchor = self.anchor()
        name = anchor[1:-1] if anchor else None
        if name:
            self.open.append(name)
        tag = self.draw(st.sampled_from(COLLECTION_TAGS)) + " " if self.wild and self.chance(10) else ""
        if kind == 0:
            items = [self.node(depth - 1) for _ in range(self.draw(st.integers(0, 4)))]
            text = "[" + ", ".join(items) + "]"
        else:
            pairs = [f"{self.key()} : {self.node(depth - 1)}" for _ in range(self.draw(st.integers(0, 4)))]
            text = "{" + ", ".join(pairs) + "}"
        if name:
            self.open.remove(name)
            self.closed.append(name)
        return anchor + tag + text

    def block(self, indent: str) -> str:
        """A mapping written in block style (its values in flow style)."""
        lines = []
        for _ in range(self.draw(st.integers(1, 3))):
            lines.append(f"{indent}{self.key()}: {self.node(2)}")
        return "\n".join(lines)

    def document(self) -> str:
        lines = []
        root = self.wild and self.chance(10)
        if root:
            self.open.append("root")
            lines.append("--- &root")
        for _ in range(self.draw(st.integers(0 if self.wild else 1, 6))):
            key = self.key(top=True)
            style = self.draw(st.integers(0, 4))
            if style == 0:
                lines.append(f"{key} :")  # null
            elif style == 1:
                lines.append(f"{key} :\n{self.block('  ')}")
            else:
                lines.append(f"{key} : {self.node(3)}")
        if self.wild and self.chance(15):
            lines.append("---\nother: 1")
        return "\n".join(lines) + "\n"


@st.composite
def vars_files(draw: st.DrawFn, wild: bool) -> str:
    return _Doc(draw, wild).document()


@SETTINGS
@given(vars_files(wild=False))
def test_plain_files_are_built_as_composing_builds_them(text: str) -> None:
    """Without tags, merge keys or complex keys, the pass builds variables whenever composing gives them."""
    result = assert_same(text)
    assert isinstance(result, dict) or result == "unsupported", (text, result)


@SETTINGS
@given(vars_files(wild=True))
def test_any_file_is_built_alike_or_left_to_compose(text: str) -> None:
    assert_same(text)


# ---- the rules, one by one ---------------------------------------------------------------------------------

BUILT = [
    "vllm_a: 1\nvllm_b: {x: 1, y: [1, 2.5, true, null, '3', ~]}\nother: 3\n",
    "vllm_a: &a {x: 1}\nvllm_b: *a\n",  # an alias into another top-level value: a copy, with the anchor's origins
    "o: [&a {x: 1}, *a]\nvllm_c: *a\n",  # repeated within a value pdlint does not read: allowed there
    "vllm_a: {a: 1, a: null, b: {c: 1}, b: true}\nvllm_a: 3\n",  # repeated keys, nested and at the top
    "vllm_a: {1: a, true: b, 1.0: c, '1': d}\n",  # Python's dict equality decides what repeats
    "&s vllm_x: 1\nvllm_y: {*s : 2}\n*s : 5\n",  # aliases as keys
    "vllm_a: &s 12\nvllm_b: [*s, *s]\n",  # a scalar may repeat
    "o: !vault x\nvllm_a: 1\n",  # tolerated tags where pdlint does not read
    "o: {[1]: 2}\nvllm_a: 1\n",  # a complex key where pdlint does not read
    "&r {o: *r, vllm_a: 1}",  # a recursive alias there
    "o: {k: &x [1], k: 2}\nvllm_a: *x\n",  # the anchor's own value, though its key was repeated
    "vllm_a:\nvllm_b: true\nvllm_c: ''\nvllm_d: ~\n",  # null and booleans carry their key's origin
    "vllm_a: ! 12\nvllm_b: !!str 12\nvllm_c: !!int '0x1F'\nvllm_d: .nan\nvllm_e: 0o17\nvllm_f: 1_000\nvllm_g: 1:30\n",
    "{}",
    "vllm_a: [[[[{a: [1]}]]]]\n",
]
LEFT = [
    ("o: &a {x: 1}\nvllm_b: [*a, {y: *a}]\n", "unsupported"),  # a mapping twice within one variable
    ("vllm_b: [&a {x: 1}, *a]\n", "unsupported"),
    ("o: &x [1, &y {a: 1}]\nvllm_a: [*x, *y]\n", "unsupported"),  # y is inside x
    ("o: &a [1]\np: &b [*a, 2]\nvllm_x: [*b]\nvllm_y: [*b, *a]\n", "unsupported"),
    ("vllm_a: {k: &x [1], k: 2, j: *x}\n", "unsupported"),
    ("vllm_a: !vault x\n", "unsupported"),
    ("o: &m {!vault k: 1}\nvllm_a: *m\n", "unsupported"),
    ("o: {!foo k: 1}\nvllm_a: 1\n", "unsupported"),
    ("<<: {a: 1}\n", "unsupported"),
    ("o: {<<: {a: 1}}\n", "unsupported"),
    ("? [1]\n: 2\n", "unsupported"),
    ("vllm_a: 2024-01-01\n", "unsupported"),
    ("&r {vllm_a: *r}", "unsupported"),
    ("vllm_a: !!int abc\n", "unsupported"),  # ansible-core reports it (tests/rules/reported/test_rules_load.py)
    ("vllm_a: *u\n", "error"),
    ("a: &x 1\nb: &x 2\n", "error"),
    ("a: 1\n---\nb: 2\n", "not one mapping"),
    ("- 1\n", "not one mapping"),
    ("", "not one mapping"),
]


@pytest.mark.parametrize("text", BUILT)
def test_built(text: str) -> None:
    assert isinstance(assert_same(text), dict)


@pytest.mark.parametrize(("text", "why"), LEFT)
def test_left_to_compose(text: str, why: str) -> None:
    assert one_pass(text)[1] is None
    assert composed(text) == why


def test_an_alias_copies_the_value_it_names() -> None:
    built = one_pass("vllm_a: &a {x: [1]}\nvllm_b: *a\n")[1]
    assert built["vllm_a"][0] == built["vllm_b"][0] and built["vllm_a"][0]["x"] is not built["vllm_b"][0]["x"]
    assert built["vllm_b"][1][("x", 0)].line == 1  # where the anchored value is written


# ---- the limits: refused alike, before any value ------------------------------------------------------------

@pytest.mark.parametrize(("text", "limits"), [
    ("vllm_a: " + "[" * 30 + "]" * 30, guard.Limits(max_depth=20)),
    ("vllm_a: &a [1, 2, 3]\nvllm_b: [*a, *a, *a]\nvllm_c: [*b, *b]\n", guard.Limits(max_nodes=20)),
    ("a: &a [1, 2, 3]\nb: &b [*a, *a, *a]\nvllm_c: *b\n", guard.Limits(max_nodes=12)),
])
def test_refused_alike(text: str, limits: guard.Limits) -> None:
    with pytest.raises(guard.Refused) as old:
        guard.scan_yaml(text, "g.yml", limits)
    with pytest.raises(guard.Refused) as new:
        events.scan_vars(text, "g.yml", limits, "g.yml")
    assert new.value.finding == old.value.finding


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(vars_files(wild=True), st.integers(2, 6), st.integers(5, 60))
def test_small_limits_refuse_alike(text: str, depth: int, nodes: int) -> None:
    limits = guard.Limits(max_depth=depth, max_nodes=nodes)
    try:
        old: Any = guard.scan_yaml(text, "group_vars/g.yml", limits)
    except guard.Refused as exc:
        old = exc.finding
    try:
        new: Any = one_pass(text, limits)[0]
    except guard.Refused as exc:
        new = exc.finding
    assert new == old


def test_a_syntax_error_builds_nothing() -> None:
    scan, built = one_pass("vllm_a: 1\nvllm_b: [1\n")
    assert scan.syntax_error is not None and built is None


# ---- the fast loader: the same hosts with the pass's variables as by composing -------------------------------

@SETTINGS
@given(st.lists(vars_files(wild=False), min_size=1, max_size=3))
def test_fast_loader_alike_with_or_without_the_pass(texts: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = {"hosts.yml": "all:\n  children:\n    g:\n      hosts:\n        h1:\n        h2:\n"}
        for index, text in enumerate(texts):
            files[["group_vars/g.yml", "group_vars/all.yml", "host_vars/h1.yml"][index]] = text
        write_tree(Path(tmp), files)
        assert _hosts(tmp, drop=False) == _hosts(tmp, drop=True)


def _hosts(root: str, drop: bool) -> Any:
    checked = preflight.check([root])
    if drop:
        checked.values.clear()  # every vars file composed, as before the pass built variables
    try:
        hosts = fast.load([root], checked=checked)
    except (Unsupported, errors.LoadError) as exc:
        return type(exc).__name__, str(exc)
    return [(h.host, repr(h.values), sorted(h.origins.items(), key=repr)) for h in hosts]


def test_the_fast_loader_uses_the_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"hosts.yml": "all:\n  hosts:\n    h1:\n",
                          "host_vars/h1.yml": "vllm_port: 8000\nvllm_env: {A: '1'}\n",
                          "group_vars/all.json": '{"vllm_model": "m"}'})
    checked = preflight.check([str(tmp_path)])
    assert set(checked.values) == {str(tmp_path / "host_vars" / "h1.yml"), str(tmp_path / "group_vars" / "all.json")}
    host = fast.load([str(tmp_path)], checked=checked)[0]
    assert host.values == {"vllm_port": 8000, "vllm_env": {"A": "1"}, "vllm_model": "m"}
    assert str(host.origin("vllm_port")) == "host_vars/h1.yml:1:12"
    assert str(host.origin("vllm_model")) == "group_vars/all.json"  # JSON first: no line, as Ansible tags it


def test_aliases_in_a_value_never_read_are_not_copied() -> None:
    """900 aliases of a 1,000-item list (900,000 nodes, under the limit) in a variable pdlint does not read:
    checked for tags as the fast loader checks them, and never expanded."""
    import tracemalloc

    text = ("o: &a [" + ", ".join(["1"] * 1000) + "]\np: [" + ", ".join(["*a"] * 900) + "]\n"
            "q: &b {k: [*a]}\nvllm_x: *b\n")
    tracemalloc.start()
    try:
        built = assert_same(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert list(built) == ["vllm_x"] and len(built["vllm_x"][0]["k"][0]) == 1000
    assert peak < 20_000_000


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=' \t\n\r\x0c\ufeff{}[]"-.:,0123456789tfnNIaeulrsxy#', max_size=12))
def test_the_json_attempt_is_json_loads(text: str) -> None:
    """files.parse_json skips json.loads when the first character cannot start a JSON value: it must answer as
    json.loads does for every text (Ansible tries JSON before YAML)."""
    import json

    try:
        expected: tuple[bool, Any] = (True, json.loads(text))
    except ValueError:
        expected = (False, None)
    assert repr(files.parse_json(text)) == repr(expected)

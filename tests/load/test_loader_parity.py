"""Loader parity: the fast loader gives ansible-core's answer, or hands the load to it.

Generated inventories exercise each kind of input the fast loader once got
wrong: ansible.cfg settings that change an inventory, ansible_group_priority of
every YAML type, INI lines of every shape, Jinja comments, every way to write a
group key, vars files with several documents or a non-mapping value, and long
group chains. Each is compared on values, origins, findings (notes and
load-errors) and exit code with ansible-core's loader, and on values with
`ansible-inventory --list`.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pdlint.hostvars import is_relevant
from pdlint.load import select
from pdlint.load.errors import LoadError
from pdlint.load.fast import ansible_cfg as fast_config
from pdlint.load.fast import loader as fast
from pdlint.load.preflight import safety
from pdlint.load.reference import loader as reference

BIN = Path(sys.executable).parent
# One loader in a fresh process: ansible-core reads its configuration once per process, at import.
DUMP = """
import json, sys
from pdlint.load import select
from pdlint.load.errors import LoadError
loader, sources = sys.argv[1], sys.argv[2:]
notes, info = [], []
try:
    hosts = [[h.host, h.values, sorted(([list(p), o.file, o.line, o.column] for p, o in h.origins.items()), key=repr)]
             for h in select.load(sources, loader=loader, notes=notes, note=info.append)]
    error = None
except LoadError as exc:
    hosts, error = None, str(exc.finding)
except Exception as exc:  # ansible-core refusing its configuration: the CLI's exit 2
    if not type(exc).__module__.startswith("ansible."):
        raise
    hosts, error = None, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
import contextlib, io
from pdlint import cli
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    rc = cli.main(["--loader", loader, "--format", "json", *sources])
print(json.dumps(default=repr, obj={"hosts": hosts, "error": error, "notes": sorted(map(str, notes)), "routed": bool(info),
                  "cli": [rc, json.loads(out.getvalue() or "null")]}))
"""


def _cli(loader: str, sources: list[str]) -> list[Any]:
    from pdlint import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["--loader", loader, "--format", "json", *sources])
    assert "internal error" not in err.getvalue(), err.getvalue()
    return [rc, json.loads(out.getvalue() or "null")]


def _load(loader: str, sources: list[str]) -> dict[str, Any]:
    notes: list[Any] = []
    info: list[str] = []
    try:
        hosts: Any = [[h.host, h.values,  # origin paths mix names and list indexes: sorted by their text
                       sorted(([list(p), o.file, o.line, o.column] for p, o in h.origins.items()), key=repr)]
                      for h in select.load(sources, loader=loader, notes=notes, note=info.append)]
        error = None
    except LoadError as exc:
        hosts, error = None, str(exc.finding)
    return json.loads(json.dumps({"hosts": hosts, "error": error, "notes": sorted(map(str, notes)),
                                  "routed": bool(info), "cli": _cli(loader, sources)}, default=repr))


def _dump(loader: str, sources: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", DUMP, loader, *sources], capture_output=True, text=True,
                         env={**os.environ, **env}, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def ansible_inventory(sources: list[str], env: dict[str, str] | None = None) -> dict[str, dict[str, Any]] | None:
    """`ansible-inventory --list`'s variables of each host (pdlint's only), with pdlint's pinned settings;
    None when it fails to load the inventory."""
    pins = {**safety.SET_BY_PDLINT, **(env or {})}
    cmd = [str(BIN / "ansible-inventory"), "--list"] + [a for s in sources for a in ("-i", s)]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **pins}, check=False)
    if out.returncode != 0:
        return None
    listing = json.loads(out.stdout)
    return {h: {k: v for k, v in hv.items() if is_relevant(k)} for h, hv in listing["_meta"]["hostvars"].items()}


def _without_templates(loaded: dict[str, Any]) -> dict[str, Any]:
    """Hosts whose values hold no Jinja (ansible-inventory lists templates unrendered)."""
    return {h: values for h, values, _ in loaded["hosts"] if "{" not in json.dumps(values)}


def assert_parity(sources: list[str], env: dict[str, str] | None = None, *, inventory: bool = False) -> dict[str, Any]:
    """Both loaders agree on hosts, values, origins, notes and load-error; the CLI on findings and exit code
    (only in a fresh process when env sets a config). Returns the fast loader's result."""
    if env:
        got, expected = _dump("fast", sources, env), _dump("ansible", sources, env)
    else:
        got, expected = _load("fast", sources), _load("ansible", sources)
    keys = ("hosts", "error", "notes", "cli")
    assert {k: got.get(k) for k in keys} == {k: expected.get(k) for k in keys}
    if inventory:
        listed = ansible_inventory(sources, env)
        if expected["error"] is not None:
            assert listed is None
        else:
            assert listed is not None
            mine = _without_templates(got)
            assert {h: listed[h] for h in mine} == mine
    return got


@contextlib.contextmanager
def _tree(files: dict[str, str | bytes]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for name, content in files.items():
            path = base / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        cwd = os.getcwd()
        os.chdir(base)
        try:
            yield base
        finally:
            os.chdir(cwd)


# --- ansible.cfg -----------------------------------------------------------------------------------------------

CFG_OPTIONS = {  # (section, key): values tried, the defaults among them
    ("defaults", "force_valid_group_names"): ["always", "never", "ignore", "silently", "'always'", "bogus"],
    ("vars_host_group_vars", "stage"): ["all", "inventory", "task"],
    ("defaults", "hash_behaviour"): ["replace", "merge"],
    ("defaults", "precedence"): ["all_inventory, groups_inventory, all_plugins_inventory, all_plugins_play, "
                                 "groups_plugins_inventory, groups_plugins_play",
                                 "all_plugins_inventory, all_plugins_play, all_inventory, groups_inventory, "
                                 "groups_plugins_inventory, groups_plugins_play"],
    ("defaults", "yaml_valid_extensions"): [".yml, .yaml, .json", ".yml"],
    ("defaults", "run_vars_plugins"): ["demand", "start"],
    ("defaults", "inventory_ignore_patterns"): ["^hosts"],
    ("inventory", "ignore_patterns"): ["^extra"],
    ("inventory", "host_pattern_mismatch"): ["ignore"],
    ("inventory_plugin_yaml", "yaml_valid_extensions"): [".yml, .json"],
    ("defaults", "duplicate_dict_key"): ["warn", "ignore", "error"],
    ("defaults", "forks"): ["10"],
}
ENV_OPTIONS = {"ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": ["always", "never"], "ANSIBLE_VARS_PLUGIN_STAGE": ["inventory"]}
# Groups named with a dash, with group_vars for both spellings: ansible-core reads one or the other.
DASHED = {
    "hosts.yml": "pd-decode:\n  hosts: {d1: }\n  vars: {vllm_port: 1, vllm_model: inv}\nall:\n  children:\n"
                 "    pd-prefill: {hosts: {p1: {vllm_port: 2}}}\n",
    "hosts.ini": "[pd-decode]\nd1 vllm_model=inv\n[pd-decode:vars]\nvllm_port=1\n[pd:children]\npd_x\n[pd_x]\n",
    # ansible-core renames the section but not the child line: with renaming on, pd-decode is undefined
    "chain.ini": "[pd-decode]\nd1\n[pd:children]\npd-decode\n",
    "group_vars/pd-decode.yml": "vllm_model: dash\nvllm_dtype: x\nvllm_dtype: y\n",
    "group_vars/pd_decode.yml": "vllm_model: underscore\n",
    "group_vars/pd_prefill.yml": "vllm_model: p\n",
    "extra.yml": "all:\n  hosts: {e1: }\n",
}


@st.composite
def configs(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    chosen = draw(st.lists(st.sampled_from(sorted(CFG_OPTIONS)), max_size=3, unique=True))
    sections: dict[str, list[str]] = {}
    for section, key in chosen:
        value = draw(st.sampled_from(CFG_OPTIONS[(section, key)]))
        comment = draw(st.sampled_from(["", " ; a comment"]))
        sections.setdefault(section, []).append(f"{key} = {value}{comment}")
    if draw(st.booleans()):
        sections.setdefault("DEFAULT", []).append("force_valid_group_names = always")
        sections.setdefault("defaults", [])
    text = "".join(f"[{s}]\n" + "".join(line + "\n" for line in lines) for s, lines in sections.items())
    env = {k: draw(st.sampled_from(v)) for k, v in ENV_OPTIONS.items() if draw(st.integers(0, 4)) == 0}
    return text, env


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(), st.sampled_from(["hosts.yml", "hosts.ini", "chain.ini"]))
def test_ansible_cfg(config: tuple[str, dict[str, str]], source: str) -> None:
    text, env = config
    with _tree({**DASHED, "ansible.cfg": text}) as base:
        assert_parity([source], {**env, "ANSIBLE_CONFIG": str(base / "ansible.cfg")})


@pytest.mark.parametrize(("text", "env", "routed"), [
    ("[defaults]\nforce_valid_group_names = always\n", {}, False),
    ("[defaults]\nforce_valid_group_names = never\n", {}, False),
    ("[DEFAULT]\nforce_valid_group_names = silently\n[defaults]\n", {}, False),
    ("[defaults]\nforks = 10\nremote_user = ops\n[ssh_connection]\npipelining = True\n", {}, False),
    ("[defaults]\n", {"ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "always"}, False),
    ("[vars_host_group_vars]\nstage = inventory\n", {}, True),
    ("[defaults]\n", {"ANSIBLE_VARS_PLUGIN_STAGE": "task"}, True),
    ("[defaults]\nhash_behaviour = merge\n", {}, True),
    ("[inventory]\nignore_patterns = ^extra\n", {}, True),
    ("[inventory_plugin_yaml]\nunknown_option = 1\n", {}, True),
    ("[defaults]\nforce_valid_group_names = always\nforce_valid_group_names = never\n", {}, True),  # ansible fails
])
def test_ansible_cfg_cases(text: str, env: dict[str, str], routed: bool) -> None:
    """Settings the fast loader implements (read with ansible-core's sections, [DEFAULT], comments, env) stay
    on the fast path; every other inventory-changing setting is routed to ansible-core."""
    with _tree({**DASHED, "ansible.cfg": text}) as base:
        env = {**env, "ANSIBLE_CONFIG": str(base / "ansible.cfg")}
        for source in ("hosts.yml", "hosts.ini"):
            got = assert_parity([source], env, inventory=not routed)
            assert got["routed"] == routed, source


def test_config_table_matches_ansible_core() -> None:
    """Each setting's ini entries, environment variables and default are ansible-core's own."""
    import importlib

    import yaml
    from ansible.config.manager import ConfigManager

    manager = ConfigManager()
    for setting in fast_config.SETTINGS:
        if ":" in setting.name:
            kind, plugin, option = setting.name.split(":")
            module = importlib.import_module(f"ansible.plugins.{kind}.{plugin}")
            definition = yaml.safe_load(module.DOCUMENTATION)["options"][option]
        else:
            definition = manager.get_configuration_definitions()[setting.name]
        ini = tuple((e.get("section", "defaults"), e["key"]) for e in definition.get("ini", []))
        env = tuple(e["name"] for e in definition.get("env", []))
        assert (ini, env) == (setting.ini, setting.env), setting.name
        if setting.default is not fast_config.UNSET:
            assert definition.get("default") == setting.default, setting.name


# --- ansible_group_priority ------------------------------------------------------------------------------------

PRIORITIES_YAML = ["null", "[]", "[1]", "{a: 1}", "true", "false", "3", "-2", "1.5", ".inf", ".nan", "'7'", "' 4 '",
                   "'1_000'", "'0x1F'", "abc", "''", "0o10", "!!str 5"]
PRIORITIES_INI = ["None", "[1]", "{}", "True", "3", "1.5", "'7'", "abc", "1e3", "0x10", "(1,)", "b'2'", "-1"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PRIORITIES_YAML), st.sampled_from(PRIORITIES_YAML), st.booleans())
def test_priority_yaml(first: str, second: str, host_level: bool) -> None:
    owner = "hosts: {h: {ansible_group_priority: %s}}" if host_level else "vars: {ansible_group_priority: %s}"
    text = (f"a:\n  {owner % first}\n  hosts: {{h: }}\n"
            f"b:\n  vars: {{ansible_group_priority: {second}}}\n  hosts: {{h: }}\n")
    with _tree({"hosts.yml": text, "group_vars/a.yml": "vllm_port: 1\n", "group_vars/b.yml": "vllm_port: 2\n"}):
        assert_parity(["hosts.yml"])


@pytest.mark.parametrize("value", PRIORITIES_INI)
def test_priority_ini(value: str) -> None:
    text = f"[a]\nh\n[b]\nh\n[a:vars]\nansible_group_priority={value}\n"
    with _tree({"hosts.ini": text, "group_vars/a.yml": "vllm_port: 1\n", "group_vars/b.yml": "vllm_port: 2\n"}):
        assert_parity(["hosts.ini"], inventory=True)


# --- INI lines of every shape ----------------------------------------------------------------------------------

INI_LINES = [
    "h1", "h2 vllm_port=1", "h3 vllm_model='a b' # comment", "h[1:3]", "h[a:c]x", "h[3:1]", "h[01:03:2]",
    "h[c:a]", "h[1:2][a:b]", "'quoted host' vllm_port=2", "h4:22", "h5:", "---", "...", "h6 novalue",
    "h7 'unterminated", "# comment", "; comment", "  ", "[g]", "[g:vars]", "[g:children]", "[g:other]", "[ g ]",
    "[undefined:vars]", "vllm_dtype=bf16", "g", "undefined", "g extra", "h=x", "[g] # comment", "[g:vars]  ",
    "vllm_env={'A': '1'}", "vllm_x=[1, [2, [3]]]",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(INI_LINES), min_size=1, max_size=8), st.sampled_from(["hosts.ini", "hosts", "hosts.yml"]))
@example(["[g:vars]", "vllm_x=[1, [2, [3]]]"], "hosts.ini")  # origins under list indexes and names alike
def test_ini_lines(lines: list[str], name: str) -> None:
    """INI text in a .ini file, a file without extension, or a .yml file (the INI plugin reads it after YAML)."""
    text = "[g]\nh0\n" + "\n".join(lines) + "\n"
    with _tree({name: text, "group_vars/g.yml": "vllm_port: 9\n"}):
        assert_parity([name])


@pytest.mark.parametrize("name", ["hosts", "hosts.ini", "hosts.yml"])
def test_ini_non_utf8_comment(name: str) -> None:
    data = b"# caf\xe9 comment\n[g]\nh1 vllm_port=1\n; \xff\xfe\n"
    with _tree({name: data}):
        got = assert_parity([name], inventory=True)
        assert got["hosts"] and not got["routed"]
    with _tree({name: data + b"h2 vllm_model=\xe9\n"}):  # outside a comment: ansible-core refuses it too
        assert assert_parity([name])["error"]


@pytest.mark.parametrize("text", ["[pd]\nh1 vllm_port=1\n", "h1\nh2\n", "", "- a\n- b\n", "all:\n  hosts: [a]\n",
                                  "all:\n  hosts: {h: }\n---\nx: 1\n", "[pd\nh1\n"])
def test_yaml_named_file_holding_ini(text: str) -> None:
    with _tree({"hosts.yml": text}):
        assert_parity(["hosts.yml"], inventory=True)


# --- Jinja comments --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["'{# note #}8000'", "'80{# x #}00'", "'{#'", "'a {# b'", "'{{ 1 + 1 }}'"])
def test_jinja_comment(value: str) -> None:
    with _tree({"hosts.yml": f"all:\n  hosts:\n    h1:\n      vllm_port: {value}\n      vllm_model: m\n"}):
        assert_parity(["hosts.yml"])


# --- group keys ------------------------------------------------------------------------------------------------

GROUP_KEYS = {
    "top": "pd-top:\n  hosts: {h1: }\n",
    "quoted": "all:\n  children:\n    \"pd-q\": {hosts: {h2: }}\n    'pd-s': {hosts: {h3: }}\n",
    "flow": "all: {children: {x: {children: {pd-flow: {hosts: {h4: }}}}}}\n",
    "block": "all:\n  children:\n    pd-block:\n      hosts:\n        h5:\n",
    "json": json.dumps({"pd-json": {"hosts": {"h6": None}}}),
    "twice": "pd-twice: {hosts: {h7: }}\nall: {children: {pd-twice: {hosts: {h8: }}}}\n",
}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(sorted(GROUP_KEYS)), min_size=1, max_size=3, unique=True))
def test_group_key_forms(forms: list[str]) -> None:
    files = {f"inv/{i}-{form}.{'json' if form == 'json' else 'yml'}": GROUP_KEYS[form] for i, form in enumerate(forms)}
    with _tree(files):
        got = assert_parity(["inv"])
        assert got["notes"] and all("line=None" not in n for n in got["notes"] if "json" not in n)


# --- vars files ------------------------------------------------------------------------------------------------

VARS_FILES = ["vllm_port: 1\n", "vllm_port: 1\n---\nvllm_port: 2\n", "---\nvllm_port: 1\n...\n---\n", "- 1\n- 2\n",
              "[]\n", "'text'\n", "0\n", "null\n", "false\n", "''\n", "{}\n", "[1]", "5", "\"s\"", "{\"vllm_port\": 3}",
              "# nothing\n", "---\n", "vllm_port: 1\n--- \n"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VARS_FILES), st.sampled_from(["group_vars/g.yml", "host_vars/h1.yml", "group_vars/all.json",
                                                     "group_vars/unused.yml", "host_vars/h1/b.yml"]))
def test_vars_file_shapes(text: str, name: str) -> None:
    with _tree({"hosts.yml": "g:\n  hosts: {h1: , h2: }\n", name: text}):
        got = assert_parity(["hosts.yml"])
        if got["error"]:
            assert "file=''" not in got["error"] and "<unicode string>" not in got["error"]


# --- long chains -----------------------------------------------------------------------------------------------

def _ini_chain(n: int, reverse: bool) -> str:
    sections = [f"[g{i}:children]\ng{i + 1}\n" for i in range(n)]
    return "".join(reversed(sections) if reverse else sections) + f"[g{n}]\nh1\n[g{n}:vars]\nvllm_port=1\n"


def _yaml_chain(n: int) -> str:
    return "".join(f"g{i}: {{children: {{g{i + 1}: }}}}\n" for i in range(n)) + f"g{n}: {{hosts: {{h1: }}}}\n"


@pytest.mark.parametrize(("name", "text"), [
    ("hosts.ini", _ini_chain(400, False)), ("hosts.ini", _ini_chain(400, True)), ("hosts.yml", _yaml_chain(1500)),
    ("hosts.ini", "h" + "[1:1]" * 3000 + "\n"), ("hosts.ini", "h vllm_x=" + "[" * 3000 + "]" * 3000 + "\n"),
])
def test_long_chains_do_not_recurse(name: str, text: str) -> None:
    """No input depth makes a loader recurse: group chains, host ranges, nested INI values."""
    with _tree({name: text, "group_vars/g7.yml": "vllm_model: m\n"}):
        got = assert_parity([name])
        assert got["error"] is None or "Recursion" not in got["error"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(50, 700), st.booleans(), st.booleans())
def test_generated_chains(n: int, ini: bool, reverse: bool) -> None:
    files = {"hosts.ini": _ini_chain(n, reverse)} if ini else {"hosts.yml": _yaml_chain(n)}
    files[f"group_vars/g{n // 2}.yml"] = "vllm_port: 5\n"
    with _tree(files):
        got = assert_parity([next(iter(files))], inventory=True)
        assert got["hosts"] and not got["routed"]


def test_fast_load_of_a_chain_stays_fast() -> None:
    """Depth is computed in topological order, without recursion, on a 2,000-group INI chain."""
    with _tree({"hosts.ini": _ini_chain(2000, False)}):
        assert [h.host for h in fast.load(["hosts.ini"])] == ["h1"]


def test_routing_note_names_the_reason() -> None:
    with _tree({"hosts.yml": "g:\n  vars: {ansible_group_priority: null}\n  hosts: {h: }\n"}):
        notes: list[str] = []
        with pytest.raises(LoadError):
            select.load(["hosts.yml"], note=notes.append)
        assert notes and "ansible_group_priority" in notes[0]
        with pytest.raises(LoadError):
            reference.load(["hosts.yml"])

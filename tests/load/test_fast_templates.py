"""The fast loader's templates (load/fast/variables/render.py) equal ansible-core's templar, value and type, on every case it
renders; every other case is handed to ansible-core, never guessed."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from ansible._internal._datatag._tags import TrustedAsTemplate
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from conftest import write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fast_differential import assert_same

from pdlint.load.fast import loader as fast
from pdlint.load.fast.variables.render import HandOver, Scope, render

HOST, GROUPS = "gpu-d07.fleet.example", ("chat_decode", "decode")
VARS: dict[str, Any] = {
    "vllm_port": 8000, "vllm_base": "8", "vllm_name": "chat", "vllm_flag": True, "vllm_none": None,
    "vllm_ratio": 1.5, "vllm_blank": "", "vllm_list": [1, "a"], "vllm_map": {"a": 1},
    "vllm_host": "{{ inventory_hostname }}", "vllm_side": "{{ vllm_host }}:{{ vllm_port + 1 }}",
    "vllm_loop": "{{ vllm_loop }}", "vllm_nested": {"a": "{{ inventory_hostname }}"},
}

# What inventories write, each rendered by the fast path (a test below holds that none of these is handed over).
COMMON = [
    "{{ inventory_hostname }}", "{{ inventory_hostname }}.fleet", "{{ inventory_hostname_short }}",
    "{{ vllm_port }}", "{{ vllm_port + 1 }}", "{{ vllm_port | int + 100 }}", "{{ vllm_base | int }}",
    "{{ vllm_base ~ vllm_port }}", "{{ vllm_name }}-{{ inventory_hostname }}", "{{ vllm_name | upper }}",
    "{{ vllm_port | string }}", "{{ vllm_name | to_json }}", "{{ vllm_map | to_json }}",
    "{{ vllm_list | to_json }}", "{{ group_names | to_json }}", "{{ vllm_missing | default(9000) }}",
    "{{ vllm_missing | d('x') }}", "{{ vllm_blank | default('q', true) }}", "{{ vllm_none | default(3) }}",
    "{{ vllm_flag }}", "{{ vllm_none }}", "{{ vllm_none }}x", "{{ vllm_ratio }}", "{{ vllm_ratio | int }}",
    "{{ ' a ' | trim }}", "{{ vllm_host }}", "{{ vllm_side }}", "{{- vllm_port -}}", "{# note #}{{ vllm_port }}",
    "  {{ vllm_port }}", "{{ '8000' }}", "{{ 8000 }}", "{{ 1e3 }}", "{{ true }}x", "{{ vllm_flag + 1 }}",
    "{{ '0x1F' | int(0, 16) }}", "{{ 'abc' | int }}", "{{ vllm_name + '-' + vllm_base }}", "{{ vllm_none ~ 'a' }}",
    "{{ vllm_flag | lower }}", "{{ 'é' | to_json }}", "{{ vllm_port | int(base=8) }}", "{{ vllm_port }}{{ none }}",
    "{{ vllm_none }}{{ vllm_none }}", "{{ vllm_port }}{{ '' }}", "{{ vllm_none }}{{ vllm_flag }}",
]
# What the fast path hands to ansible-core (errors whose words are ansible-core's, names it does not keep, nodes
# and results it does not model).
HANDED = [
    "{{ vllm_missing }}", "{{ ansible_host }}", "{{ hostvars[inventory_hostname].x }}", "{{ vllm_name + 1 }}",
    "{{ vllm_list }}", "{{ vllm_map }}", "{{ vllm_list ~ 'x' }}", "{{ vllm_nested }}", "{{ vllm_loop }}",
    "{{ vllm_port if vllm_flag else 1 }}", "{% if vllm_flag %}a{% endif %}", "{{ vllm_port }}\n", "{# only #}",
    "{{ lookup('env', 'HOME') }}", "{{ vllm_name | replace('a', 'b') }}", "{{ vllm_name.upper() }}",
    "{{ vllm_port | string(1) }}", "{{ vllm_name | to_json(indent=2) }}", "{{ vllm_port", "{{ vllm_missing | int }}",
    "{{ vllm_port - 1 }}", "{{ group_names }}", "{{ 'a\\b' }}", "{{ '{{ x }}' }}", "{{ vllm_list }}{{ none }}",
]


def _trusted(value: Any) -> Any:
    if isinstance(value, str):
        return TrustedAsTemplate().tag(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def _ansible(text: str, variables: dict[str, Any]) -> tuple[str, Any]:
    magic = {"inventory_hostname": HOST, "inventory_hostname_short": HOST.split(".")[0], "group_names": list(GROUPS)}
    templar = Templar(loader=DataLoader(), variables={**_trusted(variables), **magic})
    try:
        return "ok", templar.template(TrustedAsTemplate().tag(text))
    except Exception as exc:  # noqa: BLE001 - any failure is ansible-core's answer
        return "error", type(exc).__name__


def _native(value: Any) -> Any:
    """ansible-core's tagged str/int/float as the plain type the reference loader makes of them (load/tagged.py)."""
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _fast(text: str, variables: dict[str, Any]) -> tuple[str, Any] | None:
    try:
        return "ok", render(text, Scope(HOST, variables, GROUPS))
    except HandOver:
        return None


def _same(text: str, variables: dict[str, Any]) -> bool:
    """Whether the fast path rendered text; if it did, its value and type are ansible-core's."""
    got = _fast(text, variables)
    if got is None:
        return False
    expected = _ansible(text, variables)
    assert expected[0] == "ok", (text, expected)
    assert (type(got[1]), got[1]) == (type(_native(expected[1])), expected[1]), text
    return True


@pytest.mark.parametrize("text", COMMON)
def test_what_inventories_write_renders_as_ansible_core_renders_it(text: str) -> None:
    assert _same(text, VARS), f"{text!r} was handed to ansible-core"


@pytest.mark.parametrize("text", HANDED)
def test_what_the_fast_path_cannot_say_exactly_goes_to_ansible_core(text: str) -> None:
    assert _fast(text, VARS) is None


_NAMES = st.sampled_from(["inventory_hostname", "vllm_port", "vllm_base", "vllm_name", "vllm_flag", "vllm_none",
                          "vllm_ratio", "vllm_blank", "vllm_missing", "vllm_host", "vllm_list", "group_names"])
_CONSTS = st.sampled_from(["1", "0", "'a'", "'8'", "''", "1.5", "true", "none", "'0x10'", "' x '"])
_FILTER = st.sampled_from(["int", "string", "lower", "upper", "trim", "to_json", "default(7)", "d('z')",
                           "default('', true)", "int(3)", "int(0, 16)"])


@st.composite
def _expressions(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["name", "const", "filter", "concat", "add"] if depth < 2 else ["name", "const"]))
    if kind == "name":
        return draw(_NAMES)
    if kind == "const":
        return draw(_CONSTS)
    if kind == "filter":
        return f"{draw(_expressions(depth + 1))} | {draw(_FILTER)}"
    op = "~" if kind == "concat" else "+"
    return f"({draw(_expressions(depth + 1))}) {op} ({draw(_expressions(depth + 1))})"


@st.composite
def _templates(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_expressions().map(lambda e: "{{ " + e + " }}"),
                                    st.sampled_from(["-", "x", " ", ".fleet", ":"])), min_size=1, max_size=3))
    return "".join(parts) if any("{{" in p for p in parts) else "{{ " + draw(_expressions()) + " }}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_templates())
def test_generated_templates_render_as_ansible_core_renders_them(text: str) -> None:
    _same(text, VARS)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_the_generated_templates_are_mostly_rendered_fast() -> None:
    """The property above is not vacuous: most generated templates are the fast path's, not handed over."""
    rendered = 0
    for text in [_templates().example() for _unused in range(300)]:
        rendered += _fast(text, VARS) is not None
    assert rendered >= 120, rendered


# The README's quickstart shape: the side channel host templated once in group_vars/all.yml.
QUICKSTART = {
    "hosts.yml": "all:\n  children:\n    chat_prefill:\n      hosts:\n" + "".join(
        f"        p{i:02d}:\n" for i in range(3)) + "    chat_decode:\n      hosts:\n" + "".join(
        f"        d{i:02d}:\n" for i in range(5)) + "        d99: {vllm_port: 9000}\n",
    "group_vars/all.yml": ("vllm_pd_deployment: chat\nvllm_model: meta-llama/Llama-3.1-8B-Instruct\n"
                           "vllm_kv_transfer_config: {kv_connector: NixlConnector, kv_role: kv_both}\n"
                           "vllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: \"{{ inventory_hostname }}\"\n"
                           "  VLLM_NIXL_SIDE_CHANNEL_PORT: \"{{ vllm_port | default(8000) + 1 }}\"\n"),
    "group_vars/chat_prefill.yml": "vllm_pd_role: prefill\nvllm_tensor_parallel_size: 2\n",
    "group_vars/chat_decode.yml": "vllm_pd_role: decode\nvllm_tensor_parallel_size: 2\nvllm_served_model_name: "
                                  "\"{{ vllm_pd_deployment }}-{{ inventory_hostname_short }}\"\n",
    "host_vars/d01.yml": "vllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: \"{{ inventory_hostname }}.ib\"\n",
    "host_vars/d02.yml": "vllm_env:\n  VLLM_NIXL_SIDE_CHANNEL_HOST: \"{{ ansible_host }}\"\nansible_host: 10.0.0.2\n",
}


def test_templated_inventories_load_as_ansible_core_loads_them(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    write_tree(tmp_path, QUICKSTART)
    monkeypatch.chdir(tmp_path)
    assert_same(["hosts.yml"])
    got = {hv.host: hv for hv in fast.load(["hosts.yml"])}
    assert got["d00"].values["vllm_env"] == {"VLLM_NIXL_SIDE_CHANNEL_HOST": "d00", "VLLM_NIXL_SIDE_CHANNEL_PORT": 8001}
    assert got["d99"].values["vllm_env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] == 9001
    assert got["d01"].values["vllm_env"] == {"VLLM_NIXL_SIDE_CHANNEL_HOST": "d01.ib"}
    assert got["d02"].values["vllm_env"] == {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.2"}  # ansible-core's
    assert got["d03"].values["vllm_served_model_name"] == "chat-d03"


def test_the_quickstart_template_never_imports_ansible(tmp_path: Path) -> None:
    """ansible_host too: the fast loader reads the inventory again keeping it (load/fast/loader.py)."""
    write_tree(tmp_path, QUICKSTART)
    code = ("import sys; from pdlint.load.fast import loader; hvs = loader.load(['hosts.yml']); "
            "print('ansible' in sys.modules, hvs[-1].values['vllm_env']['VLLM_NIXL_SIDE_CHANNEL_HOST'])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "p02"], out.stdout + out.stderr


def test_a_site_variable_read_by_a_template_is_kept_for_it_and_dropped_after(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    write_tree(tmp_path, {
        "hosts.yml": "all:\n  hosts:\n    h1: {ib: 10.1.0.1, rack: r1}\n    h2: {ib: 10.1.0.2}\n",
        "group_vars/all.yml": ("vllm_env: {VLLM_NIXL_SIDE_CHANNEL_HOST: \"{{ ib }}\"}\n"
                               "vllm_served_model_name: \"{{ site }}-{{ rack | default('none') }}\"\n"
                               "site: \"{{ region }}1\"\nregion: eu\n"),
    })
    monkeypatch.chdir(tmp_path)
    assert_same(["hosts.yml"])
    h1, h2 = fast.load(["hosts.yml"])
    assert h1.values == {"vllm_env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.1.0.1"}, "vllm_served_model_name": "eu1-r1"}
    assert "ib" not in h1.values and not any(p[0] in ("ib", "site", "region", "rack") for p in h1.origins)
    # rack is not a pdlint name: where h2 lacks it, only ansible-core says what default() gets
    assert h2.values["vllm_served_model_name"] == "eu1-none"


def test_the_magic_names_are_ansible_cores() -> None:
    from ansible.inventory.manager import InventoryManager
    from ansible.vars.manager import VariableManager

    from pdlint.load.fast.variables.render import MAGIC

    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=["h1,"])
    names = VariableManager(loader=loader, inventory=inventory).get_vars(host=inventory.get_host("h1"),
                                                                          include_hostvars=False)
    assert set(names) == MAGIC


# No leaf reads a variable a leaf sets: a loop's RecursionError words depend on the stack depth (either loader).
_LEAVES = st.sampled_from(["{{ inventory_hostname }}", "{{ vllm_port + 1 }}", "{{ vllm_missing }}", "plain",
                           "{{ vllm_base | default('t') }}-x", "{{ ansible_host | default('h') }}", "{{ 'q' ~ 3 }}",
                           "{{ vllm_port | string }}", "{{ vllm_base }}"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["g", "h0", "h1", "all"]), st.dictionaries(
    st.sampled_from(["vllm_tag", "vllm_served_model_name", "vllm_env"]), _LEAVES, max_size=2), max_size=4),
    st.sampled_from([7000, "7000", "{{ 6000 + 1 }}"]))
def test_generated_templated_inventories_load_as_ansible_core_loads_them(layers: dict[str, dict[str, str]],
                                                                          port: Any) -> None:
    files = {"hosts.yml": "all:\n  children:\n    g:\n      hosts:\n        h0:\n        h1:\n"
                          f"  vars: {{vllm_port: {port!r}, vllm_base: '{{{{ inventory_hostname }}}}b'}}\n"}
    for entity, data in layers.items():
        folder = "host_vars" if entity.startswith("h") else "group_vars"
        body = "".join(f"{k}: {{X: {v!r}}}\n" if k == "vllm_env" else f"{k}: {v!r}\n" for k, v in data.items())
        files[f"{folder}/{entity}.yml"] = body
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(Path(tmp), files)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            assert_same(["hosts.yml"])
        finally:
            os.chdir(cwd)


def test_the_quickstart_bench_compares_like_with_like(tmp_path: Path) -> None:
    """bench/quickstart.py's `template` renders to its `written` shape: same hosts, same values, same origins file."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from quickstart import generate
    finally:
        sys.path.pop(0)
    loaded = {}
    for shape in ("template", "written"):
        generate(40, tmp_path / shape, shape)
        loaded[shape] = {hv.host: hv.values for hv in fast.load([str(tmp_path / shape)])}
    assert len(loaded["template"]) == 40
    assert loaded["template"]["gpu-d7"]["vllm_env"] == {"VLLM_NIXL_SIDE_CHANNEL_HOST": "gpu-d7"}
    assert loaded["template"] == loaded["written"]

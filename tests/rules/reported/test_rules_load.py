"""Findings of the loader's first pass (guard, preflight) and of ansible-core's warnings made data."""
from __future__ import annotations

import json

import pytest
from conftest import rules_of

from pdlint.load.preflight import guard
from pdlint.load.reference import loader as reference

HOSTS = """\
all:
  vars: {vllm_pd_deployment: chat}
  hosts:
    p1: {vllm_pd_role: prefill}
    d1: {vllm_pd_role: decode}
"""


@pytest.mark.parametrize(("rule", "files", "where"), [
    ("yaml[key-duplicates]", {"group_vars__all.yml": "vllm_dtype: half\nvllm_model: a\nvllm_dtype: bfloat16\n"},
     ("group_vars/all.yml", 3, 1)),
    ("yaml[key-duplicates]", {"host_vars__p1.yml": "vllm_kv_transfer_config:\n  kv_role: kv_producer\n"
                                                   "  kv_role: kv_both\n"}, ("host_vars/p1.yml", 3, 3)),
    ("inventory[group-name]", {"hosts.yml": HOSTS.replace("  hosts:\n", "  children:\n    gpu-p:\n      hosts:\n"
                                                          "        p0: {vllm_pd_role: prefill}\n  hosts:\n")},
     ("hosts.yml", 4, 5)),
])
def test_loader_findings(lint, rule, files, where) -> None:
    hosts = files.pop("hosts.yml", HOSTS)
    found = [f for f in lint(hosts, **files) if f.rule == rule]
    assert found, f"{rule} not reported"
    assert (found[0].origin.file, found[0].origin.line, found[0].origin.column) == where
    assert found[0].severity == "warning"


@pytest.mark.parametrize(("rule", "files"), [
    ("yaml[key-duplicates]", {"group_vars__all.yml": "vllm_dtype: half\n<<: {a: 1}\nb: {<<: {c: 1}}\n"}),
    ("inventory[group-name]", {"group_vars__all.yml": "vllm_dtype: half\n"}),
])
def test_loader_findings_pass(lint, rule, files) -> None:
    assert rule not in rules_of(lint(HOSTS, **files))


@pytest.mark.parametrize(("text", "limits", "message"), [
    ("a: " + "[" * 30 + "]" * 30, guard.Limits(max_depth=20), "nested deeper than 20 levels"),
    ("a: &a [1, 2, 3]\nb: [*a, *a, *a]\nc: [*b, *b]\n", guard.Limits(max_nodes=20), "more than 20 nodes"),
])
def test_guard_limits(text, limits, message) -> None:
    with pytest.raises(guard.Refused) as info:
        guard.scan_yaml(text, "f.yml", limits)
    assert message in info.value.finding.message
    assert info.value.finding.origin.line is not None


def test_guard_counts_aliases_by_what_they_expand_to() -> None:
    text = "a: &a [1, 2, 3]\nb: [*a, *a, *a]\nc: [*b, *b]\n"
    guard.scan_yaml(text, "f.yml", guard.Limits(max_nodes=40))  # 1 + 4 + 13 + 27 + 3 keys = 38 nodes


@pytest.mark.parametrize(("data", "message", "line"), [
    (b"a: 1\nb: \xff\n", "not UTF-8: byte 0xff", 2),
    (b"a: 1\n\n\x00\x01", "binary file", 3),
])
def test_guard_bytes(data, message, line) -> None:
    with pytest.raises(guard.Refused) as info:
        guard.text_of(data, "f.yml", guard.Limits())
    assert message in info.value.finding.message and info.value.finding.origin.line == line


def test_notes_carry_loader_warnings(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hosts.yml").write_text(HOSTS + "    d1: {vllm_pd_role: decode}\n")
    notes: list = []
    reference.load([str(tmp_path / "hosts.yml")], notes=notes)
    assert [(n.rule, n.origin.line) for n in notes] == [("yaml[key-duplicates]", 6)]


# Vars files that match no host or group are reported, with the closest real name (both loaders: the lint
# fixture compares them); the implicit groups all and ungrouped always match.
@pytest.mark.parametrize(("path", "hint"), [
    ("host_vars/node-dl.yml", "did you mean host_vars/node-d1.yml?"),
    ("host_vars/node-d2", "did you mean host_vars/node-d1?"),
    ("group_vars/decod.yml", "did you mean group_vars/decode.yml?"),
    ("group_vars/decodes/main.yml", "did you mean group_vars/decode?"),
    ("host_vars/zzz.yaml", "rename it after a host (node-d1, node-p1), or delete it"),
])
def test_unmatched_vars_files_are_reported(path: str, hint: str, lint) -> None:
    found = lint(UNMATCHED_HOSTS, **{path.replace("/", "__"): "vllm_tensor_parallel_size: 4\n",
                                     "group_vars__all.yml": "vllm_pd_deployment: chat\n",
                                     "group_vars__ungrouped.yml": "vllm_model: x/y\n",
                                     "host_vars__node-d1.yml": "vllm_port: 8001\n"})
    [hit] = [f for f in found if f.rule == "inventory[unmatched-vars]"]
    entry = "/".join(path.split("/")[:2])
    assert hit.origin.file == entry and hit.hint == hint and hit.severity == "error", hit


UNMATCHED_HOSTS = """\
all:
  children:
    prefill: {hosts: {node-p1: {vllm_pd_role: prefill}}}
    decode: {hosts: {node-d1: {vllm_pd_role: decode}}}
"""


# A host two unrelated groups give different roles: each group, its role and where, and the role Ansible keeps.
@pytest.mark.parametrize(("hosts", "files", "message"), [
    ("all:\n  children:\n    chat_prefill: {hosts: {p1: {}, x1: {}}}\n    chat_decode: {hosts: {d1: {}, x1: {}}}\n",
     {"group_vars__chat_prefill.yml": "vllm_pd_role: prefill\n",
      "group_vars__chat_decode.yml": "vllm_pd_role: decode\n"},
     "host x1 is in groups that give it different roles: chat_decode gives decode (group_vars/chat_decode.yml:1:15); "
     "chat_prefill gives prefill (group_vars/chat_prefill.yml:1:15); Ansible keeps prefill"),
    ("all:\n  children:\n    a: {hosts: {x1: {}}, vars: {vllm_pd_role: decode}}\n"
     "    b: {hosts: {x1: {}}, vars: {vllm_pd_role: prefill}}\n", {},
     "host x1 is in groups that give it different roles: a gives decode (hosts.yml:3:47); "
     "b gives prefill (hosts.yml:4:47); Ansible keeps prefill"),
    # not conflicts: a child overriding its parent; a host setting its own role; one role per group
    ("all:\n  children:\n    pd:\n      vars: {vllm_pd_role: prefill}\n"
     "      children: {dec: {hosts: {x1: {}}, vars: {vllm_pd_role: decode}}}\n", {}, None),
    ("all:\n  children:\n    a: {hosts: {x1: {}}, vars: {vllm_pd_role: decode}}\n"
     "    b: {hosts: {x1: {}}, vars: {vllm_pd_role: prefill}}\n",
     {"host_vars__x1.yml": "vllm_pd_role: decode\n"}, None),
])
def test_role_conflicts(hosts: str, files: dict[str, str], message: str | None, lint) -> None:
    found = [f for f in lint(hosts, **files) if f.rule == "deployment[role-conflict]"]
    assert [f.message for f in found] == ([message] if message else [])


@pytest.mark.parametrize("loader", ["fast", "ansible"])
@pytest.mark.parametrize("value", ["!!int abc", "!!float x", "!!bool maybe"])
def test_a_value_its_tag_cannot_construct_is_a_load_error_naming_the_file(tmp_path, capsys, loader: str,
                                                                           value: str) -> None:
    """`!!int abc` fails ansible-core's load: exit 2 with the vars file named, never an internal error."""
    from pdlint import cli

    (tmp_path / "group_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(HOSTS)
    (tmp_path / "group_vars" / "all.yml").write_text(f"vllm_dtype: half\nvllm_port: {value}\n")
    assert cli.main([str(tmp_path), "--no-cache", "--loader", loader]) == 2
    out = capsys.readouterr()
    assert "internal error" not in out.err
    assert "group_vars/all.yml" in out.out and "load-error" in out.out


def test_a_file_level_finding_sorts_beside_a_positioned_one_in_its_file(tmp_path, capsys) -> None:
    """An unmatched host_vars file with a duplicate key: inventory[unmatched-vars] (no line) and
    yaml[key-duplicates] (a line) in one file. Sorting them compared None with an int: an internal error."""
    import json

    from pdlint.cli import main

    (tmp_path / "host_vars").mkdir()
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars: {vllm_pd_deployment: x}\n  hosts:\n    p1: {vllm_pd_role: prefill}\n"
        "    d1: {vllm_pd_role: decode}\n")
    (tmp_path / "host_vars" / "ghost.yml").write_text("vllm_port: 8000\nvllm_port: 8100\n")
    code = main(["--no-cache", "--format", "json", str(tmp_path)])
    out, err = capsys.readouterr()
    assert (code, err) == (1, "")
    assert [f["rule"] for f in json.loads(out)][:2] == ["inventory[unmatched-vars]", "yaml[key-duplicates]"]


_RESERVED = {
    "yaml-hosts": ("hosts.yml", "all:\n  hosts:\n    {name}:\n      vllm_pd_role: prefill\n", (3, 5)),
    "yaml-child": ("hosts.yml", "all:\n  children:\n    prefill:\n      hosts:\n        p1: {{}}\n        {name}: "
                   "{{vllm_pd_role: prefill}}\n", (6, 9)),
    "ini": ("hosts", "[prefill]\np1\n{name} vllm_pd_role=prefill\n\n[prefill:vars]\nall=1\n", (3, 1)),
    "ini-ext": ("hosts.ini", "[decode:children]\nall_decode\n\n[all_decode]\n  {name}\n", (5, 3)),
}


@pytest.mark.parametrize("loader", ["fast", "ansible"])
@pytest.mark.parametrize("name", ["all", "ungrouped"])
@pytest.mark.parametrize("shape", sorted(_RESERVED))
def test_a_host_named_after_a_built_in_group_is_one_load_error(tmp_path, capsys, loader: str, name: str,
                                                               shape: str) -> None:
    """ansible-core fails (can't add group to itself; a recursive dependency loop), drops the host's variables, or
    keeps it beside the group with a warning: both loaders refuse the inventory at the line naming the host."""
    from pdlint import cli

    file, text, (line, column) = _RESERVED[shape]
    (tmp_path / file).write_text(text.format(name=name))
    assert cli.main([str(tmp_path / file), "--no-cache", "--loader", loader, "--format", "json"]) == 2
    out = capsys.readouterr()
    assert "internal error" not in out.err
    report = json.loads(out.out)
    [found] = report["findings"] if isinstance(report, dict) else report
    assert found["rule"] == "load-error" and f"host {name!r}" in found["message"]
    assert (found["line"], found["column"]) == (line, column) and found["file"].endswith(file)


@pytest.mark.parametrize(("files", "fires"), [
    ({"hosts.yml": "all:\n  children:\n    prefill: {hosts: {p1: {}}}\n    decode: {hosts: {d1: {}}}\n"}, True),
    ({"hosts": "[web]\nw1\n", "group_vars/all.yml": "kv: '{\"kv_connector\": \"NixlConnector\"}'\n"}, True),
    ({"hosts": "[web]\nw1\n[db]\nd1\n"}, False),
])
def test_an_inventory_that_looks_pd_but_has_no_pd_host_says_so(tmp_path, capsys, files: dict[str, str],
                                                                 fires: bool) -> None:
    """No host sets vllm_pd_role, yet groups are named prefill/decode or a value names a KV connector:
    inventory[no-pd-hosts] says what it saw instead of a silent pass."""
    from pdlint import cli

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    cli.main([str(tmp_path), "--no-cache", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    found = {f["rule"] for f in (report["findings"] if isinstance(report, dict) else report)}
    assert ("inventory[no-pd-hosts]" in found) == fires, found

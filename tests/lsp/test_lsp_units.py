"""The language server's plain-Python parts: which inventory a file is in, in-place edits, no pygls needed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pdlint.finding import Finding, Origin
from pdlint.hostvars import HostVars
from pdlint.lsp import actions, inventory
from pdlint.lsp import text as tx


def test_inventory_of_follows_the_cli_and_leaves_playbooks_alone(tmp_path: Path) -> None:
    (tmp_path / "inv" / "group_vars").mkdir(parents=True)
    (tmp_path / "inv" / "group_vars" / "all.yml").write_text("")
    (tmp_path / "inv" / "hosts.yml").write_text("")
    (tmp_path / "site.yml").write_text("")
    (tmp_path / "prod.ini").write_text("")
    assert inventory.inventory_of(str(tmp_path / "inv" / "group_vars" / "all.yml")) == str(tmp_path / "inv")
    assert inventory.inventory_of(str(tmp_path / "inv" / "hosts.yml")) == str(tmp_path / "inv")
    assert inventory.inventory_of(str(tmp_path / "prod.ini")) == str(tmp_path / "prod.ini")
    assert inventory.inventory_of(str(tmp_path / "site.yml")) is None


@pytest.mark.parametrize(("line", "column", "token"), [
    ("vllm_tensor_parallel_size: 6  # six", 28, "6"),
    ("vllm_tensor_parallel_size: '6'", 28, "'6'"),
    ("  - {role: decode, tensor_parallel_size: 6}", 42, "6"),
    ('kv_role: "kv_both" # x', 10, '"kv_both"'),
])
def test_token_is_the_scalar_at_the_column(line: str, column: int, token: str) -> None:
    span = tx.token(line, column)
    assert span is not None and line[span[0]:span[1]] == token


def _apply(text: str, action: actions.Action) -> str:
    lines = text.split("\n")
    for e in reversed(action.edits):
        while len(lines) <= e.line:
            lines.append("")
        lines[e.line] = lines[e.line][:e.start] + e.text + lines[e.line][e.end:]
    return "\n".join(lines)


@pytest.mark.parametrize(("before", "after"), [
    ("vllm_pd_role: decode\n", 'vllm_pd_role: decode\npdlint_skip: ["tp[heads]"]\n'),
    ("vllm_pd_role: decode", 'vllm_pd_role: decode\npdlint_skip: ["tp[heads]"]\n'),
    ("pdlint_skip: [gpu]  # node set by the scheduler\nx: 1\n",
     'pdlint_skip: [gpu, "tp[heads]"]  # node set by the scheduler\nx: 1\n'),
    ("pdlint_skip: []\n", 'pdlint_skip: ["tp[heads]"]\n'),
    ("pdlint_skip:\n  - gpu\n  # why\n  - env\nvllm_port: 1\n",
     'pdlint_skip:\n  - gpu\n  # why\n  - env\n  - "tp[heads]"\nvllm_port: 1\n'),
])
def test_suppress_edits_the_list_in_place(tmp_path: Path, before: str, after: str) -> None:
    path = tmp_path / "host_vars" / "d1.yml"
    path.parent.mkdir()
    path.write_text(before)
    origin = Origin(str(path), 1, 1)
    hv = HostVars("d1", {"vllm_tensor_parallel_size": 6}, {("vllm_tensor_parallel_size",): origin})
    finding = Finding(origin, "tp[heads]", "error", "m", "use TP 4 or 8", ("d1",))
    action = actions.skip_action(finding, [hv], lambda p: before if p == str(path) else None)
    assert action is not None and action.path == str(path)
    assert _apply(before, action) == after


def test_suppress_is_not_offered_where_another_file_sets_the_hosts_pdlint_skip(tmp_path: Path) -> None:
    group, host = tmp_path / "group_vars" / "d.yml", tmp_path / "host_vars" / "d1.yml"
    hv = HostVars("d1", {"vllm_tensor_parallel_size": 6, "pdlint_skip": ["gpu"]},
                  {("vllm_tensor_parallel_size",): Origin(str(group), 1, 28), ("pdlint_skip",): Origin(str(host), 1, 14),
                   ("pdlint_skip", 0): Origin(str(host), 1, 15)})
    other = HostVars("d2", {"vllm_tensor_parallel_size": 6}, {("vllm_tensor_parallel_size",): Origin(str(group), 1, 28)})
    finding = Finding(Origin(str(group), 1, 28), "tp[heads]", "error", "m", None, ("d1", "d2"))
    assert actions.skip_action(finding, [hv, other], lambda p: "") is None


def test_package_imports_without_pygls_and_the_command_says_how_to_get_it() -> None:
    code = ("import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
            "from pdlint.lsp import actions, hover, inventory, pairs, related, text\n"
            "from pdlint.cli import main\n"
            "raise SystemExit(main(['lsp']))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2
    assert "pip install 'pdlint[lsp]'" in run.stderr and "Traceback" not in run.stderr

"""A play's `hosts:` pattern selects the hosts ansible-core's own InventoryManager.get_hosts selects on the real
inventory, for the pattern forms a play writes."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, write_tree

from pdlint.load import select
from pdlint.load.preflight import safety
from pdlint.playbook.patterns import matcher

PATTERNS = ("all", "*", "deepseek", "deepseek_decode", "llama70b:&llama70b_decode", "llama70b:!llama70b_prefill",
            "gpu-a*", "*decode", "qwen,mi-b01", "qwen:mi-b01", "~mi-b0[12]", "~^gpu-a0[23]$", "ungrouped",
            "nobody", "deepseek*:&*decode", "all:!qwen:!deepseek_prefill", "!qwen", "llama70b:&gpu-a0*",
            "deepseek,!mi-b01", "gpu-c01", "lone", "ungrouped:deepseek")
INI = """\
lone
[deepseek_prefill]
mi-b01
[deepseek_decode]
mi-b02
[deepseek:children]
deepseek_prefill
deepseek_decode
[llama70b]
gpu-a0[1:3]
[llama70b_decode]
gpu-a0[2:3]
[llama70b_prefill]
gpu-a01
[qwen]
gpu-c01
"""


def _ansible(sources: list[str], pattern: str) -> frozenset[str]:
    from ansible._internal._display_utils import DeferredWarningContext
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    with DeferredWarningContext(variables={}):
        inventory = InventoryManager(loader=DataLoader(), sources=sources)
        return frozenset(h.name for h in inventory.get_hosts(pattern))


@pytest.mark.parametrize("kind", ["yaml", "ini"])
def test_patterns_as_ansible_core(kind: str, tmp_path: Path) -> None:
    safety.configure()
    sources = [str(ROOT / "examples" / "inventory")] if kind == "yaml" else \
        [str(write_tree(tmp_path, {"hosts.ini": INI}) / "hosts.ini")]
    select_hosts = matcher(select.load(sources))
    for pattern in PATTERNS:
        assert select_hosts(pattern) == _ansible(sources, pattern), pattern

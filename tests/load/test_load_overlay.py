"""The loaders' overlay: an editor's unsaved text read in place of the file, by the preflight and both loaders."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pdlint.engine import core as engine
from pdlint.load import select
from pdlint.load.errors import LoadError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ROOT / "examples" / "inventory", tmp_path / "inventory"))


def rules(hosts: list) -> list[str]:
    return sorted(f.rule for f in engine.lint(hosts).findings)


def test_overlay_text_replaces_the_file_and_the_file_stays_as_it_was(inv: Path) -> None:
    decode = inv / "host_vars" / "mi-b02.yml"
    on_disk = decode.read_text()
    assert "tp-ratio[moriio]" in rules(select.load([str(inv)]))
    overlay = {str(decode): on_disk.replace("vllm_tensor_parallel_size: 6", "vllm_tensor_parallel_size: 8")}
    hosts = select.load([str(inv)], overlay=overlay)
    assert "tp-ratio[moriio]" not in rules(hosts) and "tp[heads]" not in rules(hosts)
    assert next(h for h in hosts if h.host == "mi-b02").values["vllm_tensor_parallel_size"] == 8
    assert decode.read_text() == on_disk


@pytest.mark.parametrize("loader", ["fast", "ansible"])
def test_ansible_cores_loader_reads_the_overlay_too(loader: str, inv: Path) -> None:
    """Hosts ansible-core renders (a template, or a whole --loader ansible load) see the buffer, with its origins."""
    decode, group = inv / "host_vars" / "mi-b02.yml", inv / "group_vars" / "all.yml"
    on_disk = decode.read_text()
    group.write_text(group.read_text() + "vllm_node: \"{{ inventory_hostname }}-node\"\n")  # every host rendered
    overlay = {str(decode): on_disk.replace("vllm_tensor_parallel_size: 6", "vllm_tensor_parallel_size: 8")}
    hosts = select.load([str(inv)], loader=loader, overlay=overlay, note=lambda _: None)
    mi = next(h for h in hosts if h.host == "mi-b02")
    assert mi.values["vllm_tensor_parallel_size"] == 8 and mi.values["vllm_node"] == "mi-b02-node"
    assert mi.origins[("vllm_tensor_parallel_size",)].file.endswith("host_vars/mi-b02.yml")
    assert "tp-ratio[moriio]" not in rules(hosts) and decode.read_text() == on_disk


def test_overlay_with_a_yaml_error_is_a_load_error_at_its_line(inv: Path) -> None:
    group = inv / "group_vars" / "deepseek.yml"
    broken = group.read_text() + "vllm_env: {A: [1\n"
    with pytest.raises(LoadError) as caught:
        select.load([str(inv)], overlay={str(group): broken})
    assert caught.value.finding.rule == "load-error"
    assert caught.value.finding.origin.file.endswith("group_vars/deepseek.yml")
    assert caught.value.finding.origin.line == 5


def test_overlay_is_held_to_the_same_size_limit(inv: Path) -> None:
    from pdlint.load.preflight import guard

    group = inv / "group_vars" / "all.yml"
    with pytest.raises(LoadError, match="over the 1,024-byte limit"):
        select.load([str(inv)], overlay={str(group): "# x\n" * 1000}, limits=guard.Limits(max_file_bytes=1024))

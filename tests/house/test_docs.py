"""Every rule is documented with PASS and FAIL examples, and the examples do what they say."""
from __future__ import annotations

import pytest
from conftest import ROOT, rules_of

from pdlint.rules import CHECKS, REGISTRY

CATALOG_IDS = {
    "schema", "load-error", "unresolved", "model-facts", "deployment[incomplete]", "deployment[connector]",
    "connector[unknown]", "connector[config]", "kv-role[missing]", "kv-role[invalid]", "kv-role[side]",
    "kv-role[moriio-explicit]", "tp[heads]", "tp[kv-heads]", "tp-ratio[moriio]", "tp-ratio[moriio-write]",
    "tp-ratio[nixl]", "tp-ratio[mooncake]", "tp-ratio[p2p-nccl]", "kv-heads[moriio-replicated]",
    "kv-heads[nixl-prefill-replicated]", "pd-mismatch[model]", "pd-mismatch[dtype]", "pd-mismatch[kv-cache-dtype]",
    "pd-mismatch[vllm-version]", "pd-mismatch[hma]", "pd-mismatch[block-size]", "engine-id[duplicate]",
    "port[collision]", "port[http-mismatch]", "nixl[side-channel-host]", "gpu[oversubscribed]", "gpu[overlap]",
    "gpu[count]", "env[ignored]",
    "skip[unused]", "skip[unknown]",  # pdlint_skip entries that suppress nothing / name no rule
}
# Found by the loader's hostile-input checks.
LOADER_IDS = {"yaml[key-duplicates]", "inventory[group-name]",
              "inventory[unmatched-vars]", "deployment[role-conflict]"}  # ignored vars files, two roles
# A vllm_version pdlint has no rules of its own for.
RELEASE_IDS = {"vllm-version[unknown]"}
# An rc or dev build of a known release (info); env numbers vLLM cannot read.
VALUE_IDS = {"vllm-version[pre-release]", "env[invalid]"}
# An out-of-tree connector pdlint cannot see into (info).
OUT_OF_TREE_IDS = {"connector[out-of-tree]"}
# More GPUs listed than used (a warning), vLLM's DP / node checks, multi-node engine consistency.
SHAPE_IDS = {"gpu[unused]", "parallel[dp-local]", "parallel[dp-rank]", "parallel[nnodes]", "parallel[node-rank]",
             "multinode[nodes]", "multinode[shape]", "multinode[dp-ranks]"}
# VLLM_KV_CACHE_LAYOUT set differently on the two sides.
LAYOUT_IDS = {"pd-mismatch[kv-cache-layout]"}
# A command line in vllm_args that its release refuses, or that contradicts a variable.
LAUNCH_IDS = {"vllm-args[invalid]", "vllm-args[conflict]"}
# A kv_connector_extra_config key the connector never reads (a warning).
EXTRA_KEY_IDS = {"connector[extra-key]"}
# An engine's weights and KV cache against its GPU's memory.
MEMORY_IDS = {"memory[gpu-type]", "memory[weights]", "memory[kv-cache]", "memory[margin]", "memory[max-model-len]",
              "memory[kv-capacity]"}


def test_registry_has_every_design_rule() -> None:
    assert set(REGISTRY) == (CATALOG_IDS | LOADER_IDS | RELEASE_IDS | OUT_OF_TREE_IDS | SHAPE_IDS | LAYOUT_IDS | VALUE_IDS
                             | LAUNCH_IDS | EXTRA_KEY_IDS | MEMORY_IDS | {"inventory[no-pd-hosts]"})


def test_check_functions_are_distinct() -> None:
    assert len({r.check_hits for r in CHECKS}) == len(CHECKS)


@pytest.mark.parametrize("rule_id", sorted(REGISTRY))
def test_rule_is_documented(rule_id: str) -> None:
    rule = REGISTRY[rule_id]
    assert rule.summary and rule.summary.endswith(".")
    assert set(rule.examples()) == {"PASS", "FAIL"}, rule_id
    assert rule.severity in ("error", "warning", "info")


@pytest.mark.parametrize("rule_id", sorted(REGISTRY))
def test_rule_has_a_test(rule_id: str) -> None:
    """Every rule id appears in a rule test table besides its docstring examples."""
    text = "".join(p.read_text() for p in (ROOT / "tests" / "rules").rglob("test_*.py"))
    assert f'"{rule_id}"' in text, f"no test table row names {rule_id}"


@pytest.mark.parametrize("rule_id", sorted(set(REGISTRY) - {"load-error"}))
def test_docstring_examples(rule_id: str, lint) -> None:
    examples = REGISTRY[rule_id].examples()
    hosts, files = _files(examples["PASS"])
    assert rule_id not in rules_of(lint(hosts, **files)), "PASS example reports the rule"
    hosts, files = _files(examples["FAIL"])
    assert rule_id in rules_of(lint(hosts, **files)), "FAIL example does not report the rule"


def _files(example: str) -> tuple[str, dict[str, str]]:
    """hosts.yml, then the files after each `--- path` line (keyed as the lint fixture takes them)."""
    hosts, *rest = example.split("\n--- ")
    files = dict(part.split("\n", 1) for part in rest)
    return hosts + "\n", {path.replace("/", "__"): text for path, text in files.items()}


def test_load_error_examples(tmp_path, monkeypatch) -> None:
    from pdlint.load.reference import loader as reference

    examples = REGISTRY["load-error"].examples()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.yml").write_text(examples["PASS"])
    reference.load([str(tmp_path / "ok.yml")])
    (tmp_path / "bad.yml").write_text(examples["FAIL"])
    with pytest.raises(reference.LoadError) as info:
        reference.load([str(tmp_path / "bad.yml")])
    assert info.value.finding.rule == "load-error"
    assert info.value.finding.origin.file == "bad.yml"
    assert info.value.finding.origin.line is not None


@pytest.mark.parametrize("rule_id", sorted(REGISTRY))
def test_rule_says_how_it_behaves_across_releases(rule_id: str) -> None:
    """`pdlint rules ID` shows every rule's behaviour by release: a span table, or why it is the same in each."""
    from pdlint.cli.docs import release_table

    table = release_table(rule_id)
    assert table.startswith("Across vLLM releases:"), rule_id
    if "| releases |" in table:
        rows = [line for line in table.splitlines() if line.startswith("| 0.")]
        assert rows and all(line.count("|") >= 4 and line.split("|")[3].strip() for line in rows), table

"""Memos in the open: identity caches hold what they were made from, and per-check memos hang on the check's
objects (the topology, the run), never on a module."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

from pdlint.hostvars import HostVars, IdentityMemo

CORE = ROOT / "plugins" / "plugin_utils" / "pdlint"


def test_a_result_is_for_the_very_objects_it_was_made_from() -> None:
    memo: IdentityMemo[str] = IdentityMemo()
    a, b = [1], [1]  # equal, not the same
    memo.put((a,), "from a")
    assert memo.get((a,)) == ("from a",)
    assert memo.get((b,)) is None
    assert memo.get((a,), "other plain key") is None
    memo.put((a,), "", "plain")
    assert memo.get((a,), "plain") == ("",)  # a falsy result is a result


def test_an_id_taken_by_another_object_is_not_a_hit() -> None:
    memo: IdentityMemo[str] = IdentityMemo()
    first = object()
    memo.put((first,), "first")
    held = memo.entries[((id(first),), None)][0][0]
    assert held is first  # the entry holds its object: while it lives, no other object can take its id
    impostor = object()
    memo.entries[((id(impostor),), None)] = ((first,), "first")  # as if impostor had first's id
    assert memo.get((impostor,)) is None


def test_the_limit_starts_the_memo_over() -> None:
    memo: IdentityMemo[int] = IdentityMemo(limit=2)
    keep = [object() for _ in range(3)]
    for i, o in enumerate(keep):
        memo.put((o,), i)
    assert len(memo.entries) == 1 and memo.get((keep[2],)) == (2,)


def _module_state(path: Path) -> list[str]:
    """Module-level names assigned a dict that some function of the module indexes by id()."""
    tree = ast.parse(path.read_text())
    dicts = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)
             and isinstance(node.value, (ast.Dict, ast.Call))}
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            target = node.value if isinstance(node, ast.Subscript) else node.func.value  # type: ignore[union-attr]
            if isinstance(target, ast.Name) and target.id in dicts and "id(" in ast.unparse(node):
                hits.append(f"{path.relative_to(ROOT)}: {target.id}")
    return hits


def test_no_module_keeps_state_keyed_by_identity() -> None:
    found = [hit for path in sorted(CORE.rglob("*.py")) for hit in _module_state(path)]
    assert not found, found


def _hosts(decode_tp: int) -> list[HostVars]:
    kv = {"kv_connector": "NixlConnector"}
    common = {"vllm_pd_deployment": "dep", "vllm_model": "meta-llama/Llama-3.3-70B-Instruct"}
    return [HostVars("p1", {**common, "vllm_pd_role": "prefill", "vllm_tensor_parallel_size": 4,
                            "vllm_kv_transfer_config": {**kv, "kv_role": "kv_producer"}}),
            HostVars("d1", {**common, "vllm_pd_role": "decode", "vllm_tensor_parallel_size": decode_tp,
                            "vllm_kv_transfer_config": {**kv, "kv_role": "kv_consumer"}})]


def test_the_pair_rules_memo_is_the_topologys_own() -> None:
    from pdlint.engine import core
    from pdlint.rules.pair.pairs import memo_of

    first = core.lint(_hosts(6)).topology
    second = core.lint(_hosts(4)).topology
    assert memo_of(first) is first.rule_memo and memo_of(second) is second.rule_memo
    assert memo_of(first) is not memo_of(second) and memo_of(first)  # the first check's blocks are still its own

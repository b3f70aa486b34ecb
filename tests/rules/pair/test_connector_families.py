"""The connector families' pair checks are one explicit table (vllm/connectors/families.py), not registered on import."""
from __future__ import annotations

import subprocess
import sys

from pdlint.vllm.connectors import families, mooncake, moriio, nixl, p2p, registry


def test_every_family_with_a_pair_rule_has_its_check_in_the_table() -> None:
    # every family the registry names, except lmcache (pdlint has no pair rule of its own for it: it says so in
    # connector[unknown]/deployment findings, not by a check)
    kinds = set(registry._KIND.values()) - {"lmcache"}
    assert set(families.FAMILIES) == kinds
    expected = {"nixl": nixl.pair, "moriio": moriio.pair, "mooncake": mooncake.pair, "p2p-nccl": p2p.pair}
    assert expected == families.FAMILIES


def test_the_pair_verdict_does_not_depend_on_what_was_imported_first() -> None:
    """A caller that imports the families module alone judges a MoRIIO pair as the whole package does."""
    code = ("from pdlint.vllm.connectors import families\n"
            "from pdlint.vllm.connectors.pair import Side\n"
            "from pdlint.vllm.releases import R\n"
            "def side(role, tp, kv_role):\n"
            "    return Side(role, R('0.33.0'), 'MoRIIOConnector', tp=tp, heads=64, kv_heads=8, kv_role=kv_role)\n"
            "print(sorted({p.rule for p in families.problems(side('prefill', 4, 'kv_producer'),\n"
            "                                                side('decode', 6, 'kv_consumer'))}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    from pdlint.vllm.connectors.pair import Side
    from pdlint.vllm.releases import R

    def side(role: str, tp: int, kv_role: str) -> Side:
        return Side(role, R("0.33.0"), "MoRIIOConnector", tp=tp, heads=64, kv_heads=8, kv_role=kv_role)
    whole = sorted({p.rule for p in families.problems(side("prefill", 4, "kv_producer"),
                                                      side("decode", 6, "kv_consumer"))})
    assert whole == ["tp-ratio[moriio-write]"]  # 0.33.0's default write mode: TP 4 -> 6 cannot be written
    assert out.stdout.strip() == str(whole)

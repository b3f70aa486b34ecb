"""Hover on a TP value: each P/D pair of the hosts that read the file, from the explain model (no rank math here)."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Sequence

from ..explain.compute import explain
from ..explain.markdown import cell
from ..explain.model import DeploymentView, Explanation, PairView, acks_text, rank_rows
from ..finding import Finding
from ..topology.types import Topology
from . import text as tx

# The TP key: `vllm_tensor_parallel_size:` (YAML), `=` (INI), or an instance item's `tensor_parallel_size:`
_TP = re.compile(r"(?:^|[\s{,])((?:vllm_)?tensor_parallel_size)(\s*[:=]\s*)")
RANKS = 16  # rows of a rank map shown; the rest are counted
GROUPS = 4  # distinct pair descriptions shown; the rest are counted
NAMES = 4  # pairs named per description


def tp_at(line: str, character: int) -> str | None:
    """The TP key whose key or value is under the 0-based character of line."""
    for match in _TP.finditer(line):
        value = tx.token(line, match.end() + 1)
        if match.start(1) <= character <= (value[1] if value else match.end(1)):
            return match.group(1)
    return None


def model(topology: Topology, findings: Sequence[Finding], hosts: Collection[str]) -> Explanation:
    """The explain model of only the deployments with an engine on one of hosts (a hover stays cheap at scale)."""
    deps = tuple(d for d in topology.deployments
                 if any(set(e.hosts) & set(hosts) for e in (*d.prefill, *d.decode)))
    return explain(dataclasses.replace(topology, deployments=deps), findings)


def _release(dep: DeploymentView, pair: PairView) -> str:
    """The release whose code maps the ranks, and each side's where the two pin different ones."""
    by_name = {e.name: e.release for e in dep.engines}
    p, d = by_name[pair.prefill], by_name[pair.decode]
    return f"vLLM {pair.release}" if p == d else f"vLLM {pair.release}'s map (prefill pins {p}, decode {d})"


def _status(pair: PairView) -> str:
    if pair.status == "ok":
        return "ok"
    rules = sorted({f.rule for f in pair.findings if f.severity == "error"} or {f.rule for f in pair.findings})
    return "**rejected**" + (f" by {', '.join(f'`{r}`' for r in rules)}" if rules else "")


def _table(pair: PairView) -> list[str]:
    by, other = ("prefill", "decode") if pair.mode == "prefill writes" else ("decode", "prefill")
    rows = rank_rows(pair, by)
    out = [f"| {by} rank | {other} ranks | KV heads |", "|---|---|---|"]
    out += [f"| {rank} | {','.join(map(str, ranks))} | {cell(heads)} |" for rank, ranks, heads in rows[:RANKS]]
    if len(rows) > RANKS:
        out.append(f"| ... | {len(rows) - RANKS} more {by} ranks | |")
    return out


def _body(dep: DeploymentView, pair: PairView) -> tuple[str, ...]:
    """What the hover says of one pair, without its name: pairs saying the same are listed once."""
    how = ", ".join(x for x in (pair.connector or "no connector", pair.mode, _release(dep, pair)) if x)
    head = f"(deployment `{cell(dep.name)}`): {_status(pair)}; {cell(how)}"
    lines = [head + (f"; each prefill rank waits for {acks_text(pair)} per request" if pair.acks is not None else "")]
    if pair.note:
        lines += ["", f"_{cell(pair.note)}_"]
    if pair.links:
        lines += ["", *_table(pair)]
    return tuple(lines)


def describe(expl: Explanation, hosts: Collection[str]) -> str | None:
    """Markdown: every P/D pair with an engine on one of hosts, its status, rank map and acks per prefill rank."""
    said: dict[tuple[str, ...], list[str]] = {}
    counts: dict[tuple[str, ...], int] = {}
    wanted = set(hosts)
    for dep in expl.deployments:
        on = {e.name: e.hosts for e in dep.engines}
        for pair in dep.pairs:  # explain's classes of pairs: one verdict each, never P x D here
            ps, ds = pair.prefill_engines or (pair.prefill,), pair.decode_engines or (pair.decode,)
            mine_p = {p for p in ps if wanted.intersection(on[p])}
            mine_d = [d for d in ds if wanted.intersection(on[d])]
            if not (mine_p or mine_d):
                continue
            body = _body(dep, pair)
            # the pairs with a host here: a prefill here with every decode, a decode here with the other prefills
            counts[body] = counts.get(body, 0) + len(mine_p) * len(ds) + len(mine_d) * (len(ps) - len(mine_p))
            names = said.setdefault(body, [])
            for p in ps:  # the first NAMES of them, in explain --all-pairs order
                if len(names) >= NAMES:
                    break
                names.extend(f"`{cell(p)}` -> `{cell(d)}`" for d in (ds if p in mine_p else mine_d)[:NAMES])
    if not said:
        return None
    count = sum(counts.values())
    out = [(f"**{count} P/D pair{'s' if count != 1 else ''}** with a host that reads this file "
           "(the rank map as `pdlint explain` shows it):")]
    for body, names in list(said.items())[:GROUPS]:
        more = f" and {counts[body] - NAMES} more" if counts[body] > NAMES else ""
        out += ["", f"**{', '.join(names[:NAMES])}**{more} {body[0]}", *body[1:]]
    if len(said) > GROUPS:
        out += ["", (f"... and {sum(counts[b] for b in list(said)[GROUPS:])} more pairs: `pdlint explain "
                     "--all-pairs` lists them all")]
    return "\n".join(out) + "\n"

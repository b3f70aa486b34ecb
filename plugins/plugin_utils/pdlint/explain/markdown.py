"""The explain model as Markdown: summary tables and a Mermaid flowchart of each deployment's rank map."""
from __future__ import annotations

from .model import VERDICTS, DeploymentView, Explanation, PairView, acks_text
from .text import gpus


def code(value: object) -> str:
    """A table cell's code span (`name`): pipes escaped; no entities, a code span shows them verbatim."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def cell(value: object) -> str:
    """A table cell: pipes escaped, and angle brackets, which GitHub would take for HTML (`<vaulted>`)."""
    return str(value).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def label(text: str) -> str:
    """Mermaid label text: quotes and angle brackets as entity codes (Mermaid's #quot; form)."""
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def mermaid(dep: DeploymentView) -> list[str]:
    """flowchart LR: one subgraph per engine with a node per TP rank; KV edges prefill rank -> decode rank."""
    out = ["```mermaid", "flowchart LR"]
    ids = {}
    for i, e in enumerate(dep.engines):
        out.append(f'  subgraph e{i}["{label(f"{e.role} {e.name} (TP {e.tp})")}"]')
        for rank in range(e.tp if isinstance(e.tp, int) else 0):  # a vaulted TP draws no ranks
            ids[(e.name, rank)] = f"e{i}r{rank}"
            out.append(f'    e{i}r{rank}["rank {rank}"]')
        out.append("  end")
    for pair in dep.pairs:
        if pair.status == "rejected" or not pair.links:
            why = "rejected" if pair.status == "rejected" else "no rank map"
            src = next(i for i, e in enumerate(dep.engines) if e.name == pair.prefill)
            dst = next(i for i, e in enumerate(dep.engines) if e.name == pair.decode)
            out.append(f'  e{src} -. "{label(why)}" .-> e{dst}')
            continue
        for link in pair.links:
            a, b = ids[(pair.prefill, link.prefill_rank)], ids[(pair.decode, link.decode_rank)]
            out.append(f'  {a} -- "{label(link.text)}" --> {b}')
    return [*out, "```"]


def deployment(dep: DeploymentView) -> list[str]:
    out = [f"### Deployment `{dep.name}` (vLLM {', '.join(dep.releases)})", "",
           *(f"- model `{code(m.model or '(vllm_model unset)')}` ({cell(', '.join(m.engines))}): {cell(m.text)}"
             for m in dep.models), *([""] if dep.models else []),
           "| role | engine | hosts | TP | PP | DP | connector | GPUs |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {e.role} | `{code(e.name)}` | {cell(', '.join(e.hosts))} | {cell(e.tp)} | {cell(e.pp)} | {cell(e.dp)} | "
            f"{cell(e.connector or '-')} | {cell(gpus(e))} |" for e in dep.engines]
    out += [f"- memory of `{code(e.name)}` (one worker): {cell(e.memory.text)}" for e in dep.engines
            if e.memory is not None]
    out += ["", "| prefill -> decode | status | rank map | acks per prefill rank | findings |", "|---|---|---|---|---|"]
    for p in dep.pairs:
        status = "**rejected**" if p.status == "rejected" else "ok"
        how = p.mode + f" (vLLM {p.release})" if p.mode else cell(p.note or "")
        acks = acks_text(p) or "-"
        rules = ", ".join(f"`{f.rule}`" for f in p.findings) or "-"
        out.append(f"| {_side(p.prefill, p.prefill_engines)} -> {_side(p.decode, p.decode_engines)}"
                   f"{f' ({p.count} pairs)' if p.count > 1 else ''} | {status} | {how} | {acks} | {rules} |")
    out += ["", *mermaid(dep), ""]
    for p in dep.pairs:
        out += why_markdown(p)
    if dep.ports:
        out += ["| host | port | what | instance |", "|---|---|---|---|"]
        out += [f"| {cell(p.host)} | {cell(p.port)} | {cell(p.what)} | {cell(p.instance)} |" for p in dep.ports]
        out.append("")
    findings = [*dep.findings, *(f for e in dep.engines for f in e.findings),
                *(f for p in dep.pairs for f in p.findings)]
    out += [f"- **{f.rule}** ({f.severity}) `{code(f.origin)}`: {cell(f.message)}" for f in sorted(findings)]
    return out + ([""] if findings else [])


def _side(first: str, engines: tuple[str, ...]) -> str:
    """A pair's side in the pairs table: `p1`, or a class's `p1`, `p2` (every engine, one verdict)."""
    return ", ".join(f"`{code(name)}`" for name in (engines or (first,)))


def why_markdown(pair: PairView) -> list[str]:
    """`#### `p` -> `d`: why` and a nested list per dimension (verdicts in bold, sources as code)."""
    if not pair.why:
        return []
    out = [f"#### `{code(pair.prefill)}` -> `{code(pair.decode)}`: why", ""]
    for dim in pair.why:
        out.append(f"- {dim.name}")
        out += [f"  - {f'**{VERDICTS[line.verdict]}**: ' if line.verdict else ''}{cell(line.text)}"
                + (f" `{code(line.source)}`" if line.source else "") for line in dim.lines]
    return [*out, ""]


def render(expl: Explanation, colour: bool = False) -> str:
    out = ["## pdlint explain", ""]
    for dep in expl.deployments:
        out += deployment(dep)
    out += [f"- **{f.rule}** ({f.severity}) `{code(f.origin)}`: {cell(f.message)}" for f in expl.findings]
    out += [f"- mapped: {cell(line)}" for line in expl.mapped]  # the config file's `variables:`
    return "\n".join(out).rstrip("\n") + "\n"

"""The explain model as aligned plain-text tables (100 columns; colour only when asked)."""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ..finding import Finding
from .model import DeploymentView, EngineView, Explanation, PairView, acks_text, rank_rows

WIDTH = 100
_RED, _GREEN, _BOLD, _OFF = "\033[31m", "\033[32m", "\033[1m", "\033[0m"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], indent: int = 4) -> list[str]:
    """Columns padded to their widest cell; the widest column is cut (with ~) so a line fits WIDTH."""
    cells = [[str(c) for c in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    over = indent + sum(widths) + 2 * (len(widths) - 1) - WIDTH
    if over > 0:
        wide = widths.index(max(widths))
        widths[wide] = max(widths[wide] - over, 8)
    out = []
    for r in cells:
        fitted = [c if len(c) <= w else c[:w - 1] + "~" for c, w in zip(r, widths)]
        out.append((" " * indent + "  ".join(c.ljust(w) for c, w in zip(fitted, widths))).rstrip())
    return out


def spans(values: Sequence[str | None]) -> str:
    """'0,1,2,3,6' -> '0-3,6' for numeric device names; others as listed; None as '?'."""
    out: list[str] = []
    run: list[int] = []
    for v in [*values, ""]:
        if v is not None and v.isdigit() and (not run or int(v) == run[-1] + 1):
            run.append(int(v))
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [int(v)] if v is not None and v.isdigit() else []
        if v is None:
            out.append("?")
        elif v and not v.isdigit():
            out.append(v)
    return ",".join(out)


def gpus(engine: EngineView) -> str:
    hosts = sorted({w.host for w in engine.workers})
    return "; ".join(f"{h}: {spans([w.gpu for w in engine.workers if w.host == h])}" for h in hosts)


def workers(engine: EngineView, host: str) -> str:
    """`PP 0: TP 0-7` per DP rank and PP stage a host runs."""
    groups: dict[tuple[int, int], list[str]] = {}
    for w in engine.workers:
        if w.host == host:
            groups.setdefault((w.dp, w.pp), []).append(str(w.tp))
    return "; ".join((f"DP {dp} " if isinstance(engine.dp, int) and engine.dp > 1 else "")
                     + (f"PP {pp} " if isinstance(engine.pp, int) and engine.pp > 1 else "") + "TP "
                     + spans(tps) for (dp, pp), tps in sorted(groups.items()))


def _paint(text: str, code: str, colour: bool) -> str:
    return f"{code}{text}{_OFF}" if colour else text


def _findings(findings: Sequence[Finding], colour: bool, indent: int = 4) -> list[str]:
    out = []
    for f in findings:
        head = _paint(f"{f.rule} ({f.severity})", _RED if f.severity == "error" else _BOLD, colour)
        body = f"{head} {f.message}" + (f" (hint: {f.hint})" if f.hint else "") + f" [{f.origin}]"
        out.extend(textwrap.wrap(body, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * (indent + 2),
                                 break_on_hyphens=False))
    return out


def pair_lines(pair: PairView, colour: bool) -> list[str]:
    status = _paint(pair.status.upper(), _RED, colour) if pair.status == "rejected" else _paint("ok", _GREEN, colour)
    how = ", ".join(x for x in (pair.connector or "no connector", pair.mode, f"vLLM {pair.release}") if x)
    if pair.count == 1:
        out = [f"  pair {pair.prefill} -> {pair.decode}: {status} ({how})"]
    else:  # a class of pairs: one verdict, the first pair's rank map, every engine named
        out = [f"  {pair.count} pairs {_few(pair.prefill_engines or (pair.prefill,))} -> "
               f"{_few(pair.decode_engines or (pair.decode,))}: {status} ({how})"]
        for role, names in (("prefill", pair.prefill_engines), ("decode", pair.decode_engines)):
            if len(names) > 2:  # the heading names two at most
                out.extend(textwrap.wrap(f"{role} ({len(names)}): {', '.join(names)}", WIDTH,
                                         initial_indent="    ", subsequent_indent="      ", break_on_hyphens=False))
    if pair.acks is not None:
        out.append(f"    each prefill rank waits for {acks_text(pair)} per request")
    if pair.note:
        out.extend(textwrap.wrap(pair.note, WIDTH, initial_indent="    ", subsequent_indent="      "))
    if pair.links:
        rows = [(d, ",".join(map(str, ranks)), heads) for d, ranks, heads in rank_rows(pair)]
        out += table(("decode rank", "prefill ranks", "KV heads moved"), rows)
    return out + why_lines(pair, colour) + _findings(pair.findings, colour)


def _few(names: tuple[str, ...]) -> str:
    """`p1`, `p1, p2`, `p1 and 4 more`: a class's side in its heading."""
    return ", ".join(names) if len(names) <= 2 else f"{names[0]} and {len(names) - 1} more"


def why_lines(pair: PairView, colour: bool) -> list[str]:
    """The pair's why-block: a heading per dimension, a wrapped line per fact and verdict (verdicts coloured)."""
    out = []
    for dim in pair.why:
        out.append(f"    {dim.name}")
        for line in dim.lines:
            shown = line.shown
            if line.verdict:
                head, _sep, rest = shown.partition(": ")
                shown = _paint(head, _GREEN if line.verdict == "works" else _RED, colour) + ": " + rest
            out.extend(textwrap.wrap(shown, WIDTH + (len(shown) - len(line.shown)), initial_indent="      ",
                                     subsequent_indent="        ", break_on_hyphens=False))
    return out


def deployment_lines(dep: DeploymentView, colour: bool) -> list[str]:
    out = [_paint(f"deployment {dep.name}", _BOLD, colour) + f" (vLLM {', '.join(dep.releases)})"]
    for m in dep.models:  # three lines: a config.json's path alone may take most of a line
        out += [f"  model {m.model or '(vllm_model unset)'} ({', '.join(m.engines)})", f"    {m.facts}",
                f"    {m.where}"]
    out += table(("role", "engine", "hosts", "TP", "PP", "DP", "nodes", "connector"),
                 [(e.role, e.name, ",".join(e.hosts), e.tp, e.pp, e.dp, e.nnodes, e.connector or "-")
                  for e in dep.engines], indent=2)
    out.append("  GPUs (CUDA devices)")
    out += table(("host", "engine", "devices", "workers (DP/PP/TP ranks)"),
                 [(h, e.name, spans([w.gpu for w in e.workers if w.host == h]), workers(e, h))
                  for e in dep.engines for h in sorted({w.host for w in e.workers})])
    sized = [e for e in dep.engines if e.memory is not None]
    if sized:
        out.append("  memory (one worker)")
        for e in sized:
            out += textwrap.wrap(f"{e.name}: {e.memory.text if e.memory else ''}", WIDTH, initial_indent="    ",
                                 subsequent_indent="      ", break_on_hyphens=False)
    for e in dep.engines:
        if e.findings:
            out.append(f"  engine {e.name}:")
            out += _findings(e.findings, colour)
    for pair in dep.pairs:
        out += pair_lines(pair, colour)
    if dep.ports:
        out.append("  listening ports")
        out += table(("host", "port", "what", "instance"), [(p.host, p.port, p.what, p.instance) for p in dep.ports])
    if dep.findings:
        out.append("  deployment findings")
        out += _findings(dep.findings, colour)
    return out


def render(expl: Explanation, colour: bool = False) -> str:
    out: list[str] = []
    for dep in expl.deployments:
        out += [*deployment_lines(dep, colour), ""]
    if expl.findings:
        out += ["findings outside any deployment", *_findings(expl.findings, colour, 2)]
    if expl.mapped:  # where a value the config file's `variables:` mapping set came from
        out += ["values from the config file's variables: or the playbook:", *(f"  {line}" for line in expl.mapped)]
    return "\n".join(out).rstrip("\n") + "\n"

"""The explain model as one self-contained web page: inline CSS, SVG and script, nothing fetched."""
from __future__ import annotations

from html import escape

from ..finding import Finding
from .model import VERDICTS, DeploymentView, EngineView, Explanation, PairView, acks_text
from .text import gpus

OPEN_UP_TO = 5  # deployments shown expanded; beyond, each is collapsed and the filter box finds them
_ROW, _W, _BOX = 24, 420, 96

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d2330;background:#fff}
h1{font-size:1.4em;margin:0 0 .5em}
details{border:1px solid #c9d1dc;border-radius:6px;margin:.6em 0;padding:.3em .8em}
summary{cursor:pointer;font-weight:600;font-size:1.1em}
.ports summary{font-size:1em}
table{border-collapse:collapse;margin:.4em 0}
th,td{border:1px solid #d8dee6;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#eef2f7}
.rejected{color:#b3261e;font-weight:700}.ok{color:#1e7b34;font-weight:700}
.finding{margin:.2em 0}.error{color:#b3261e}.warning{color:#8a5a00}
.why{margin:.2em 0 .6em}.why h4{margin:.3em 0 0}.why ul{margin:0;padding-left:1.4em}
.why .fails,.why .undetected{color:#b3261e}.why .works{color:#1e7b34}.why code{color:#555;font-size:.9em}
.grid{display:flex;flex-wrap:wrap;gap:3px;margin:.2em 0 .6em}
.gpu{width:5.5em;height:3em;border-radius:4px;font-size:11px;padding:2px;box-sizing:border-box;color:#fff}
.prefill{background:#2f6db5}.decode{background:#7a3fb0}
svg text{font:12px system-ui,sans-serif}
#filter{font-size:1em;padding:4px 8px;width:24em}
"""
SCRIPT = """
document.getElementById('filter').addEventListener('input', function (ev) {
  var q = ev.target.value.toLowerCase();
  document.querySelectorAll('details.deployment').forEach(function (d) {
    var hit = !q || d.textContent.toLowerCase().indexOf(q) >= 0;
    d.style.display = hit ? '' : 'none';
    if (q && hit) { d.open = true; }
  });
});
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _findings(findings: list[Finding] | tuple[Finding, ...]) -> str:
    return "".join(f'<div class="finding {_e(f.severity)}"><b>{_e(f.rule)}</b> ({_e(f.severity)}) '
                   f'<code>{_e(f.origin)}</code>: {_e(f.message)}' + (f" <i>hint: {_e(f.hint)}</i>" if f.hint else "")
                   + "</div>" for f in findings)


def _table(headers: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def rank_graph(pair: PairView, p: EngineView, d: EngineView) -> str:
    """Prefill ranks left, decode ranks right, a line per KV link (labelled with the heads on hover)."""
    ptp, dtp = p.tp, d.tp
    if not isinstance(ptp, int) or not isinstance(dtp, int):
        return ""  # a vaulted TP draws no ranks
    rows = max(ptp, dtp)
    height = rows * _ROW + 30
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" role="img" '
           f'aria-label="rank map {_e(pair.prefill)} to {_e(pair.decode)}">'),
           f'<text x="4" y="14">prefill {_e(p.name)}</text>',
           f'<text x="{_W - _BOX - 4}" y="14">decode {_e(d.name)}</text>']

    def y(rank: int, tp: int) -> float:
        return 30 + (rank + 0.5) * rows * _ROW / tp

    for link in pair.links:
        out.append(f'<line x1="{_BOX + 4}" y1="{y(link.prefill_rank, ptp):.1f}" x2="{_W - _BOX - 4}" '
                   f'y2="{y(link.decode_rank, dtp):.1f}" stroke="#4a5568" stroke-width="1.5">'
                   f'<title>prefill rank {link.prefill_rank} -> decode rank {link.decode_rank}: '
                   f'{_e(link.text)}</title></line>')
    for engine, tp, x, colour in ((p, ptp, 4, "#2f6db5"), (d, dtp, _W - _BOX - 4, "#7a3fb0")):
        for rank in range(tp):
            out.append(f'<g data-engine="{_e(engine.name)}" data-rank="{rank}"><rect x="{x}" '
                       f'y="{y(rank, tp) - 9:.1f}" width="{_BOX}" height="18" rx="4" fill="{colour}"/>'
                       f'<text x="{x + 8}" y="{y(rank, tp) + 4:.1f}" fill="#fff">rank {rank}</text></g>')
    return "".join(out) + "</svg>"


def _pair(pair: PairView, engines: dict[str, EngineView]) -> str:
    how = ", ".join(x for x in (pair.connector or "no connector", pair.mode, f"vLLM {pair.release}") if x)
    acks = f"; {_e(acks_text(pair))} per prefill rank" if pair.acks is not None else ""
    out = [(f'<h3>{_e(pair.prefill)} &rarr; {_e(pair.decode)}: <span class="{_e(pair.status)}">{_e(pair.status)}</span>'
           f" <small>({_e(how)}){acks}</small></h3>")]
    if pair.count > 1:  # a class of pairs: one verdict, the first pair's rank map
        ps, ds = pair.prefill_engines or (pair.prefill,), pair.decode_engines or (pair.decode,)
        out.append(f"<p>{pair.count} pairs, one verdict: prefill {_e(', '.join(ps))}; decode {_e(', '.join(ds))}</p>")
    if pair.note:
        out.append(f"<p>{_e(pair.note)}</p>")
    p, d = engines[pair.prefill], engines[pair.decode]
    if isinstance(p.tp, int) and isinstance(d.tp, int):  # a vaulted TP draws no ranks
        out.append(rank_graph(pair, p, d))
    return "".join(out) + why_html(pair) + _findings(pair.findings)


def _verdict_html(verdict: str) -> str:
    return f"<b>{_e(VERDICTS[verdict])}</b>: " if verdict else ""


def why_html(pair: PairView) -> str:
    """The pair's why-block: a heading and list per dimension, each verdict classed works/fails/undetected."""
    out = []
    for dim in pair.why:
        items = "".join(
            f'<li class="{_e(line.verdict or "fact")}">' + _verdict_html(line.verdict) + _e(line.text)
            + (f" <code>{_e(line.source)}</code>" if line.source else "") + "</li>" for line in dim.lines)
        out.append(f"<h4>{_e(dim.name)}</h4><ul>{items}</ul>")
    return f'<div class="why">{"".join(out)}</div>' if out else ""


def _gpu_grid(dep: DeploymentView) -> str:
    hosts = sorted({w.host for e in dep.engines for w in e.workers})
    out = []
    for host in hosts:
        cells = [(w, e) for e in dep.engines for w in e.workers if w.host == host]
        out.append(f"<div><b>{_e(host)}</b></div><div class=\"grid\">" + "".join(
            f'<div class="gpu {_e(e.role)}" data-engine="{_e(e.name)}" data-tp-rank="{w.tp}" '
            f'title="{_e(e.name)} DP {w.dp} PP {w.pp} TP {w.tp}">GPU {_e(w.gpu or "?")}'
            f"<br>{_e(e.role[0].upper())} TP{w.tp}" + (f" DP{w.dp}" if isinstance(e.dp, int) and e.dp > 1 else "") + "</div>"
            for w, e in sorted(cells, key=lambda c: (c[0].gpu or "", c[1].name))) + "</div>")
    return "".join(out)


def deployment(dep: DeploymentView, is_open: bool) -> str:
    engines = {e.name: e for e in dep.engines}
    rejected = sum(1 for p in dep.pairs if p.status == "rejected")
    badge = f' <span class="rejected">{rejected} rejected</span>' if rejected else ""
    out = [(f'<details class="deployment" data-deployment="{_e(dep.name)}"{" open" if is_open else ""}>'
           f"<summary>{_e(dep.name)} <small>(vLLM {_e(', '.join(dep.releases))}; {len(dep.engines)} engines, "
            f"{len(dep.pairs)} pairs)</small>{badge}</summary>"),
           *(f'<p class="model">model <code>{_e(m.model or "(vllm_model unset)")}</code> '
             f"({_e(', '.join(m.engines))}): {_e(m.text)}</p>" for m in dep.models),
           _table(("role", "engine", "hosts", "TP", "PP", "DP", "connector", "GPUs"),
                  [(e.role, e.name, ", ".join(e.hosts), e.tp, e.pp, e.dp, e.connector or "-", gpus(e))
                   for e in dep.engines]),
           *(f'<p class="memory">memory of <code>{_e(e.name)}</code> (one worker): {_e(e.memory.text)}</p>'
             for e in dep.engines if e.memory is not None),
           "<h3>GPUs</h3>", _gpu_grid(dep), "<h3>Rank maps</h3>"]
    out += [_pair(p, engines) for p in dep.pairs]
    engine_findings = [f for e in dep.engines for f in e.findings]
    if dep.findings or engine_findings:
        out += ["<h3>Findings</h3>", _findings([*engine_findings, *dep.findings])]
    if dep.ports:
        out += [f'<details class="ports"><summary>Listening ports ({len(dep.ports)})</summary>',
                _table(("host", "port", "what", "instance"), [(p.host, p.port, p.what, p.instance) for p in dep.ports]),
                "</details>"]
    return "".join(out) + "</details>"


def render(expl: Explanation, colour: bool = False) -> str:
    is_open = len(expl.deployments) <= OPEN_UP_TO
    body = "".join(deployment(d, is_open) for d in expl.deployments)
    loose = f"<h2>Other findings</h2>{_findings(expl.findings)}" if expl.findings else ""
    if expl.mapped:  # where a value the config file's `variables:` mapping set came from
        loose += ("<h2>Values from the config file's variables:</h2><ul>"
                  + "".join(f"<li>{_e(line)}</li>" for line in expl.mapped) + "</ul>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'\"><title>pdlint explain</title>"
            f"<style>{CSS}</style></head><body><h1>pdlint explain</h1>"
            f'<input id="filter" type="search" placeholder="filter deployments, hosts, rules..." '
            f'aria-label="filter">{body}{loose}<script>{SCRIPT}</script></body></html>\n')

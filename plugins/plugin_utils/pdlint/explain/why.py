"""Why a prefill/decode pair works or not, per dimension (HMA, model kind, PP/DP), in its releases' own terms.

Every verdict is a decision the rules already made: the pair's vllm-layer problems (vllm/connectors/families.py problems, as
rules/pair/pairs.py checked them), each engine's start checks (rules/per_engine/connector.py start_problems, which connector[config]
reports) and the MoRIIO self port collisions port[collision] found. This module only sorts them into dimensions and
adds facts (hma.enabled and hma.reason, hma.needs_hma, model_layers.stage_layers, the connector's PP timeline).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..finding import Finding
from ..rules.per_engine.connector import start_problems
from ..topology.types import Engine, Instance, ModelFacts
from ..vllm import history
from ..vllm.connectors import mooncake, moriio, nixl, registry
from ..vllm.connectors import pair as vpair
from ..vllm.connectors.moriio import config as moriio_config
from ..vllm.connectors.nixl import channel as nixl_channel
from ..vllm.connectors.nixl import pp as nixl_pp
from ..vllm.model import hma
from ..vllm.model import layers as model_layers
from ..vllm.releases import Release
from .model import Dimension, WhyLine

HMA_FIELD = "disable_hybrid_kv_cache_manager"
PARALLEL_FIELDS = frozenset(("pipeline_parallel_size", "data_parallel_size"))
_UNDETECTED = ("does not check", "does not detect")  # how the vllm layer's messages say vLLM has no check
_PP_INDICES = "vllm/distributed/utils.py get_pp_indices"
_MIX_ORDER = ("sliding", "chunked", "mamba", "linear", "full", "none")
_KIND_NAMES = {"full": "full", "sliding": "sliding", "chunked": "chunked local", "mamba": "Mamba", "linear": "linear",
               "none": "no-KV"}


def verdict(message: str) -> str:
    """"undetected" when the message says vLLM has no check (the pair cannot work), else "fails"."""
    return "undetected" if any(words in message for words in _UNDETECTED) else "fails"


def self_collision(f: Finding) -> bool:
    """A port[collision] of one instance's own listeners (MoRIIO PP stages or DP x TP ranks on one port)."""
    return f.rule == "port[collision]" and "the same instance" in f.message


def why(p: Engine, d: Engine, sp: vpair.Side, sd: vpair.Side, problems: Sequence[vpair.Problem],
        findings: Iterable[Finding], own: Sequence[Finding] = ()) -> tuple[Dimension, ...]:
    """The HMA, model-kind and PP/DP blocks of a pair both of whose sides use one connector class, and a "KV
    transfer" block when a pair rule fails it in none of those; findings: the deployment's (its port collisions are
    read); own: the findings explain attached to the pair, the lint's verdict: each error is a line of the block."""
    starts = {role: start_problems(e.lead, sp.release if role == "prefill" else sd.release)
              for role, e in (("prefill", p), ("decode", d))}
    collisions = [f for f in findings if self_collision(f) and any(set(f.hosts) <= set(e.hosts) for e in (p, d))]
    dims = [_hma(p, d, starts), _model(p, d, starts, problems), _parallel(sp, sd, problems, collisions)]
    said = {line.text for dim in dims for line in dim.lines if line.verdict}
    rest = [f for f in own if f.severity == "error" and f.message not in said]
    sources = {pr.message: pr.source for pr in problems}
    handshake = [_line(f, sd.release, sources) for f in rest if f.rule == HMA_RULE]
    if handshake:  # both sides start with their HMA settings, but the handshake compares them: the block fails
        dims[0] = Dimension("HMA", (*(line for line in dims[0].lines if line.verdict != "works"), *handshake))
    other = [_line(f, sd.release, sources) for f in rest if f.rule != HMA_RULE]
    if other:
        dims.append(Dimension("KV transfer", tuple(other)))
    return tuple(dims)


HMA_RULE = "pd-mismatch[hma]"


def _line(f: Finding, release: Release, sources: dict[str, str]) -> WhyLine:
    """A pair rule's finding as a verdict line, citing the vLLM source of the pair problem it reports, else of its
    rule's timeline at the decode's release (NIXL's compatibility hash for what the handshake compares)."""
    source = sources.get(f.message)
    if source is None:
        decided = history.timelines(f.rule)
        timeline = nixl_channel.HASHED if nixl_channel.HASHED in decided else decided[0] if decided else None
        source = timeline.step(release).source if timeline is not None else ""
    return WhyLine(verdict(f.message), f.message, source)


# Pair problems about the model's layer kinds, told by the timeline step that raised them (its source).
_MODEL_SOURCES = frozenset(step.source for step in moriio.HYBRID.steps)


def model_problem(pr: vpair.Problem) -> bool:
    return pr.source in _MODEL_SOURCES


def _start_lines(starts: dict[str, list[tuple[str, str, str, str]]], hma_block: bool) -> list[WhyLine]:
    return [WhyLine(verdict(message), f"{role}: {message}", source)
            for role, found in starts.items() for field, message, _hint, source in found
            if (field == HMA_FIELD) == hma_block]


def _hma(p: Engine, d: Engine, starts: dict[str, list[tuple[str, str, str, str]]]) -> Dimension:
    said = {e.lead.role: (hma.enabled(e.lead), *hma.reason(e.lead)) for e in (p, d)}
    both = said["prefill"] == said["decode"]
    lines = [WhyLine("", f"{'both sides' if both else role}: HMA {'on' if on else 'off'} ({why_so})", source)
             for role, (on, why_so, source) in (list(said.items())[:1] if both else said.items())]
    release = registry.release(p.lead)
    step = hma.UNIFY_SSM.step(release)
    if p.lead.facts.ssm is None:
        lines.append(WhyLine("", "whether the model needs HMA is unknown (its Mamba/SSM layers are unknown)", ""))
    elif hma.needs_hma(p.lead) or hma.needs_hma(d.lead):
        lines.append(WhyLine("", f"the model needs HMA in vLLM {release}: with it off the engine does not start",
                             step.source))
    elif p.lead.facts.ssm:
        lines.append(WhyLine("", f"the model starts with HMA off in vLLM {release}", step.source))
    else:
        lines.append(WhyLine("", "the model does not need HMA (no Mamba/SSM layers; with HMA off sliding-window "
                                 "layers become full attention)", ""))
    verdicts = _start_lines(starts, True)
    return Dimension("HMA", tuple(lines + (verdicts or [WhyLine("works", "both sides start with these HMA "
                                                                         "settings", "")])))


def kind(facts: ModelFacts) -> str:
    """full attention / sliding-window / chunked local attention / Mamba/SSM hybrid / MLA / linear attention
    (unknown when unknown)."""
    kinds = set(facts.layer_kinds or ())
    if facts.mla:
        return "MLA"
    if facts.ssm or "mamba" in kinds:
        return "Mamba/SSM hybrid" + (" (linear attention)" if "linear" in kinds else "")
    if "linear" in kinds:
        return "linear attention"
    if facts.sliding_window or "sliding" in kinds:
        return "sliding-window"
    if "chunked" in kinds:
        return "chunked local attention"
    return "full attention" if facts.layer_kinds or facts.mla is not None else "unknown"


def _mix(kinds: Sequence[str]) -> str:
    """`12 sliding + 4 full`: the kinds other than full attention first, as the model card names them."""
    return " + ".join(f"{kinds.count(k)} {_KIND_NAMES[k]}" for k in _MIX_ORDER if k in kinds)


def stage_lines(inst: Instance, who: str) -> list[WhyLine]:
    """`prefill stage 0: layers 0-11, 6 sliding + 6 full` per PP stage (model_layers.stage_layers)."""
    facts = inst.facts
    if facts.layer_kinds is None:
        return [WhyLine("", f"{who}: the layer kinds are unknown, so is each PP stage's layer mix", "")]
    out, start = [], 0
    for stage in range(inst.pp):
        held = model_layers.stage_layers(facts, inst.pp, stage, inst.env)
        if held is None:
            return [WhyLine("", f"{who}: vLLM refuses the PP partition (VLLM_PP_LAYER_PARTITION)", _PP_INDICES)]
        span = f"layers {start}-{start + len(held) - 1}" if held else "no layers"
        name = f"stage {stage} (both sides)" if who == "both sides" else f"{who} stage {stage}"
        out.append(WhyLine("", f"{name}: {span}, {_mix(held)}", "" if stage else _PP_INDICES))
        start += len(held)
    return out


def _model(p: Engine, d: Engine, starts: dict[str, list[tuple[str, str, str, str]]],
           problems: Sequence[vpair.Problem]) -> Dimension:
    same = p.lead.facts == d.lead.facts
    lines = []
    for e in (p, d) if not same else (p,):
        facts, who = e.lead.facts, "" if same else f"{e.lead.role}: "
        count = facts.layers if facts.layers is not None else len(facts.layer_kinds or ()) or "?"
        lines.append(WhyLine("", f"{who}{kind(facts)}, {count} layers", ""))
    shared = same and p.lead.pp == d.lead.pp and p.lead.env.get("VLLM_PP_LAYER_PARTITION") == \
        d.lead.env.get("VLLM_PP_LAYER_PARTITION")
    lines += stage_lines(p.lead, "both sides") if shared else stage_lines(p.lead, "prefill") + \
        stage_lines(d.lead, "decode")
    verdicts = _start_lines(starts, False) + [WhyLine(verdict(pr.message), pr.message, pr.source)
                                              for pr in problems if model_problem(pr)]
    return Dimension("model kind", tuple(lines + (verdicts or [WhyLine("works", "the connector starts with these "
                                                                                "layer kinds", "")])))


def connector_lines(sp: vpair.Side, sd: vpair.Side) -> list[WhyLine]:
    """What the connector does with PP and DP in each side's release (the timelines the rules read)."""
    family = registry.kind_of(sp.connector)
    if family == "nixl":
        mode = "push" if nixl.is_push(sp) else "pull"
        return [WhyLine("", f"NIXL {mode} in vLLM {rel}: {nixl_pp.PP.step(rel).text}", nixl_pp.PP.step(rel).source)
                for rel in sorted({sp.release, sd.release})]
    if family == "mooncake":
        return [WhyLine("", f"Mooncake in vLLM {rel}: {mooncake.PP.step(rel).text}", mooncake.PP.step(rel).source)
                for rel in sorted({sp.release, sd.release})]
    if family == "moriio":
        mode = "read" if moriio.side_read(sp) and moriio.side_read(sd) else "write"
        collide = moriio_config.SELF_COLLISION.step(sp.release)
        dial = moriio.DIAL.step(sd.release)
        return [WhyLine("", f"MoRIIO ({mode}) in vLLM {sp.release}: every worker listens on handshake_port + "
                            "get_port_offset(dp_rank, tp_rank), the same port on every PP stage", collide.source),
                WhyLine("", f"MoRIIO decode in vLLM {sd.release} {dial.text}", dial.source)]
    return []


def _parallel(sp: vpair.Side, sd: vpair.Side, problems: Sequence[vpair.Problem],
              collisions: Sequence[Finding]) -> Dimension:
    lines = [WhyLine("", f"{s.role}: PP {s.pp}, DP {s.dp}, TP {s.tp}", "") for s in (sp, sd)]
    if max(sp.pp, sd.pp, sp.dp, sd.dp) > 1:  # PP 1 and DP 1: nothing for the connector to split
        lines += connector_lines(sp, sd)
    verdicts = [WhyLine(verdict(pr.message), pr.message, pr.source) for pr in problems  # messages name the side
                if PARALLEL_FIELDS & set(pr.fields) and not model_problem(pr)]
    verdicts += [WhyLine(verdict(f.message), f.message,
                         moriio_config.SELF_COLLISION.step(sp.release).source if "MoRIIO" in f.message else "")
                 for f in collisions]
    works = WhyLine("works", f"PP {sp.pp}/{sd.pp} and DP {sp.dp}/{sd.dp} (prefill/decode) pass the connector's "
                             "checks", "")
    return Dimension("PP/DP", tuple(lines + (verdicts or [works])))

"""`pdlint rules` and `pdlint models`: what pdlint checks and which models it knows."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config import configuration
from ..rule_ids import family
from ..rules import REGISTRY

if TYPE_CHECKING:
    from ..topology.types import ModelFacts


def rules(ids: Sequence[str]) -> int:
    """`pdlint rules [ID|FAMILY|--markdown]`: the rule list, one rule's (or family's) documentation, or the table."""
    if list(ids) == ["--markdown"]:
        from .docs import rule_table

        sys.stdout.write(rule_table())
        return 0
    if not ids:
        for r in REGISTRY.values():
            sys.stdout.write(f"{r.id:34} {r.severity:8} {r.summary}\n")
        return 0
    for rule_id in ids:
        # a family (`gpu`) documents each of its rules
        found = [r for r in REGISTRY.values() if rule_id in (r.id, family(r.id))]
        if not found:
            sys.stderr.write(f"pdlint: error: {configuration.unknown_rule(rule_id)}\n")
            return 2
        from .docs import release_table

        sys.stdout.write("\n".join(f"{r.id} ({r.severity})\n\n{r.doc}\n\n{release_table(r.id)}".rstrip() + "\n"
                                   for r in found))
    return 0


def models(words: Sequence[str]) -> int:
    """`pdlint models [NAME|PATH|ID ...] [--vllm-version V] [--revision R]`: pdlint's table, filtered by NAME; the
    facts of the config.json a PATH (file or model directory) or a cached model ID holds (cli/model_show.py)."""
    from . import model_show

    words, version, revision, problem = model_show.options(words)
    if problem is None and version is not None:
        from ..vllm import releases

        if releases.parse(version) is None:
            problem = f"--vllm-version: {version!r} is not a vLLM release (e.g. 0.32.0; see `pdlint versions`)"
    if problem is not None:
        sys.stderr.write(f"pdlint: error: {problem}\n")
        return 2
    located = [(word, model_show.locate(word, revision)) for word in words]
    code = 0
    for _unused, found in located:
        if found is not None:
            code = max(code, model_show.show(found, version))
    names = [word for word, found in located if found is None]
    if names or not words:
        code = max(code, _table(names))
    return code


def _table(words: Sequence[str]) -> int:
    """The models of pdlint's table matching words (all without words), each with its layers and source."""
    from ..topology.facts import listing
    from ..vllm.model.layers import run_length

    rows = [(name, f, aliases, source) for name, f, aliases, source in listing()
            if not words or any(w.lower() in " ".join((name, *aliases)).lower() for w in words)]
    if not rows:
        sys.stderr.write(f"pdlint: error: no known model matches {' '.join(words)!r} (see `pdlint models`), and no "
                         "config.json was found for it (a file, a model directory, the Hugging Face cache); "
                         "set vllm_model_num_attention_heads, vllm_model_num_kv_heads and vllm_model_is_mla\n")
        return 2
    width = max(len(row[0]) for row in rows)
    sys.stdout.write(f"{'model':{width}}  heads  kv_heads  mla    ssm    layers\n")
    for name, f, aliases, source in rows:
        sys.stdout.write(f"{name:{width}}  {f.heads!s:5}  {f.kv_heads!s:8}  {str(f.mla).lower():5}  "
                         f"{str(f.ssm).lower():5}  {'unknown' if f.layers is None else f.layers}\n")
        sys.stdout.write("".join(f"  also: {alias}\n" for alias in aliases))
        if words:  # one model asked for: its layer mix too (a PP stage's share: vllm/model_layers.stage_layers)
            kinds = run_length(f.layer_kinds) if f.layer_kinds else "unknown"
            sys.stdout.write(f"  layer kinds: {kinds}\n")
            sys.stdout.write(_memory(f))
        sys.stdout.write(f"  source: {source}\n")
    return 0


def _memory(facts: ModelFacts) -> str:
    """The weights and KV bytes per token the memory rules use (vllm/model/memory.py)."""
    from ..vllm.model.memory import GIB, kv_bytes_per_token

    weights = (f"{facts.weight_bytes:,} bytes ({facts.weight_bytes / GIB:.2f} GiB; {facts.weight_source})"
               if facts.weight_bytes else "unknown")
    per_token = kv_bytes_per_token(facts)
    kv = (f"{per_token:,} bytes per token at TP 1 in bf16 ({'one MLA latent' if facts.mla else 'K and V'} per "
          "attention layer)" if per_token else "unknown")
    return f"  weights: {weights}\n  KV cache: {kv}\n"

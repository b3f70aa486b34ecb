"""`pdlint models PATH|ID`: the facts of a config.json, a model directory or a cached model, as a release derives them.

The same lookup `pdlint` uses for vllm_model (load/model_files.py: a directory, then the Hugging Face cache, never
the network) and the same derivation (vllm/model_config.derive) for the release named by --vllm-version (default:
the newest pdlint knows), so what this prints is what the TP and KV-head rules see.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..load import model_files


def options(words: Sequence[str]) -> tuple[list[str], str | None, str | None, str | None]:
    """(the other words, --vllm-version, --revision, why the options are unusable)."""
    rest: list[str] = []
    found: dict[str, str | None] = {"--vllm-version": None, "--revision": None}
    items = iter(words)
    for word in items:
        name, eq, value = word.partition("=")
        if name in found:
            value = value if eq else next(items, "")
            if not value:
                return rest, None, None, f"{name} needs a value"
            found[name] = value
        else:
            rest.append(word)
    return rest, found["--vllm-version"], found["--revision"], None


def locate(word: str, revision: str | None) -> model_files.Found | None:
    """The config.json word names (a file, a directory holding one, a cached model); None when it names none."""
    path = Path(word)
    try:
        if path.is_file():
            return model_files.read_config(path)
    except (OSError, ValueError):
        return None
    found = model_files.find(word, revision, Path.cwd(), model_files.environment())
    return found if found.path is not None else None


def show(found: model_files.Found, version: str | None) -> int:
    """Print the facts of one located config.json; 1 when vLLM would reject it, else 0."""
    from ..vllm import releases
    from ..vllm.model import chunked
    from ..vllm.model import config as model_config
    from ..vllm.model import layers as model_layers

    resolution = releases.resolve(version)
    release = resolution.release or releases.DEFAULT
    if found.error is not None or found.config is None:
        sys.stdout.write(f"{found.path}: {found.error or 'not a JSON object'}\n")
        return 1
    derived = model_config.derive(found.config, release)
    sys.stdout.write(f"{found.path}, as vLLM {release} derives it\n")
    if resolution.note:
        sys.stdout.write(f"  ({resolution.note})\n")
    if derived.error is not None:
        sys.stdout.write(f"  error: {derived.error}\n")
        return 1
    rows = (("model_type", derived.model_type), ("heads", derived.heads), ("kv_heads", derived.kv_heads),
            ("mla", derived.mla), ("sliding_window", derived.sliding_window),
            ("layers", model_layers.num_layers(found.config, release)))
    for name, value in rows:
        shown = "unknown" if value is None and name != "sliding_window" else "none" if value is None else value
        sys.stdout.write(f"  {name:15} {str(shown).lower() if isinstance(value, bool) else shown}\n")
    kinds = model_layers.layer_kinds(found.config, release)
    sys.stdout.write(f"  {'layer_kinds':15} {model_layers.run_length(kinds) if kinds else 'unknown'}\n")
    chunk = chunked.chunk_size(found.config, release)
    if chunk is not None:  # ModelConfig.attention_chunk_size: it decides the hybrid KV cache manager (vllm/model/chunked.py)
        sys.stdout.write(f"  {'attention_chunk_size':15} {chunk}\n")
    sys.stdout.write("".join(f"  from: {how}\n" for how in derived.how))
    return 0

"""pdlint's built-in model table, regenerated from real config.json files with pdlint's own derivation.

    python tools/model_table.py          # rewrite plugins/plugin_utils/pdlint/topology/data/model-attention-facts.json

Each row's facts come from one real config.json: aiconfigurator-core 0.12.0's model_configs (Apache-2.0, PyPI),
or a transformers config class whose defaults are documented to be that model's (read statically from the wheel,
no import), derived by vllm/model_config.derive and vllm/model_layers as the newest release pdlint knows
(releases.NEWEST) derives them. Rows no real config.json is available for keep their numbers, and their source
says so. Aliases and notes are the table's own (kept from the committed file). The wheels are fetched with
`pip download --no-deps` into the cache tests/vllm_source.py uses (CACHE); offline, generate() returns None.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "plugins/plugin_utils/pdlint/topology/data/model-attention-facts.json"
AIC = "aiconfigurator-core==0.12.0"
TRANSFORMERS = "transformers==4.57.1"
_AIC_DIR = "aiconfigurator_core/model_configs"
# row -> the real config.json it is generated from: ("aic", file stem, why it is this model's) or
# ("transformers", module path in the wheel, class, why); rows absent here keep their numbers.
SOURCES: dict[str, tuple[str, ...]] = {
    "meta-llama/Llama-3.1-8B-Instruct": ("aic", "meta-llama--Meta-Llama-3.1-8B", "the base model's; Instruct shares it"),
    "meta-llama/Llama-3.1-70B-Instruct": ("aic", "meta-llama--Meta-Llama-3.1-70B", "the base model's; Instruct shares it"),
    "meta-llama/Llama-3.1-405B-Instruct": ("aic", "meta-llama--Meta-Llama-3.1-405B",
                                           "the base model's; Instruct shares it"),
    "Qwen/Qwen3-0.6B": ("aic", "Qwen--Qwen3-0.6B", ""),
    "Qwen/Qwen3-8B": ("aic", "Qwen--Qwen3-8B", ""),
    "Qwen/Qwen3-32B": ("aic", "Qwen--Qwen3-32B", ""),
    "Qwen/Qwen3-30B-A3B": ("aic", "Qwen--Qwen3-30B-A3B", ""),
    "Qwen/Qwen3-235B-A22B": ("aic", "Qwen--Qwen3-235B-A22B", ""),
    "Qwen/Qwen3.5-35B-A3B": ("aic", "Qwen--Qwen3.5-35B-A3B", ""),
    "Qwen/Qwen3.5-397B-A17B": ("aic", "Qwen--Qwen3.5-397B-A17B", ""),
    "mistralai/Mixtral-8x7B-Instruct-v0.1": ("aic", "mistralai--Mixtral-8x7B-v0.1",
                                             "the base model's; Instruct shares it"),
    "deepseek-ai/DeepSeek-V3": ("aic", "deepseek-ai--DeepSeek-V3", ""),
    "openai/gpt-oss-120b": ("aic", "openai--gpt-oss-120b", ""),
    "openai/gpt-oss-20b": ("aic", "openai--gpt-oss-20b", ""),
    "moonshotai/Kimi-K2-Instruct": ("aic", "moonshotai--Kimi-K2-Instruct", ""),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("aic", "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ""),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": ("aic", "meta-llama--Llama-4-Scout-17B-16E-Instruct", ""),
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": ("aic", "meta-llama--Llama-4-Maverick-17B-128E-Instruct", ""),
    "mistralai/Mistral-7B-v0.1": ("transformers", "transformers/models/mistral/configuration_mistral.py",
                                  "MistralConfig", "its docstring: the defaults are Mistral-7B-v0.1's"),
}
# A row that is new here (not in the committed table) gets these aliases and notes.
NEW_ROWS: dict[str, dict[str, Any]] = {
    "mistralai/Mistral-7B-v0.1": {"aliases": ["mistralai/Mistral-7B-Instruct-v0.1"],
                                  "notes": "Sliding window 4096 on every layer; v0.2 and v0.3 have none."},
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": {
        "aliases": ["meta-llama/Llama-4-Scout-17B-16E"],
        "notes": ("Chunked local attention (attention_chunk_size 8192) on three layers of four: vLLM turns the hybrid "
                  "KV cache manager off for it unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is true.")},
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": {
        "aliases": ["meta-llama/Llama-4-Maverick-17B-128E", "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"],
        "notes": ("Chunked local attention (attention_chunk_size 8192) on three layers of four: vLLM turns the hybrid "
                  "KV cache manager off for it unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is true.")},
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": {
        "notes": "A Mamba hybrid (NemotronH): hybrid_override_pattern spells each layer Mamba, attention or MoE."},
}
_NO_CONFIG = ("no real config.json of this model is available to pdlint (aiconfigurator-core 0.12.0 lacks it, and no "
              "transformers config class has its defaults); numbers copied by hand from: ")
_KEPT = ("aliases", "notes")
WEIGHT_SOURCE = ("the parameter count of the row's config.json times its torch_dtype's bytes (vllm/model/weights.py): "
                 "a lower bound of the checkpoint's safetensors metadata.total_size, whose index file pdlint cannot "
                 "read offline")


def wheel(requirement: str, cache: Path) -> Path | None:
    """The wheel of requirement in cache (fetched once with pip download --no-deps); None offline."""
    folder = cache / requirement.replace("==", "-")
    found = sorted(folder.glob("*.whl"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--disable-pip-version-check",
                        requirement, "-d", str(folder)], capture_output=True, timeout=600, check=False)
        found = sorted(folder.glob("*.whl"))
    return found[0] if found else None


def class_defaults(source: str, klass: str) -> dict[str, Any]:
    """The literal keyword defaults of klass.__init__ in source, and its model_type: the config.json those
    defaults make (a default that is not a literal, such as 4096 * 32, is left out)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == klass:
            found: dict[str, Any] = {}
            for item in node.body:
                if isinstance(item, ast.Assign) and getattr(item.targets[0], "id", "") == "model_type":
                    found["model_type"] = ast.literal_eval(item.value)
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args.args[-len(item.args.defaults):] if item.args.defaults else []
                    for arg, default in zip(args, item.args.defaults):
                        try:
                            found[arg.arg] = ast.literal_eval(default)
                        except ValueError:
                            continue
            return found
    raise LookupError(f"{klass} not in the source")


def configs(cache: Path) -> dict[str, tuple[dict[str, Any], str]] | None:
    """row -> (its config.json, the source to cite); None when a wheel cannot be had."""
    aic, hf = wheel(AIC, cache), wheel(TRANSFORMERS, cache)
    if aic is None or hf is None:
        return None
    found: dict[str, tuple[dict[str, Any], str]] = {}
    with zipfile.ZipFile(aic) as whl_aic, zipfile.ZipFile(hf) as whl_hf:
        for row, spec in SOURCES.items():
            if spec[0] == "aic":
                path = f"{_AIC_DIR}/{spec[1]}_config.json"
                found[row] = (json.loads(whl_aic.read(path)), f"{AIC}:{path}" + (f" ({spec[2]})" if spec[2] else ""))
            else:
                data = class_defaults(whl_hf.read(spec[1]).decode("utf-8"), spec[2])
                found[row] = (data, f"{TRANSFORMERS}:{spec[1]} {spec[2]} defaults ({spec[3]})")
    return found


def _derived(data: dict[str, Any], source: str) -> dict[str, Any]:
    from pdlint.vllm.model import chunked, weights
    from pdlint.vllm.model import config as model_config
    from pdlint.vllm.model import layers as model_layers
    from pdlint.vllm.releases import NEWEST

    facts = model_config.derive(data, NEWEST)
    if facts.error is not None or facts.heads is None or facts.kv_heads is None:
        raise ValueError(f"{source}: vLLM {NEWEST} derives no facts ({facts.error})")
    kinds = model_layers.layer_kinds(data, NEWEST)
    row: dict[str, Any] = {"num_attention_heads": facts.heads, "num_key_value_heads": facts.kv_heads,
                           "mla": bool(facts.mla)}
    if kinds and {"mamba", "linear"} & set(kinds):
        row["hybrid_ssm"] = True
    if facts.sliding_window is not None:
        row["sliding_window"] = facts.sliding_window
    chunk = chunked.chunk_size(data, NEWEST)
    if chunk is not None:
        row["attention_chunk_size"] = chunk
    row["num_layers"] = model_layers.num_layers(data, NEWEST)
    if kinds:
        row["layer_kinds"] = model_layers.run_length(kinds)
    if facts.head_size is not None:
        row["head_size"] = facts.head_size
    if facts.max_len is not None:
        row["max_model_len"] = facts.max_len
    size = weights.weight_bytes(data)
    if size is not None:
        row["weight_bytes"] = size
        row["weight_source"] = WEIGHT_SOURCE
    row["source"] = source
    row["derived_by"] = f"pdlint's derivation as vLLM {NEWEST} (vllm/model_config.derive, vllm/model_layers)"
    return row


def _kept(entry: dict[str, Any]) -> dict[str, Any]:
    """A row without a real config: its numbers as they are; plain transformer layers when nothing says otherwise."""
    row = dict(entry)
    if not row["source"].startswith(_NO_CONFIG):
        row["source"] = _NO_CONFIG + row["source"]
    if "layer_kinds" not in row and row.get("num_layers") and not row.get("hybrid_ssm") and "sliding_window" not in row:
        row["layer_kinds"] = f"full*{row['num_layers']}"  # no sliding window, not hybrid: every layer attention
    return row


def generate(committed: dict[str, dict[str, Any]], cache: Path) -> dict[str, dict[str, Any]] | None:
    """The table regenerated: rows with a real config.json derived, the others kept; None offline."""
    found = configs(cache)
    if found is None:
        return None
    table: dict[str, dict[str, Any]] = {}
    for name in (*committed, *(n for n in SOURCES if n not in committed)):
        if name not in found:
            table[name] = _kept(committed[name])
            continue
        data, source = found[name]
        extra = committed.get(name) or NEW_ROWS.get(name, {})
        row = _derived(data, source)
        table[name] = {**row, **{k: extra[k] for k in _KEPT if k in extra}}
    return table


def text(table: dict[str, dict[str, Any]]) -> str:
    return json.dumps(table, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    from vllm_source import CACHE

    table = generate(json.loads(TABLE.read_text(encoding="utf-8")), CACHE)
    if table is None:
        sys.stderr.write(f"cannot fetch {AIC} or {TRANSFORMERS}\n")
        return 1
    TABLE.write_text(text(table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Where a model's facts come from, first match wins: the config file's `models:` table (facts, or the config.json
it names), config.json in the directory vllm_model names or in the Hugging Face cache, then pdlint's table.

(The inventory's vllm_model_* variables come before all of these: topology/facts.with_inventory.) A config.json
is derived as the instance's vLLM release derives it (vllm/model_config.derive); one vLLM would reject is a
model-facts error at that file, and the model's facts stay unknown: vLLM would not start either. Files are read
here, at the engine's edge, never in rules/ or vllm/; never the network.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.configuration import DEFAULT, Config
from ..finding import Finding, Origin
from ..load import model_files
from ..load.model_files import Files
from ..paths import display
from ..topology import facts
from ..topology.types import ModelFacts
from ..vllm.model import chunked, weights
from ..vllm.model import config as model_config
from ..vllm.model import layers as model_layers
from ..vllm.releases import Release, of_version

if TYPE_CHECKING:  # a config with a `models:` table imports it
    from ..config.models import ModelEntry


def from_config(data: Mapping[str, Any], path: str, release: Release) -> tuple[ModelFacts, str | None, str | None]:
    """The facts release derives from config.json data read from path, the error vLLM would stop with, and why
    the facts are unknown where pdlint cannot tell what vLLM reads (a text config class it has no defaults of)."""
    derived = model_config.derive(data, release)
    if derived.error is not None:
        return ModelFacts(), derived.error, None
    source = f"{path}, as vLLM {release} derives it"
    kinds = model_layers.layer_kinds(data, release)
    found = ModelFacts(heads=derived.heads, kv_heads=derived.kv_heads, mla=derived.mla,
                       # Mamba or linear-attention layers beside attention: a hybrid; anything else stays unknown
                       # (vLLM's is_hybrid is the model class's, in the registry; the table may know it)
                       ssm=True if derived.kv_heads and {"mamba", "linear"} & set(kinds or ()) else
                       False if chunked.plain_llama4(data) else None,
                       sliding_window=derived.sliding_window, layers=model_layers.num_layers(data, release),
                       layer_kinds=kinds, attention_chunk_size=chunked.chunk_size(data, release),
                       head_size=derived.head_size, max_len=derived.max_len, source=source)
    return dataclasses.replace(found, where=facts.where(found, source)), None, derived.unknown


class Lookup:
    """facts.ModelLookup over config's `models:` table, files (None: no file but the table's), pdlint's table.

    Remembers every file it looked at (files: the run cache keys them) and the findings about them (problems).
    """

    def __init__(self, config: Config = DEFAULT, files: Files | None = None) -> None:
        self.config = config
        self.lookup = files
        self.files: dict[str, None] = {}  # ordered set
        self.problems: list[Finding] = []
        self._read: dict[tuple[str, str | None], model_files.Found] = {}  # (vllm_model, revision) -> answer
        self._answers: dict[tuple[str | None, str | None, str], ModelFacts] = {}
        self._named: dict[str, model_files.Found] = {}  # a models: table's config: path -> its file
        self._reported: set[tuple[str, str]] = set()

    def __call__(self, model: str | None, revision: str | None, version: str) -> ModelFacts:
        key = (model, revision, version)
        if key not in self._answers:  # a thousand hosts of one model: one lookup, one derivation
            self._answers[key] = self._answer(model, revision, version)
        return self._answers[key]

    def _answer(self, model: str | None, revision: str | None, version: str) -> ModelFacts:
        release = of_version(version)
        looked: list[str] = []
        found = self._entry(model, release, looked) if model else None
        if found is None and model and self.lookup is not None:
            found = self._config_json(self._find(model, revision), release, looked)
        table = facts.table_lookup(model, revision, version)
        looked.extend(table.looked)
        if found is None:
            return dataclasses.replace(table, looked=tuple(looked))
        return dataclasses.replace(_fill(found, table), looked=tuple(looked))

    def _entry(self, model: str, release: Release, looked: list[str]) -> ModelFacts | None:
        entry: ModelEntry | None = self.config.models.get(model.strip().lower())
        if self.config.models:
            looked.append(f"the models: table of {next(iter(self.config.models.values())).source}")
        if entry is None:
            return None
        base = ModelFacts()
        if entry.config is not None:
            if entry.config not in self._named:  # once per run, however many instances name it
                self._named[entry.config] = model_files.read_config(Path(entry.config))
            read = self._named[entry.config]
            self.files[entry.config] = None
            looked.append(f"config: {read.path}")
            derived = self._config_json(read, release, [])
            if derived is None:
                return ModelFacts()  # the file is unusable (reported); its facts stay unknown
            base = derived
        source = f"the models: table of {entry.source}"
        written = dict(entry.facts)
        sources = {**dict(base.where), **{name: source for name in written}}
        named = sorted(set(sources.values()))
        return dataclasses.replace(base, **written, where=tuple(sources.items()),
                                   source=named[0] if len(named) == 1 else "; ".join(named))

    def _find(self, model: str, revision: str | None) -> model_files.Found:
        key = (model, revision)
        if key not in self._read:
            if self.lookup is None:
                raise AssertionError("a model file is read only with a lookup")
            self._read[key] = model_files.find(model, revision, self.lookup.base, self.lookup.env)
        found = self._read[key]
        self.files.update(dict.fromkeys(found.files))
        return found

    def _config_json(self, read: model_files.Found, release: Release, looked: list[str]) -> ModelFacts | None:
        """Facts from a lookup's answer; None when it found no file; empty facts for a file vLLM rejects."""
        looked.extend(read.looked)
        if read.path is None:
            return None
        if read.error is not None or read.config is None:
            self._problem(read.path, read.error or "not a JSON object")
            return ModelFacts()
        derived, error, unknown = from_config(read.config, read.path, release)
        size, index = model_files.weight_bytes(Path(read.path))
        self.files[index] = None  # the run cache stats it: an index downloaded later changes the answer
        if size is not None and error is None:
            derived = dataclasses.replace(derived, weight_bytes=size, weight_source=f"{index} metadata.total_size")
        elif error is None and weights.weight_bytes(read.config) is not None:  # no index: the parameter count
            derived = dataclasses.replace(derived, weight_bytes=weights.weight_bytes(read.config),
                                          weight_source=f"the parameter count of {read.path} (a lower bound; no "
                                                        f"{model_files.INDEX} beside it)")
        if error is not None:
            self._problem(read.path, error)
        if unknown is not None:  # the warning says why the file it found did not tell
            looked.append(f"{display(Path(read.path))}: {unknown}")
        return derived

    def _problem(self, path: str, message: str) -> None:
        if (path, message) in self._reported:
            return
        self._reported.add((path, message))
        self.problems.append(Finding(
            origin=Origin(display(Path(path))), rule="model-facts", severity="error", message=message,
            hint="fix the model's config.json, or name another one (vllm_model, or config: in the models: table)"))


def _fill(found: ModelFacts, table: ModelFacts) -> ModelFacts:
    """found, with the facts it does not know (a config.json never says whether a model is hybrid) from table."""
    missing = {n: getattr(table, n) for n in (*facts.FACTS, *facts.LAYER_FACTS, *facts.MEMORY_FACTS)
               if getattr(found, n) in (None, "") and getattr(table, n) not in (None, "")}
    if not missing or not found.where:
        return found
    where = (*found.where, *((n, s) for n, s in table.where if n in missing))
    named = list(dict.fromkeys(s for _unused, s in where))
    return dataclasses.replace(found, **missing, where=where, source="; ".join(named))

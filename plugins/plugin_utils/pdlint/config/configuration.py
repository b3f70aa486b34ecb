"""Project configuration as a value: what to select, ignore and re-grade, validated with the key named."""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..contract import VERSION_PATTERN
from ..finding import SEVERITIES, Finding
from ..rule_ids import IDS as REGISTRY
from ..rule_ids import family
from .errors import ConfigError

if TYPE_CHECKING:  # the `models:` and `variables:` parsers are imported by a config that has them
    from .models import ModelEntry
    from .variables import Lines, Mapped

KEYS = ("select", "ignore", "severity", "vllm_version", "strict", "own_variables", "models", "variables", "playbook")


@dataclasses.dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, str] = dataclasses.field(default_factory=dict)
    vllm_version: str | None = None
    strict: bool = False
    source: str | None = None  # the file it came from, for messages and origins
    version_source: str | None = None  # where vllm_version came from when not the file (--vllm-version)
    # glob patterns of vllm_* names that are the role's own: never an argument check or a "did you mean"
    own_variables: tuple[str, ...] = ()
    # the `models:` table (config/models.py), by lower-cased model name
    models: Mapping[str, ModelEntry] = dataclasses.field(default_factory=dict)
    # the `variables:` mapping (config/variables.py): contract variable -> expression over a role's own names
    variables: tuple[Mapped, ...] = ()
    # the playbook whose plays and roles say what each host runs (a path relative to the config file's folder)
    playbook: str | None = None


DEFAULT = Config()
_VERSION = re.compile(VERSION_PATTERN)  # what vllm/releases.py parses, without loading the vllm layer


def families() -> frozenset[str]:
    return frozenset(family(rule_id) for rule_id in REGISTRY)


def is_rule_name(name: str) -> bool:
    """A registered rule id or a rule family (`gpu` for `gpu[count]`)."""
    return name in REGISTRY or name in families()


def _specificity(rule_id: str, names: Iterable[str]) -> int:
    """2 when names list the id itself, 1 when they list its family, else 0."""
    names = set(names)
    return 2 if rule_id in names else 1 if family(rule_id) in names else 0


def selected(rule_id: str, select: Collection[str] | None, ignore: Collection[str]) -> bool:
    """flake8's decision: the most specific of select/ignore wins; on a tie ignore wins; no select = all."""
    chosen = 0.5 if select is None else _specificity(rule_id, select)
    return chosen > _specificity(rule_id, ignore)


def severity_for(rule_id: str, default: str, overrides: Mapping[str, str]) -> str:
    """The overridden severity of a rule: its own entry first, then its family's."""
    return overrides.get(rule_id) or overrides.get(family(rule_id)) or default


def with_notes(notes: Iterable[Finding], findings: Iterable[Finding], config: Config) -> list[Finding]:
    """A run's findings: the loader's file-level notes under config, then the rules' (the engine applied config
    to those already). The CLI, explain, the language server, a run after an edit and the play all report this."""
    return apply(notes, config) + list(findings)


def apply(findings: Iterable[Finding], config: Config) -> list[Finding]:
    """Findings of selected rules, re-graded by the severity overrides (new values, never mutated)."""
    out = []
    for f in findings:
        if not selected(f.rule, config.select, config.ignore):
            continue
        level = severity_for(f.rule, f.severity, config.severity)
        out.append(f if level == f.severity else dataclasses.replace(f, severity=level))
    return out


def names(value: Any, key: str, where: str) -> tuple[str, ...]:
    """A list of rule ids or families (one string is a list of one)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key}: expected a list of rule ids or families")
    unknown = [v for v in value if not is_rule_name(v)]
    if unknown:
        raise ConfigError(f"{where + ': ' if where else ''}{key}: {unknown_rule(unknown[0])}")
    return tuple(value)


def unknown_rule(name: str) -> str:
    """"unknown rule 'tp-raito'; did you mean tp-ratio?" with the closest ids and families."""
    import difflib  # only to suggest a name: a run without a typo never imports it

    close = difflib.get_close_matches(name, sorted({*REGISTRY, *families()}), n=2, cutoff=0.6)
    maybe = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown rule {name!r}{maybe} (see `pdlint rules`)"


def _severity(value: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key}: expected a mapping of rule id to {'/'.join(SEVERITIES)}")
    for name, level in value.items():
        if not isinstance(name, str) or not is_rule_name(name):
            raise ConfigError(f"{where}: {key}: {unknown_rule(str(name))}")
        if level not in SEVERITIES:
            raise ConfigError(f"{where}: {key}.{name}: expected one of {', '.join(SEVERITIES)}, got {level!r}")
    return dict(value)


def _patterns(value: Any, where: str, key: str) -> tuple[str, ...]:
    """own_variables: glob patterns of variable names (one string is a list of one)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key}: expected a list of variable names or glob patterns (\"vllm_container_*\")")
    return tuple(value)


def parse(data: Any, source: str, table: str = "", base: str | None = None, lines: Lines | None = None) -> Config:
    """A Config from the mapping read from source (under table, e.g. `tool.pdlint.`), or ConfigError naming the key;
    base: the config file's folder, which `models:` paths are relative to; lines: where each `variables:` entry's
    value is written (line, column)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: {table.rstrip('.') or 'config'}: expected a mapping of {', '.join(KEYS)}")
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise ConfigError(f"{source}: {table}{unknown[0]}: unknown key (known: {', '.join(KEYS)})")
    version = data.get("vllm_version")
    if version is not None and not (isinstance(version, str) and _VERSION.match(version)):
        raise ConfigError(f"{source}: {table}vllm_version: expected a release such as \"0.32.0\" (see `pdlint versions`), got {version!r}")
    playbook = data.get("playbook")
    if playbook is not None and not (isinstance(playbook, str) and playbook):
        raise ConfigError(f"{source}: {table}playbook: expected the path of a playbook (\"site.yml\"), got {playbook!r}")
    strict = data.get("strict", False)
    if not isinstance(strict, bool):
        raise ConfigError(f"{source}: {table}strict: expected true or false, got {strict!r}")
    return Config(
        own_variables=_patterns(data.get("own_variables") or [], source, f"{table}own_variables"),
        select=names(data["select"], f"{table}select", source) if data.get("select") is not None else None,
        ignore=names(data.get("ignore") or [], f"{table}ignore", source),
        severity=_severity(data.get("severity") or {}, source, f"{table}severity"),
        vllm_version=version, strict=strict, source=source,
        models=_models(data["models"], source, table, base) if data.get("models") is not None else {},
        variables=_variables(data["variables"], source, f"{table}variables", lines)
        if data.get("variables") is not None else (),
        playbook=None if playbook is None else os.path.join(base, playbook) if base else playbook,
    )


def _models(data: Any, source: str, table: str, base: str | None) -> Mapping[str, ModelEntry]:
    from . import models

    return models.parse(data, source, table, base)


def _variables(data: Any, source: str, table: str, lines: Lines | None) -> tuple[Mapped, ...]:
    from . import variables

    return variables.parse(data, source, table, lines)

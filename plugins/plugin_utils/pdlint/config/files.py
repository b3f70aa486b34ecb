"""Finding and reading the configuration: `.pdlint.yaml` or `[tool.pdlint]`, from a directory up to the git root."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..paths import display, git_root
from .configuration import DEFAULT, Config, ConfigError, parse

if TYPE_CHECKING:
    from .variables import Lines

NAMES = (".pdlint.yaml", "pyproject.toml")


def _pyproject_table(path: Path) -> dict[str, Any] | None:
    return _pyproject(path)[0]


def _pyproject(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The [tool.pdlint] table and the file's text."""
    import tomllib  # only when a pyproject.toml is found: the hook's cold start matters

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{display(path)}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    table = data.get("tool", {}).get("pdlint") if isinstance(data.get("tool"), dict) else None
    return table, text


def find(start: Path) -> Path | None:
    """The nearest config file from start up to the git root (start alone outside git).

    In one directory `.pdlint.yaml` wins over pyproject.toml, and a pyproject.toml
    without a [tool.pdlint] table is not a config file.
    """
    start = start.resolve()
    root = git_root(start)
    for directory in (start, *start.parents):
        for name in NAMES:
            candidate = directory / name
            if candidate.is_file() and (name != "pyproject.toml" or _pyproject_table(candidate) is not None):
                return candidate
        if root is None or directory == root:
            return None
    return None


def _toml_lines(text: str) -> Lines:
    from . import variables  # only a config with a `variables:` mapping reads where each entry is

    return variables.toml_lines(text)


def _yaml_lines(text: str) -> Lines:
    from . import variables

    return variables.yaml_lines(text)


def read(path: Path) -> Config:
    """The Config in path, or ConfigError naming the file and the key."""
    shown = display(path)
    if path.name == "pyproject.toml" or path.suffix == ".toml":
        table, text = _pyproject(path)
        if table is None:
            raise ConfigError(f"{shown}: no [tool.pdlint] table")
        lines = _toml_lines(text) if "variables" in table else None
        return parse(table, shown, "tool.pdlint.", str(path.resolve().parent), lines)
    import yaml  # only when a .pdlint.yaml is found: a run answered from the cache does not need it otherwise

    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark is not None else shown
        raise ConfigError(f"{where}: cannot parse: {exc.problem}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{shown}: cannot parse: {exc}".replace("\n", " ")) from None
    lines = _yaml_lines(text) if isinstance(data, dict) and "variables" in data else None
    return parse({} if data is None else data, shown, base=str(path.resolve().parent), lines=lines)


def load(start: Path, explicit: str | None = None) -> Config:
    """The configuration that applies in start: explicit file if given, else the nearest one, else defaults."""
    if explicit is not None:
        return read(Path(explicit))
    found = find(start)
    return DEFAULT if found is None else read(found)

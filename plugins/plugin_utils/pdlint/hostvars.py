"""The loader contract: one host's pdlint variables, each value with its origin."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from .finding import UNKNOWN, Origin

Path = tuple[str | int, ...]


# origins[(name, KEY)] is where the variable's name is written (the value's origin is at (name,)).
KEY = "\x00key"


@dataclasses.dataclass(frozen=True)
class Unresolved:
    """A value that could not be rendered statically (template, vault): never guessed."""

    reason: str
    # a finding says why already (a value vLLM refuses in vllm_args): skipped without the
    # `unresolved` warning
    reported: bool = False


@dataclasses.dataclass(frozen=True)
class HostVars:
    """Resolved variables of one inventory host; origins are keyed by the path to a value."""

    host: str
    values: Mapping[str, Any]
    origins: Mapping[Path, Origin] = dataclasses.field(default_factory=dict)
    secrets: frozenset[Path] = frozenset()  # paths of vault-decrypted values: never printed
    # Ansible's group_names (sorted, `all` aside): the config file's `variables:` mapping reads them
    groups: tuple[str, ...] = ()
    # path -> where a value the mapping set came from ("mapped by .pdlint.yaml:3 from tp (group_vars/p.yml:2)")
    notes: Mapping[Path, str] = dataclasses.field(default_factory=dict)
    # vault-encrypted files this host reads that were not decrypted (no password): any variable it does not set
    # may be set there, so none of them is taken as unset
    hidden: tuple[str, ...] = ()

    def origin(self, *path: str | int) -> Origin:
        """Origin of the value at path, else of the nearest enclosing value that has one."""
        key: Path = tuple(path)
        while key:
            found = self.origins.get(key)
            if found is not None:
                return found
            key = key[:-1]
        return UNKNOWN

    def key_origin(self, name: str) -> Origin:
        """Where the top-level variable's name is written, else its value's origin."""
        return self.origins.get((name, KEY)) or self.origin(name)

    def get(self, *path: str | int) -> Any:
        """The value at path, or None."""
        value: Any = self.values
        for part in path:
            if isinstance(value, Mapping) and isinstance(part, str):
                value = value.get(part)
            elif isinstance(value, list) and isinstance(part, int) and part < len(value):
                value = value[part]
            else:
                return None
        return value


def is_relevant(name: str, keep: frozenset[str] = frozenset()) -> bool:
    """Only these variables are read, kept and rendered: pdlint's, and keep (the names the config file's
    `variables:` mapping reads, launch/mapping.py reads_names())."""
    return name.startswith(("vllm_", "pdlint_")) or name in keep


INSTANCES = "vllm_instances"


def in_item(index: int, path: Path) -> Path:
    """Where a host variable's value (vllm_tensor_parallel_size, ...) sits as item index of vllm_instances, whose
    items name the variables without the vllm_ prefix: a front-end that makes several engines of one host."""
    return (INSTANCES, index, str(path[0]).removeprefix("vllm_"), *path[1:])


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, value) of each scalar inside value, a variable's mappings, lists and tuples walked, in order."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def is_template(text: str) -> bool:
    """Whether Ansible would render text: any Jinja start string, comments included (they render to nothing)."""
    return "{{" in text or "{%" in text or "{#" in text


T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """Results keyed by the identity of the objects they were made from, with a plain hashable beside them: the
    loaders hand every host of a group the group's value objects, so a result made for one host's objects is the
    result for all of them. Each entry holds its objects, so an id is never taken for another object's while the
    entry lives. limit: entries kept before the memo starts over (None: unbounded, one run's worth)."""

    __slots__ = ("entries", "limit")

    def __init__(self, limit: int | None = None) -> None:
        self.entries: dict[tuple[tuple[int, ...], Hashable], tuple[tuple[object, ...], T]] = {}
        self.limit = limit

    def get(self, objects: tuple[object, ...], plain: Hashable = None) -> tuple[T] | None:
        """(the result,) made from these very objects (and plain), or None."""
        entry = self.entries.get((tuple(map(id, objects)), plain))
        if entry is None or any(a is not b for a, b in zip(entry[0], objects, strict=True)):
            return None
        return (entry[1],)

    def put(self, objects: tuple[object, ...], result: T, plain: Hashable = None) -> T:
        if self.limit is not None and len(self.entries) >= self.limit:
            self.entries.clear()
        self.entries[(tuple(map(id, objects)), plain)] = (objects, result)
        return result


class Profiles(Generic[T]):
    """Results of work done once per shared profile: the loaders hand hosts of one group chain without variables of
    their own one values dict and one origins dict, so such hosts differ in their name alone. A profile is those
    two dicts (by identity) and plain(hv), what else the work reads (default: which variables are hidden); each
    entry holds the first host it was made for."""

    def __init__(self, plain: Callable[[HostVars], Hashable] | None = None) -> None:
        self.plain = plain or (lambda hv: hv.hidden)
        self.made: IdentityMemo[tuple[HostVars, T]] = IdentityMemo()

    def get(self, hv: HostVars) -> tuple[HostVars, T] | None:
        """(the host it was made for, the result) for hv's profile, if made."""
        found = self.made.get((hv.values, hv.origins), self.plain(hv))
        return found[0] if found is not None else None

    def put(self, hv: HostVars, result: T) -> T:
        self.made.put((hv.values, hv.origins), (hv, result), self.plain(hv))
        return result

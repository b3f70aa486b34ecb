"""Where a role named in a play is found: a collection's roles by FQCN (`ns.coll.role`), then the playbook's
`roles/` folder and the playbook's own folder, as ansible-core's RoleDefinition._load_role_path searches them.

Collections are those installed next to the project: `collections/ansible_collections/NS/COLL/roles/NAME` beside
the playbook (ansible-core adds that folder first), then each path of `collections_path` (or the older
`collections_paths`) in an ansible.cfg next to the playbook, relative to that file. A play's `collections:` keyword
lets a short name find a collection's role, each collection in order before the folders; a collection role's own
dependencies look in its collection first. Paths outside the project (~/.ansible/collections, the system's) are
not searched: a role found only there is the clear not-found error.
"""
from __future__ import annotations

import configparser
import dataclasses
import os
import re

_FQCN = re.compile(r"^(\w+)\.(\w+)\.(\w+)$")
_IMPLICIT = ("ansible.builtin", "ansible.legacy")


@dataclasses.dataclass(frozen=True)
class Roots:
    directory: str  # the playbook's folder
    collection_paths: tuple[str, ...]
    collections: tuple[str, ...] = ()  # the play's `collections:` keyword (a collection role's own first)

    def within(self, collection: str) -> Roots:
        """The roots a role of collection searches for its dependencies: its own collection first."""
        if not collection:
            return self
        return dataclasses.replace(self, collections=(collection, *(c for c in self.collections if c != collection)))


def roots(directory: str, collections: object = None) -> Roots:
    """The roots of a play in directory, with its `collections:` keyword (a list of `ns.coll`)."""
    paths = [os.path.join(directory, "collections")]
    config = os.path.join(directory, "ansible.cfg")
    if os.path.isfile(config):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(config, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            parser = configparser.ConfigParser(interpolation=None)
        written = parser.get("defaults", "collections_path", fallback=None) or \
            parser.get("defaults", "collections_paths", fallback=None) or ""
        for part in written.split(os.pathsep):
            if part.strip():
                paths.append(os.path.join(directory, os.path.expanduser(part.strip())))
    named = tuple(str(c) for c in collections if isinstance(c, str)) if isinstance(collections, list) else ()
    return Roots(directory, tuple(paths), named)


def _in_collection(namespace: str, collection: str, role: str, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        base = path if os.path.basename(os.path.normpath(path)) == "ansible_collections" else \
            os.path.join(path, "ansible_collections")
        candidate = os.path.join(base, namespace, collection, "roles", role)
        if os.path.isdir(candidate):
            return candidate
    return None


def find(name: str, where: Roots) -> tuple[str, str] | str:
    """(the role's folder, its collection or ""), or the message saying where it was looked for."""
    full = _FQCN.match(name)
    if full is not None:
        found = _in_collection(full.group(1), full.group(2), full.group(3), where.collection_paths)
        if found is not None:
            return found, f"{full.group(1)}.{full.group(2)}"
    else:
        for collection in where.collections:
            parts = collection.split(".")
            if collection in _IMPLICIT or len(parts) != 2:
                continue
            found = _in_collection(parts[0], parts[1], name, where.collection_paths)
            if found is not None:
                return found, collection
    for candidate in (os.path.join(where.directory, "roles", name), os.path.join(where.directory, name)):
        if os.path.isdir(candidate):
            return candidate, ""
    if full is not None:
        searched = ", ".join(os.path.join(p, "ansible_collections") if os.path.basename(os.path.normpath(p))
                             != "ansible_collections" else p for p in where.collection_paths)
        return f"role {name!r} not found in the collections next to the playbook ({searched}) nor in " \
               f"{os.path.join(where.directory, 'roles')}"
    return f"role {name!r} not found in {os.path.join(where.directory, 'roles')}"

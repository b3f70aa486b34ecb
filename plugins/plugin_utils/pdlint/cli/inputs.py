"""What a pdlint run reads: its configuration, the inventories its arguments name, and each one's hosts."""
from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import files as configfile
from ..config.configuration import Config, names
from ..finding import Finding
from ..hostvars import HostVars
from ..load.errors import no_hosts
from ..load.preflight import guard
from ..load.preflight.layout import VARS_DIRS, ignored


def inventory_for(path: str) -> str:
    """The inventory a path belongs to: a group_vars/host_vars file names the directory above it, and so does a file
    Ansible skips in an inventory directory (README.md, notes.txt, .gitignore: pre-commit passes every changed file
    under inventory/, and none of these is an inventory source)."""
    p = Path(path)
    for parent in (p, *p.parents):
        if parent.name in VARS_DIRS:
            return str(parent.parent) if str(parent.parent) else "."
    if ignored(p.name) and p.is_file():
        return str(p.parent) if str(p.parent) else "."
    return path


def _default_inventory() -> list[str]:
    from ansible import constants as C  # reads ansible.cfg the Ansible way (after safety.configure)

    return [str(s) for s in C.DEFAULT_HOST_LIST]


def inventories(args: argparse.Namespace) -> list[list[str]]:
    """Inventories to check: all -i sources as one, and each PATH's inventory on its own, once.

    Paths that name the same inventory (hosts.yml and a host_vars file beside it, as pre-commit passes
    them; a directory and a file in it) are one inventory: checking it twice would report each finding twice.
    """
    given = list(args.inventory)
    sources = [(inventory_for(path), inventory_for(path) != path) for path in args.paths]
    real = {s: os.path.realpath(s) for s, _unused in sources + [(g, False) for g in given] if "," not in s}
    named = [s for s, from_vars in sources if not from_vars] + given  # not just implied by a vars file
    dirs = {real[s] for s in named if s in real and os.path.isdir(real[s])}
    files = {os.path.dirname(real[s]) for s in named if s in real and not os.path.isdir(real[s])}
    groups = [given] if given else []
    seen = {real[g] for g in given if g in real}
    for source, from_vars in sources:
        where = real.get(source)
        if where is not None:
            if where in seen or (where not in dirs and os.path.dirname(where) in dirs):
                continue  # checked already, or a file of a directory that is checked whole
            if from_vars and where in files:
                continue  # a vars file beside an inventory file that is checked (Ansible reads its vars)
            seen.add(where)
        groups.append([source])
    return groups or [_default_inventory()]


def config_from(args: argparse.Namespace) -> Config:
    """The config file's settings, overridden by the command line's."""
    config = configfile.load(Path.cwd(), args.config)
    if args.select is not None:
        config = dataclasses.replace(config, select=names(args.select.split(","), "--select", ""))
    if args.ignore is not None:
        config = dataclasses.replace(config, ignore=names(args.ignore.split(","), "--ignore", ""))
    if args.strict is not None:
        config = dataclasses.replace(config, strict=args.strict)
    if getattr(args, "playbook", None) is not None:  # relative to the working directory, as -i is
        config = dataclasses.replace(config, playbook=args.playbook)
    if args.vllm_version is not None and config.vllm_version is None:  # the inventory and config file come first
        config = dataclasses.replace(config, vllm_version=args.vllm_version, version_source="--vllm-version")
    return config


def load_options(args: argparse.Namespace) -> dict[str, Any]:
    """select.load's settings from the loading options (cli/options.py loading()): read once, for pdlint and
    pdlint explain alike."""
    return {"loader": args.loader, "allow_lookups": args.allow_lookups, "allow_plugins": args.allow_inventory_plugins,
            "limits": guard.Limits(max_file_bytes=args.max_file_size),
            "vault_password_file": args.vault_password_file}


def load_group(args: argparse.Namespace, sources: list[str], notes: list[Finding],
               fail: Callable[[list[Finding]], object],
               keep_names: frozenset[str] = frozenset()) -> list[HostVars] | None:
    """One inventory's hosts as pdlint loads them; None after passing fail() the findings that make it unusable.
    keep_names: what the config file's `variables:` mapping reads (launch/mapping.py keep_names())."""
    from ..load import select
    from ..load.errors import LoadError

    try:
        loaded = select.load(sources, **load_options(args), notes=notes, keep_names=keep_names)
    except LoadError as exc:
        fail([exc.finding])
        return None
    if not loaded:
        fail([*notes, no_hosts(sources)])
        return None
    return loaded


def playbook_of(config: Config) -> Any:
    """The playbook the run reads (playbook/project.py Project), None without one. Raises LoadError (exit 2)."""
    if not config.playbook:
        return None
    from ..playbook import apply as playbook

    return playbook.project_of(config.playbook)


def with_playbook(loaded: list[HostVars], project: Any, notes: list[Finding],
                  allow_lookups: bool = False) -> list[HostVars]:
    """The hosts as the playbook launches them (unchanged without one); its findings join notes. allow_lookups:
    --allow-lookups, which renders the playbook's lookups as it renders the inventory's."""
    if project is None:
        return loaded
    from ..playbook import apply as playbook

    launched = playbook.apply(loaded, project, allow_lookups)
    notes.extend(launched.findings)
    return launched.hosts


def manifest_groups(args: argparse.Namespace, groups: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """(the Kubernetes manifest files the PATHs name, the inventories left): every manifest path of one run is one
    set of manifests (their pods are paired across files); -i sources are always inventories. Raises LoadError for a
    folder that holds manifests and an inventory."""
    if not args.paths:
        return [], groups
    from ..kubernetes.detect import looks_inventory, manifest_files

    files: list[str] = []
    left: list[list[str]] = []
    folders = getattr(args, "manifest_folders", False)
    for group in groups:
        named = len(group) == 1 and group[0] in args.paths
        found = manifest_files(group[0]) if named else None
        if named and folders and os.path.isfile(group[0]):
            if found is None and not looks_inventory(group[0]):
                continue  # the hook passes every changed YAML file: one that is no manifest is not an inventory
            if found is not None:
                found = manifest_files(os.path.dirname(group[0]) or ".")
        if found is None:
            left.append(group)
        else:
            files += [f for f in found if f not in files]
    return files, left


class Unusable(Exception):
    """The run cannot start: the config file or the inventories named are unusable (the message says why)."""


def prepare(args: argparse.Namespace, command: str = "pdlint") -> tuple[Config, list[list[str]]]:
    """The configuration and the inventories of a run (ansible-core made safe first); Unusable says why not."""
    from ..config.configuration import ConfigError
    from ..load.preflight import safety

    safety.configure(args.allow_inventory_plugins)  # before anything imports ansible-core
    try:
        config = config_from(args)
    except ConfigError as exc:
        raise Unusable(str(exc)) from None
    groups = inventories(args)
    why = unusable(args, groups, command)
    if why:
        raise Unusable(why)
    return config, groups


def unusable(args: argparse.Namespace, groups: list[list[str]], command: str = "pdlint") -> str | None:
    """Why the inventories named cannot be read (a path that does not exist), as an error message; else None."""
    missing = [s for g in groups for s in g if "," not in s and not os.path.exists(s)]
    if missing and not (args.paths or args.inventory):
        return (f"no inventory given, and Ansible's configured inventory ({missing[0]}) does not exist\n"
                f"  hint: pass the inventory directory or file, e.g. `{command} inventory/`, or `-i SOURCE`, "
                "or set `inventory =` in ansible.cfg")
    if missing:
        return f"{missing[0]}: no such file or directory"
    return None

"""`pdlint explain`: inventories loaded exactly as `pdlint` loads them, the explain model out in one format."""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..config import configuration
from ..engine import core as engine
from ..explain.compute import explain as compute
from ..explain.compute import mapped_lines
from ..explain.formats import FORMATS
from ..explain.model import Explanation
from ..finding import Finding
from ..hostvars import HostVars
from ..report import reporters
from .options import UNUSED_BY_EXPLAIN


def _parser() -> argparse.ArgumentParser:
    from .options import parser as lint_parser

    ap = lint_parser("pdlint explain", sorted(FORMATS), "Show the topology vLLM will build from the inventory: "
                     "engines and GPUs, the rank map of every prefill/decode pair, listening ports, findings.",
                     "output format (default: text)", lint=False)
    ap.add_argument("--deployment", action="append", default=[], metavar="NAME",
                    help="explain only this deployment (repeatable)")
    ap.add_argument("--all-pairs", action="store_true",
                    help="list every prefill/decode engine pair; by default pairs that the rules judge as one "
                         "(engines alike in all a pair rule reads) are shown once, as a class naming its engines")
    ap.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    return ap


def model(args: argparse.Namespace) -> Explanation | int:
    """The explain model of every inventory named, or exit code 2 after saying why there is none."""
    from ..kubernetes.wording import worded
    from ..launch.mapping import keep_names
    from ..load.errors import LoadError
    from ..load.model_files import Files
    from .inputs import Unusable, load_group, manifest_groups, playbook_of, prepare, with_playbook

    try:
        config, groups = prepare(args, "pdlint explain")
    except Unusable as exc:
        sys.stderr.write(f"pdlint: error: {exc}\n")
        return 2
    try:
        project = playbook_of(config)
    except LoadError as exc:
        sys.stderr.write(reporters.text([exc.finding]))
        return 2
    kept = keep_names(config.variables)
    if project is not None:
        from ..playbook.apply import names_read

        kept |= names_read(project)
    parts = []
    sets: list[tuple[list[str], list[HostVars], list[Finding], bool]] = []  # (sources, hosts, notes, manifests)
    try:
        manifests, groups = manifest_groups(args, groups)
        if manifests:
            read = _manifest_hosts(args, manifests)
            sets.append((manifests, read.hosts, list(read.findings), True))
    except LoadError as exc:
        sys.stderr.write(reporters.text([exc.finding]))
        return 2
    for sources in groups:
        notes: list[Finding] = []
        loaded = load_group(args, sources, notes, lambda found: sys.stderr.write(reporters.text(found)), kept)
        if loaded is None:
            return 2
        sets.append((sources, with_playbook(loaded, project, notes, args.allow_lookups), notes, False))
    for sources, loaded, notes, manifest in sets:
        result = engine.lint(loaded, config, Files.of(sources))
        own = worded(result.findings) if manifest else result.findings
        found = sorted(configuration.with_notes(result.settled(notes), own, config))
        shown = compute(result.topology, found, loaded, args.all_pairs)
        parts.append(dataclasses.replace(shown, mapped=mapped_lines(result.hosts)))
    return Explanation(tuple(d for p in parts for d in p.deployments), tuple(f for p in parts for f in p.findings),
                       tuple(line for p in parts for line in p.mapped))


def _manifest_hosts(args: argparse.Namespace, files: list[str]) -> Any:
    """The hosts of a set of Kubernetes manifests and the findings on reading them (kubernetes/read.py Manifests),
    as `pdlint` reads them. Raises LoadError."""
    from ..kubernetes import read as kubernetes
    from ..load.preflight import guard

    return kubernetes.load(files, guard.Limits(max_file_bytes=args.max_file_size))


def only(expl: Explanation, names: Sequence[str]) -> Explanation | str:
    """The named deployments (and no loose findings), or why not."""
    known = {d.name for d in expl.deployments}
    unknown = [n for n in names if n not in known]
    if unknown:
        return f"no deployment {unknown[0]!r} (known: {', '.join(sorted(known)) or 'none'})"
    return dataclasses.replace(expl, deployments=tuple(d for d in expl.deployments if d.name in names), findings=())


def write(path: str, document: str) -> str | None:
    """Write document to path; why not (a missing folder, a directory, no permission), as a message, else None."""
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(document)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or type(exc).__name__}"
    return None


def explain(argv: Sequence[str]) -> int:
    """Exit 0 with the explanation (findings are shown, not judged), 2 on unusable input or usage."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    for dest in UNUSED_BY_EXPLAIN:  # accepted, so one option set serves both commands; said, so nobody relies on it
        if getattr(args, dest):
            flag = "--" + dest.replace("_", "-")
            sys.stderr.write(f"pdlint explain: note: {flag} is not used by explain (it shows every finding and "
                             "exits 0)\n")
    found = model(args)
    if isinstance(found, int):
        return found
    if args.deployment:
        picked = only(found, args.deployment)
        if isinstance(picked, str):
            sys.stderr.write(f"pdlint: error: {picked}\n")
            return 2
        found = picked
    fmt = args.format or "text"
    colour = fmt == "text" and not args.output and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    document = FORMATS[fmt](found, colour)
    if args.output:
        why = write(args.output, document)
        if why:
            sys.stderr.write(f"pdlint: error: {why}\n")
            return 2
    else:
        sys.stdout.write(document)
    return 0

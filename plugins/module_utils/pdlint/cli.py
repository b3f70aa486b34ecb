"""The `pdlint` command: paths or -i sources in, findings out, exit 0/1/2."""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from . import NEWEST_VLLM, __version__, engine, report, schema
from .finding import Finding
from .rules import REGISTRY

_VARS_DIRS = ("group_vars", "host_vars")


def inventory_for(path: str) -> str:
    """The inventory a path belongs to: a group_vars/host_vars file names the directory above it."""
    p = Path(path)
    for parent in (p, *p.parents):
        if parent.name in _VARS_DIRS:
            return str(parent.parent) if str(parent.parent) else "."
    return path


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pdlint", description="Lint vLLM prefill/decode topologies in Ansible inventories.",
                                 epilog="Also: `pdlint rules [ID]` documents the rules; `pdlint schema` prints the JSON Schema.")
    ap.add_argument("paths", nargs="*", metavar="PATH", help="inventory file or directory, or any file inside one")
    ap.add_argument("-i", "--inventory", action="append", default=[], metavar="SOURCE",
                    help="inventory source, as in Ansible (repeatable; together they form one inventory)")
    ap.add_argument("-f", "--format", choices=sorted(report.REPORTERS), default="text")
    ap.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    ap.add_argument("--allow-lookups", action="store_true",
                    help="render Jinja lookups (runs whatever they run: only for trusted inventories)")
    ap.add_argument("--loader", choices=("fast", "ansible"), default="fast",
                    help="inventory loader: fast (default; falls back to ansible when it must) or ansible-core's")
    ap.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    ap.add_argument("--version", action="version", version=f"pdlint {__version__} (vLLM rules: {NEWEST_VLLM})")
    return ap


def _default_inventory() -> list[str]:
    from .load import reference

    reference.configure()
    from ansible import constants as C  # reads ansible.cfg the Ansible way

    return [str(s) for s in C.DEFAULT_HOST_LIST]


def _groups(args: argparse.Namespace) -> list[list[str]]:
    """Inventories to check: all -i sources as one, and each PATH's inventory on its own."""
    groups = [list(args.inventory)] if args.inventory else []
    seen: set[str] = set()
    for path in args.paths:
        source = inventory_for(path)
        if source not in seen:
            seen.add(source)
            groups.append([source])
    return groups or [_default_inventory()]


def _rules(ids: Sequence[str]) -> int:
    if list(ids) == ["--markdown"]:
        from .docs import rule_table

        sys.stdout.write(rule_table())
        return 0
    if not ids:
        for r in REGISTRY.values():
            sys.stdout.write(f"{r.id:34} {r.severity:8} {r.summary}\n")
        return 0
    for rule_id in ids:
        r = REGISTRY.get(rule_id)
        if r is None:
            sys.stderr.write(f"pdlint: error: no rule {rule_id!r} (see `pdlint rules`)\n")
            return 2
        sys.stdout.write(f"{r.id} ({r.severity})\n\n{r.doc}\n")
    return 0


def _lint(args: argparse.Namespace) -> int:
    from .load import select
    from .load.preflight import LoadError

    started = time.perf_counter()
    groups = _groups(args)
    missing = [s for g in groups for s in g if "," not in s and not os.path.exists(s)]
    if missing:
        sys.stderr.write(f"pdlint: error: {missing[0]}: no such file or directory\n")
        return 2
    findings: list[Finding] = []
    hosts = deployments = 0
    for sources in groups:
        try:
            loaded = select.load(sources, loader=args.loader, allow_lookups=args.allow_lookups)
        except LoadError as exc:
            sys.stdout.write(report.REPORTERS[args.format]([exc.finding]))
            return 2
        found, topology = engine.run(loaded)
        findings.extend(found)
        hosts += len(loaded)
        deployments += len(topology.deployments)
    findings.sort()
    sys.stdout.write(report.REPORTERS[args.format](findings))
    if args.format == "text":
        sys.stdout.write(report.summary(findings, hosts, deployments, time.perf_counter() - started))
    failing = ("error", "warning") if args.strict else ("error",)
    return 1 if any(f.severity in failing for f in findings) else 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        if argv and argv[0] == "rules" and not os.path.exists("rules"):
            return _rules(argv[1:])
        if argv and argv[0] == "schema" and not os.path.exists("schema"):
            sys.stdout.write(schema.dumps())
            return 0
        try:
            args = _parser().parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
            return int(exc.code or 0)
        return _lint(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - no traceback reaches the user unless asked
        if debug:
            raise
        sys.stderr.write(f"pdlint: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

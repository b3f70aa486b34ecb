"""The `pdlint` command: paths or -i sources in, findings out, exit 0/1/2."""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import NEWEST_VLLM
from ..cache.outcome import Outcome, stamp, watch
from ..config import configuration
from ..config.configuration import Config
from ..finding import Finding
from ..load.errors import no_hosts
from ..load.model_files import Files
from ..load.preflight import guard
from ..load.preflight.gc_pause import gc_paused
from ..load.preflight.layout import absolute_sources
from ..report import reporters
from . import commands, pipe
from .inputs import Unusable, inventory_for, load_options, manifest_groups, playbook_of, prepare, with_playbook  # noqa: F401 - inventory_for: the hook's entry point
from .options import parser

if TYPE_CHECKING:
    from ..cache.runs import Entry


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


class _NoHosts(Exception):
    """The inventory has no hosts."""


def _entry(args: argparse.Namespace, sources: list[str], config: Config) -> Entry | None:
    """The cache entry of one inventory's check (None: --no-cache, PDLINT_NO_CACHE, or not keyable)."""
    if args.no_cache or config.playbook:  # a playbook's files are not in the key: its run is not cached
        return None
    # the cache's modules (fingerprints, hashing, the store) only for a run that has a cache
    from ..cache import runs, store

    if store.disabled():
        return None
    vault = args.vault_password_file or os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    settings = (args.loader, args.allow_lookups, args.allow_inventory_plugins, args.max_file_size,
                args.vault_password_file, repr(config), stamp(vault))
    return runs.entry(absolute_sources(sources), settings,
                      guard.Limits(max_file_bytes=args.max_file_size))


def _outcome(args: argparse.Namespace, sources: list[str], config: Config, notes: list[Finding],
             entry: Entry | None) -> Outcome:
    """Load and check one inventory (with a cache entry: only what an edit touched, else with the on-disk per-file
    memo). Raises LoadError, _NoHosts."""
    from ..load import select

    said: list[str] = []  # the loader's informational lines, kept so a cached run repeats them
    limits = guard.Limits(max_file_bytes=args.max_file_size)
    static = not (args.allow_lookups or args.allow_inventory_plugins)
    kept: frozenset[str] = frozenset()  # the names the `variables:` mapping reads: the loaders keep them too
    if config.variables:
        from ..launch.mapping import keep_names

        kept = keep_names(config.variables)
    project = playbook_of(config)
    if project is not None:
        from ..playbook.apply import names_read

        kept |= names_read(project)
    # reloading some hosts (incremental) reads pdlint's names only: with a mapping, the whole inventory is loaded
    reusable = entry is not None and static and args.loader == "fast" and not args.vault_password_file and not kept
    keep = None
    if reusable:
        from ..cache import incremental
        from ..load.fast import loader as fast

        again = incremental.outcome(entry, sources, config, limits, _files(sources))
        if again is not None:
            return again
        keep = fast.Kept()
    memo = None
    if entry is not None and static:
        from ..cache import filememo

        memo = filememo.on_disk(absolute_sources(sources))
    loaded = select.load(sources, **load_options(args), notes=notes, note=said.append, memo=memo, keep=keep,
                         keep_names=kept)
    for text in said:
        sys.stderr.write(f"pdlint: info: {text}\n")
    if not loaded:
        raise _NoHosts
    loaded = with_playbook(loaded, project, notes, args.allow_lookups)
    # the rules and the vllm layer, imported only when a run is not answered from the cache
    from ..engine import core as engine

    result = engine.lint(loaded, config, _files(sources))
    watched = watch(result.model_files)
    state = None
    if keep is not None and not said:
        from ..cache import incremental

        state = incremental.state(keep, loaded, result.found, result.topology, watched)
    return Outcome(configuration.with_notes(result.settled(notes), result.findings, config), result.suppressed,
                   len(loaded),
                   len(result.topology.deployments),
                   any("version" not in i.origins for i in result.topology.instances), said, watched, state)


def _manifests(args: argparse.Namespace, files: list[str], config: Config) -> Outcome:
    """Check one set of Kubernetes manifests (never cached: the files are few and read whole). Raises LoadError."""
    from ..kubernetes import read as kubernetes

    loaded = kubernetes.load(files, guard.Limits(max_file_bytes=args.max_file_size))
    if not loaded.hosts:
        said = [f"no pod of the {len(files)} manifest file(s) runs vLLM: nothing to check"]
        sys.stderr.write(f"pdlint: info: {said[0]}\n")
        return Outcome(list(loaded.findings), [], 0, 0, False, said)
    from ..engine import core as engine
    from ..kubernetes.wording import worded

    result = engine.lint(loaded.hosts, config, _files([os.path.dirname(files[0]) or "."]))
    return Outcome(configuration.with_notes(result.settled(loaded.findings), worded(result.findings), config),
                   worded(result.suppressed), len(loaded.hosts), len(result.topology.deployments),
                   any("version" not in i.origins for i in result.topology.instances), [])


def _files(sources: list[str]) -> Files:
    """Where the model facts' config.json files are looked for: the inventory's folder, the Hugging Face cache."""
    return Files.of(sources)


def _through(args: argparse.Namespace, entry: Entry | None, compute: Callable[[], Outcome]) -> Outcome:
    """compute(), or the stored outcome of entry (runs.through); without a cache, nothing to store or reuse."""
    if entry is None:
        return compute()
    from ..cache import runs

    return runs.through(entry, compute, static=not (args.allow_lookups or args.allow_inventory_plugins))


def _lint(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        config, groups = prepare(args)
    except Unusable as exc:
        sys.stderr.write(f"pdlint: error: {exc}\n")
        return 2
    # after prepare() made ansible-core safe
    from ..load.errors import LoadError

    fmt = _format(args)
    findings: list[Finding] = []
    suppressed: list[Finding] = []
    hosts = deployments = 0
    assumed = False
    outcomes: list[Outcome] = []
    try:
        manifests, groups = manifest_groups(args, groups)
        if manifests:
            outcomes.append(_manifests(args, manifests, config))
    except LoadError as exc:
        sys.stdout.write(reporters.REPORTERS[fmt]([exc.finding], None))
        return 2
    for sources in groups:
        notes: list[Finding] = []
        try:
            entry = _entry(args, sources, config)
            outcome = _through(args, entry, lambda: _outcome(args, sources, config, notes, entry))  # noqa: B023 - called here
        except LoadError as exc:
            sys.stdout.write(reporters.REPORTERS[fmt]([exc.finding], None))
            return 2
        except _NoHosts:
            sys.stdout.write(reporters.REPORTERS[fmt]([*notes, no_hosts(sources)], None))
            return 2
        outcomes.append(outcome)
    for outcome in outcomes:
        findings.extend(outcome.findings)
        suppressed.extend(outcome.suppressed)
        hosts += outcome.hosts
        deployments += outcome.deployments
        assumed = assumed or outcome.assumed
    findings.sort()
    suppressed.sort()
    sys.stdout.write(reporters.REPORTERS[fmt](findings, suppressed if args.show_suppressed else None))
    if fmt in ("text", "github"):
        took = time.perf_counter() - started
        sys.stdout.write(reporters.summary(findings, hosts, deployments, took, len(suppressed),
                                           assumed=NEWEST_VLLM if assumed else None))
    failing = ("error", "warning") if config.strict else ("error",)
    return 1 if any(f.severity in failing for f in findings) else 0


def _quiet_gc(args: argparse.Namespace, process: bool) -> int:
    """_lint without cyclic GC: a run allocates millions of acyclic objects that every collection would rescan.

    As the process's entry point, freeze at the end so exit does not pay for a final collection either;
    called with argv (tests, other callers), re-enable instead.
    """
    with gc_paused(freeze=process):
        return _lint(args)


def main(argv: Sequence[str] | None = None) -> int:
    with pipe.guarded():  # every subcommand ends the same way when its reader leaves (`| head`)
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    argv_given = argv
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        if argv and argv[0] in commands.BY_NAME:  # a subcommand, even beside a folder of its name (./NAME is that)
            return commands.BY_NAME[argv[0]].run(argv[1:])
        meant = commands.near_miss(argv)
        if meant:
            sys.stderr.write(f"pdlint: error: {meant}\n")
            return 2
        try:
            args = parser().parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
            return int(exc.code or 0)
        return _quiet_gc(args, process=argv_given is None)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a write that bypassed the guard (sys.stdout.buffer): the reader left, as above
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # no traceback reaches the user unless asked
        if debug:
            raise
        if type(exc).__module__.startswith("ansible."):  # e.g. a broken ansible.cfg: the user's to fix
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            sys.stderr.write(f"pdlint: error: ansible-core: {first}\n")
            return 2
        sys.stderr.write(f"pdlint: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)\n")
        return 2

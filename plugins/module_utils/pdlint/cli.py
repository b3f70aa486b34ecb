"""The `pdlint` command: paths or -i sources in, findings out, exit 0/1/2."""
from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from . import NEWEST_VLLM, __version__, configfile, engine, report, schema
from . import config as configuration
from .config import Config, ConfigError, names
from .finding import Finding, Origin
from .hostvars import HostVars
from .load import guard, runs, store
from .rules import REGISTRY

_VARS_DIRS = ("group_vars", "host_vars")


def inventory_for(path: str) -> str:
    """The inventory a path belongs to: a group_vars/host_vars file names the directory above it."""
    p = Path(path)
    for parent in (p, *p.parents):
        if parent.name in _VARS_DIRS:
            return str(parent.parent) if str(parent.parent) else "."
    return path


def _size(text: str) -> int:
    """8M, 512K, 1G or plain bytes."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        value = int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 8M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (must be positive)")
    return value


def _parser(prog: str = "pdlint", formats: Sequence[str] = tuple(sorted(report.REPORTERS)),
            description: str = "Lint vLLM prefill/decode topologies in Ansible inventories.",
            format_help: str = "output format (default: text, or github when GITHUB_ACTIONS=true)",
            ) -> argparse.ArgumentParser:
    """pdlint's options; `pdlint explain` takes the same ones with its own formats."""
    ap = argparse.ArgumentParser(prog=prog, description=description, epilog=(
        "Also: `pdlint rules [ID]` documents the rules; `pdlint models [NAME]` lists the models pdlint knows; "
        "`pdlint versions` lists the vLLM releases; `pdlint schema` prints the JSON Schema; "
        "`pdlint explain` shows the topology vLLM will build."))
    ap.add_argument("paths", nargs="*", metavar="PATH", help="inventory file or directory, or any file inside one")
    ap.add_argument("-i", "--inventory", action="append", default=[], metavar="SOURCE",
                    help="inventory source, as in Ansible (repeatable; together they form one inventory)")
    ap.add_argument("-f", "--format", choices=list(formats), default=None, help=format_help)
    ap.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                    help="exit 1 on warnings too (default: the config's `strict`, else off)")
    ap.add_argument("--select", metavar="RULES",
                    help="comma-separated rule ids or families to report (replaces the config's)")
    ap.add_argument("--ignore", metavar="RULES",
                    help="comma-separated rule ids or families not to report (replaces the config's)")
    ap.add_argument("--show-suppressed", action="store_true", help="also list the findings pdlint_skip suppressed")
    ap.add_argument("--config", metavar="FILE",
                    help="configuration file (default: .pdlint.yaml or pyproject.toml [tool.pdlint], "
                         "from here up to the git root)")
    ap.add_argument("--allow-lookups", action="store_true",
                    help="render Jinja lookups (runs whatever they run: only for trusted inventories)")
    ap.add_argument("--allow-inventory-plugins", action="store_true",
                    help="run inventory scripts and dynamic inventory plugins, and let ansible.cfg add plugin "
                         "paths (runs their code: only for trusted inventories)")
    ap.add_argument("--vault-password-file", metavar="FILE",
                    help="decrypt vault values and files with this password (default: $ANSIBLE_VAULT_PASSWORD_FILE); "
                         "decrypted values are never printed")
    ap.add_argument("--max-file-size", type=_size, default=guard.Limits.max_file_bytes, metavar="BYTES",
                    help="refuse inventory and vars files larger than this (suffix K, M or G; default 8M)")
    ap.add_argument("--loader", choices=("fast", "ansible"), default="fast",
                    help="inventory loader: fast (default; falls back to ansible-core's when it must) or ansible")
    ap.add_argument("--vllm-version", type=_release, metavar="RELEASE",
                    help="vLLM release for hosts whose inventory and config file set no vllm_version "
                         f"(default: the newest known, {NEWEST_VLLM}; see `pdlint versions`)")
    ap.add_argument("--no-cache", action="store_true",
                    help="neither read nor write the cache of earlier results (also: PDLINT_NO_CACHE=1); "
                         "it lives under $XDG_CACHE_HOME/pdlint, never in the inventory")
    ap.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    ap.add_argument("--version", action="version", version=f"pdlint {__version__} (vLLM rules: {NEWEST_VLLM})")
    return ap


def _release(text: str) -> str:
    from .vllm import releases

    if releases.parse(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a vLLM release (e.g. 0.32.0; see `pdlint versions`)")
    return text


def _default_inventory() -> list[str]:
    from ansible import constants as C  # reads ansible.cfg the Ansible way (after safety.configure)

    return [str(s) for s in C.DEFAULT_HOST_LIST]


def _groups(args: argparse.Namespace) -> list[list[str]]:
    """Inventories to check: all -i sources as one, and each PATH's inventory on its own, once.

    Paths that name the same inventory (hosts.yml and a host_vars file beside it, as pre-commit passes
    them; a directory and a file in it) are one inventory: checking it twice would report each finding twice.
    """
    given = list(args.inventory)
    sources = [(inventory_for(path), inventory_for(path) != path) for path in args.paths]
    real = {s: os.path.realpath(s) for s, _ in sources + [(g, False) for g in given] if "," not in s}
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
        # a family (`gpu`) documents each of its rules
        found = [r for r in REGISTRY.values() if rule_id in (r.id, r.id.split("[")[0])]
        if not found:
            sys.stderr.write(f"pdlint: error: {configuration.unknown_rule(rule_id)}\n")
            return 2
        from .docs import release_table

        sys.stdout.write("\n".join(f"{r.id} ({r.severity})\n\n{r.doc}\n\n{release_table(r.id)}".rstrip() + "\n"
                                   for r in found))
    return 0


def _models(words: Sequence[str]) -> int:
    """The models pdlint knows the attention shape of (vllm_model values that need no vllm_model_* facts)."""
    from .facts import listing

    rows = [(name, f, aliases) for name, f, aliases in listing()
            if not words or any(w.lower() in " ".join((name, *aliases)).lower() for w in words)]
    if not rows:
        sys.stderr.write(f"pdlint: error: no known model matches {' '.join(words)!r} (see `pdlint models`); "
                         "set vllm_model_num_attention_heads, vllm_model_num_kv_heads and vllm_model_is_mla\n")
        return 2
    width = max(len(name) for name, _, _ in rows)
    sys.stdout.write(f"{'model':{width}}  heads  kv_heads  mla    ssm\n")
    for name, f, aliases in rows:
        sys.stdout.write(f"{name:{width}}  {f.heads!s:5}  {f.kv_heads!s:8}  {str(f.mla).lower():5}  "
                         f"{str(f.ssm).lower()}\n")
        sys.stdout.write("".join(f"  also: {alias}\n" for alias in aliases))
    return 0


def _config(args: argparse.Namespace) -> Config:
    """The config file's settings, overridden by the command line's."""
    config = configfile.load(Path.cwd(), args.config)
    if args.select is not None:
        config = dataclasses.replace(config, select=names(args.select.split(","), "--select", ""))
    if args.ignore is not None:
        config = dataclasses.replace(config, ignore=names(args.ignore.split(","), "--ignore", ""))
    if args.strict is not None:
        config = dataclasses.replace(config, strict=args.strict)
    if args.vllm_version is not None and config.vllm_version is None:  # the inventory and config file come first
        config = dataclasses.replace(config, vllm_version=args.vllm_version, version_source="--vllm-version")
    return config


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def load_group(args: argparse.Namespace, sources: list[str], notes: list[Finding],
               fail: Callable[[list[Finding]], object]) -> list[HostVars] | None:
    """One inventory's hosts as pdlint loads them; None after passing fail() the findings that make it unusable."""
    from .load import select
    from .load.preflight import LoadError

    try:
        loaded = select.load(sources, loader=args.loader, allow_lookups=args.allow_lookups,
                             allow_plugins=args.allow_inventory_plugins,
                             limits=guard.Limits(max_file_bytes=args.max_file_size),
                             vault_password_file=args.vault_password_file, notes=notes)
    except LoadError as exc:
        fail([exc.finding])
        return None
    if not loaded:
        empty = Finding(Origin(", ".join(sources)), "load-error", "error", "the inventory has no hosts",
                        "name the inventory (or a file inside it) that defines the P/D hosts")
        fail([*notes, empty])
        return None
    return loaded


class _NoHosts(Exception):
    """The inventory has no hosts."""


def _entry(args: argparse.Namespace, sources: list[str], config: Config) -> runs.Entry | None:
    """The cache entry of one inventory's check (None: --no-cache, PDLINT_NO_CACHE, or not keyable)."""
    if args.no_cache or store.disabled():
        return None
    vault = args.vault_password_file or os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    settings = (args.loader, args.allow_lookups, args.allow_inventory_plugins, args.max_file_size,
                args.vault_password_file, repr(config), runs.stamp(vault))
    return runs.entry([s if "," in s else os.path.abspath(s) for s in sources], settings,
                      guard.Limits(max_file_bytes=args.max_file_size))


def _outcome(args: argparse.Namespace, sources: list[str], config: Config, notes: list[Finding]) -> runs.Outcome:
    """Load and check one inventory. Raises LoadError, _NoHosts."""
    from .load import select

    said: list[str] = []  # the loader's informational lines, kept so a cached run repeats them

    loaded = select.load(sources, loader=args.loader, allow_lookups=args.allow_lookups,
                         allow_plugins=args.allow_inventory_plugins,
                         limits=guard.Limits(max_file_bytes=args.max_file_size),
                         vault_password_file=args.vault_password_file, notes=notes, note=said.append)
    for text in said:
        sys.stderr.write(f"pdlint: info: {text}\n")
    if not loaded:
        raise _NoHosts
    result = engine.lint(loaded, config)
    return runs.Outcome(configuration.apply(notes, config) + result.findings, result.suppressed, len(loaded),
                        len(result.topology.deployments),
                        any("version" not in i.origins for i in result.topology.instances), said)


def _lint(args: argparse.Namespace) -> int:
    from .load import safety

    safety.configure(args.allow_inventory_plugins)  # before anything imports ansible-core
    from .load.preflight import LoadError

    started = time.perf_counter()
    try:
        config = _config(args)
    except ConfigError as exc:
        sys.stderr.write(f"pdlint: error: {exc}\n")
        return 2
    fmt = _format(args)
    groups = _groups(args)
    missing = [s for g in groups for s in g if "," not in s and not os.path.exists(s)]
    if missing and not (args.paths or args.inventory):
        sys.stderr.write(f"pdlint: error: no inventory given, and Ansible's configured inventory ({missing[0]}) "
                         "does not exist\n  hint: pass the inventory directory or file, e.g. `pdlint inventory/`, "
                         "or `-i SOURCE`, or set `inventory =` in ansible.cfg\n")
        return 2
    if missing:
        sys.stderr.write(f"pdlint: error: {missing[0]}: no such file or directory\n")
        return 2
    findings: list[Finding] = []
    suppressed: list[Finding] = []
    hosts = deployments = 0
    assumed = False
    for sources in groups:
        notes: list[Finding] = []
        try:
            outcome = runs.through(_entry(args, sources, config), lambda: _outcome(args, sources, config, notes),
                                   static=not (args.allow_lookups or args.allow_inventory_plugins))
        except LoadError as exc:
            sys.stdout.write(report.REPORTERS[fmt]([exc.finding], None))
            return 2
        except _NoHosts:
            empty = Finding(Origin(", ".join(sources)), "load-error", "error", "the inventory has no hosts",
                            "name the inventory (or a file inside it) that defines the P/D hosts")
            sys.stdout.write(report.REPORTERS[fmt]([*notes, empty], None))
            return 2
        findings.extend(outcome.findings)
        suppressed.extend(outcome.suppressed)
        hosts += outcome.hosts
        deployments += outcome.deployments
        assumed = assumed or outcome.assumed
    findings.sort()
    suppressed.sort()
    sys.stdout.write(report.REPORTERS[fmt](findings, suppressed if args.show_suppressed else None))
    if fmt in ("text", "github"):
        sys.stdout.write(report.summary(findings, hosts, deployments, time.perf_counter() - started, len(suppressed),
                                        assumed=NEWEST_VLLM if assumed else None))
    failing = ("error", "warning") if config.strict else ("error",)
    return 1 if any(f.severity in failing for f in findings) else 0


def _quiet_gc(args: argparse.Namespace, process: bool) -> int:
    """_lint without cyclic GC: a run allocates millions of acyclic objects that every collection would rescan.

    As the process's entry point, freeze at the end so exit does not pay for a final collection either;
    called with argv (tests, other callers), re-enable instead.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _lint(args)
    finally:
        if process:
            gc.freeze()
        elif enabled:
            gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    argv_given = argv
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        if argv and argv[0] == "rules" and not os.path.exists("rules"):
            return _rules(argv[1:])
        if argv and argv[0] == "versions" and not os.path.exists("versions"):
            from .versions import listing

            sys.stdout.write(listing())
            return 0
        if argv and argv[0] == "models" and not os.path.exists("models"):
            return _models(argv[1:])
        if argv and argv[0] == "explain" and not os.path.exists("explain"):
            from .explain.command import explain

            return explain(argv[1:])
        if argv and argv[0] == "lsp" and not os.path.exists("lsp"):
            from .lsp.command import main as lsp

            return lsp(argv[1:])
        if argv and argv[0] == "schema" and not os.path.exists("schema"):
            sys.stdout.write(schema.dumps())
            return 0
        try:
            args = _parser().parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help/--version
            return int(exc.code or 0)
        return _quiet_gc(args, process=argv_given is None)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `pdlint ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - no traceback reaches the user unless asked
        if debug:
            raise
        if type(exc).__module__.startswith("ansible."):  # e.g. a broken ansible.cfg: the user's to fix
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            sys.stderr.write(f"pdlint: error: ansible-core: {first}\n")
            return 2
        sys.stderr.write(f"pdlint: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())

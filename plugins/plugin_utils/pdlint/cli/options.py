"""pdlint's command-line options (the lint command's and `pdlint explain`'s)."""
from __future__ import annotations

import argparse
from collections.abc import Sequence

from .. import NEWEST_VLLM, __version__
from ..load.preflight import guard
from ..report import reporters


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


def _release(text: str) -> str:
    from ..vllm import releases

    if releases.parse(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a vLLM release (e.g. 0.32.0; see `pdlint versions`)")
    return text


def _epilog() -> str:
    from .commands import SUBCOMMANDS

    rows = [(f"pdlint {s.name} {s.usage}".rstrip(), s.what) for s in SUBCOMMANDS]
    width = max(len(usage) for usage, _unused in rows)
    return ("subcommands:\n" + "".join(f"  {usage:{width}}  {what}\n" for usage, what in rows)
            + "\nA subcommand's name is always the subcommand, even beside a folder of that name: write ./models (or\n"
              "models/) to check a folder named models.\n")


def parser(prog: str = "pdlint", formats: Sequence[str] = tuple(sorted(reporters.REPORTERS)),
           description: str = "Lint vLLM prefill/decode topologies in Ansible inventories.",
           format_help: str = "output format (default: text, or github when GITHUB_ACTIONS=true)",
           lint: bool = True) -> argparse.ArgumentParser:
    """pdlint's options; `pdlint explain` (lint=False) takes every one of them, with its own formats: a wrapper
    passes one option set to both."""
    ap = argparse.ArgumentParser(prog=prog, description=description, epilog=_epilog() if lint else None,
                                 formatter_class=argparse.RawDescriptionHelpFormatter if lint
                                 else argparse.HelpFormatter)  # raw: the epilog's table keeps its lines
    ap.add_argument("paths", nargs="*", metavar="PATH",
                    help="inventory file or directory, or any file inside one (./models for a folder named as a "
                         "subcommand)")
    ap.add_argument("-f", "--format", choices=list(formats), default=None, help=format_help)
    _verdict(ap, lint)
    loading(ap)
    ap.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    ap.add_argument("--version", action="version", version=f"pdlint {__version__} (vLLM rules: {NEWEST_VLLM})")
    return ap


# The lint's verdict options that explain (which shows every finding and exits 0) accepts and does not use.
UNUSED_BY_EXPLAIN = ("strict", "show_suppressed")


def _verdict(ap: argparse.ArgumentParser, lint: bool) -> None:
    """What pdlint reports and how it exits."""
    unused = "" if lint else " (not used by explain: it shows every finding and exits 0)"
    ap.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                    help="exit 1 on warnings too (default: the config's `strict`, else off)" + unused)
    ap.add_argument("--select", metavar="RULES",
                    help="comma-separated rule ids or families to report (replaces the config's)")
    ap.add_argument("--ignore", metavar="RULES",
                    help="comma-separated rule ids or families not to report (replaces the config's)")
    ap.add_argument("--show-suppressed", action="store_true",
                    help="also list the findings pdlint_skip suppressed" + unused)


def loading(ap: argparse.ArgumentParser) -> None:
    """What is read and how: pdlint and pdlint explain load an inventory with the same options (cli/inputs.py)."""
    ap.add_argument("-i", "--inventory", action="append", default=[], metavar="SOURCE",
                    help="inventory source, as in Ansible (repeatable; together they form one inventory)")
    ap.add_argument("--playbook", metavar="PLAYBOOK",
                    help="the playbook whose plays and roles launch vLLM (read statically: nothing runs); its "
                         "launch templates are rendered per host and linted as the command line (default: the "
                         "config's `playbook`)")
    ap.add_argument("--config", metavar="FILE",
                    help="configuration file (default: .pdlint.yaml or pyproject.toml [tool.pdlint], "
                         "from here up to the git root)")
    ap.add_argument("--allow-lookups", action="store_true",
                    help="render Jinja lookups in the inventory and the playbook (runs whatever they run: only for "
                         "trusted inventories)")
    ap.add_argument("--allow-inventory-plugins", action="store_true",
                    help="run inventory scripts and dynamic inventory plugins, and let ansible.cfg add plugin "
                         "paths (runs their code: only for trusted inventories)")
    ap.add_argument("--vault-password-file", metavar="FILE",
                    help="decrypt vault values and files with this password (default: $ANSIBLE_VAULT_PASSWORD_FILE); "
                         "decrypted values are never printed")
    ap.add_argument("--manifest-folders", action="store_true",
                    help="a Kubernetes manifest file named stands for its folder (every manifest under it is read "
                         "with it), and a file that is neither a manifest nor named or written like an inventory is "
                         "skipped: the pdlint-kubernetes hook's mode")
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

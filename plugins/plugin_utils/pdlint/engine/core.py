"""The one rules core entry point: host variables in, sorted findings out (no I/O)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from ..config import configuration
from ..config.configuration import Config
from ..finding import Finding, Origin, rehosted
from ..hostvars import HostVars, Profiles
from ..launch import stage as launch
from ..load.model_files import Files
from ..load.notes import pd_look
from ..rules import CHECKS
from ..schema import check as schema
from ..topology.build import build
from ..topology.types import Bodies, Topology
from . import redact, suppress
from .model_facts import Lookup


def _schema(hosts: Sequence[HostVars], own: tuple[str, ...], seen: schema.Seen,
            before: schema.Seen | None) -> list[Finding]:
    profiles: Profiles[list[Finding]] = Profiles()  # a shared profile is checked once, reported for each host
    found: list[Finding] = []
    for hv in hosts:
        known = profiles.get(hv)
        if known is None:
            found.extend(profiles.put(hv, list(schema.check(hv, seen, before, own))))
        else:
            found.extend(rehosted(known[1], known[0].host, hv.host))
    return found


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (origin, rule, message): the same group_vars line seen from many hosts is one problem."""
    merged: dict[tuple[object, ...], tuple[Finding, set[str] | None]] = {}
    for f in findings:
        key = (f.origin, f.rule, f.severity, f.message, f.hint, f.deployment)
        old = merged.get(key)
        if old is None:
            merged[key] = (f, None)
        else:  # the hosts gathered in a set, sorted once: a finding of 15,000 hosts, one hit each, is not quadratic
            hosts = old[1] if old[1] is not None else set(old[0].hosts)
            hosts.update(f.hosts)
            merged[key] = (f, hosts)
    return sorted(f if hosts is None else Finding(f.origin, f.rule, f.severity, f.message, f.hint,
                                                  tuple(sorted(hosts)), f.deployment)
                  for f, hosts in merged.values())


@dataclasses.dataclass(frozen=True)
class Result:
    """What one check produced: reported findings, those pdlint_skip suppressed, and the topology."""

    findings: list[Finding]
    suppressed: list[Finding]
    topology: Topology
    found: list[Finding] = dataclasses.field(default_factory=list)  # every finding, before pdlint_skip and config
    # the config.json files the model facts were read from or looked for, and the --config FILEs of command lines
    # (absolute): a cached result depends on them
    model_files: tuple[str, ...] = ()
    hosts: tuple[HostVars, ...] = ()  # as checked: after the launch stage (the `variables:` mapping applied)
    # each value's schema problems, by the value's identity: the next check's `before` (the language server's)
    seen: schema.Seen | None = dataclasses.field(default=None, compare=False, repr=False)

    def settled(self, notes: Iterable[Finding]) -> list[Finding]:
        """The loader's notes, without its "no host takes part" warning once the mapping made hosts take part
        (the loader judged the hosts before the mapping)."""
        if not any(pd_look.takes_part(hv) for hv in self.hosts):
            return list(notes)
        return [f for f in notes if f.rule != pd_look.RULE]


def _default_version(hosts: Sequence[HostVars], config: Config) -> list[HostVars]:
    """Hosts without vllm_version get the configured default, its origin the config file (or --vllm-version)."""
    if config.vllm_version is None:
        return list(hosts)
    origin = Origin(config.version_source or config.source or "")
    profiles: Profiles[HostVars] = Profiles()  # hosts that shared their dicts share the new ones
    out: list[HostVars] = []
    for hv in hosts:
        known = profiles.get(hv)
        if "vllm_version" in hv.values:
            out.append(hv)
        elif known is not None:
            out.append(dataclasses.replace(hv, values=known[1].values, origins=known[1].origins))
        else:
            out.append(profiles.put(hv, dataclasses.replace(
                hv, values={**hv.values, "vllm_version": config.vllm_version},
                origins={**hv.origins, ("vllm_version",): origin})))
    return out


def lint(hosts: Sequence[HostVars], config: Config = configuration.DEFAULT, files: Files | None = None,
         overlay: Mapping[str, str] | None = None, before: Result | None = None,
         bodies: Bodies | None = None) -> Result:
    """Every finding for these hosts under config: pdlint_skip splits them, select/ignore/severity apply to both.

    Model facts come from the inventory, config's `models:` table, config.json files where files says to look
    (None: nowhere; the CLI, the play and the language server pass Files.of(sources)), then pdlint's table.
    overlay ({absolute path: text}, the editor's unsaved buffers) is read for the files the hosts were loaded from.
    before: the previous check's result (the language server's): values an edit did not touch (the file memo gives
    the same objects again) are not validated again.
    bodies: the last check's topology's bodies_known ({} the first time), when the caller checks again after an
    edit (the language server): what the rules found per body for an engine the edit did not change is kept."""
    launched = launch.prepare(_default_version(hosts, config), config, overlay)
    hosts = launched.hosts
    models = Lookup(config, files)
    topology, problems = build(hosts, models, bodies)
    seen = schema.Seen()
    found = launched.findings + _schema(hosts, config.own_variables, seen, before.seen if before else None)
    found += problems + models.problems
    for rule in CHECKS:
        found.extend(rule.check(topology))
    found = merge(found)
    kept, suppressed = finish(found, suppress.entries(hosts), redact.secret_texts(hosts), config)
    return Result(kept, suppressed, topology, found, (*models.files, *launched.files), tuple(hosts), seen)


def finish(found: list[Finding], marks: Sequence[suppress.Entry], secrets: set[str],
           config: Config) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed) of merged findings: pdlint_skip's split and its own findings, then config.

    Shared by lint() and a run that reuses the findings of the hosts an edit did not touch (incremental.py).
    """
    kept, suppressed = suppress.split(merge([*found, *suppress.problems(found, marks)]), marks)
    # vault-decrypted text never reaches any output
    return (redact.apply(configuration.apply(kept, config), secrets),
            redact.apply(configuration.apply(suppressed, config), secrets))

"""`vllm_args`: a command line kept in the inventory, read as the host's release reads `vllm serve`'s, into the
contract's variables.

A host's `vllm_args` (an item's `args` in vllm_instances) sets `vllm_<dest>` (the item's `<dest>`) for every
argument it gives, each value's origin the flag's own line and column; the positional model sets vllm_model.
A variable the host sets itself keeps its value: when the command line gives the same argument another value,
which one vLLM gets depends on the role's template, and that is an error naming both places.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from ..contract import VARIABLES
from ..finding import Finding, Origin
from ..hostvars import KEY, HostVars, Path, Unresolved
from ..paths import display_path
from ..vllm import releases
from ..vllm.arguments import cmdline
from ..vllm.arguments import dynamo as dynamo_launcher
from ..vllm.arguments.args import arguments
from ..yaml_text import yaml_text
from . import dynamo, shell, shell_env
from .given import ARGS, has_items_args
from .positions import Texts, locate

_CONTRACT_ARGS = tuple(v.name for v in VARIABLES)  # the contract's names; those that are vLLM arguments count


@dataclasses.dataclass
class _Host:
    """The host's values being rewritten: copies of its mappings, and what it found."""

    hv: HostVars
    texts: Texts
    values: dict[str, Any]
    origins: dict[Path, Origin]
    secrets: set[Path]
    findings: list[Finding] = dataclasses.field(default_factory=list)
    files: set[str] = dataclasses.field(default_factory=set)  # --config FILEs read (absolute)
    parsed: dict[Any, cmdline.Parsed] = dataclasses.field(default_factory=dict)  # apply()'s memo

    def finding(self, origin: Origin, rule: str, message: str, hint: str | None = None,
                severity: str = "error") -> None:
        self.findings.append(Finding(origin, rule, severity, message, hint, (self.hv.host,)))


def apply(hv: HostVars, texts: Texts, parsed: dict[Any, cmdline.Parsed] | None = None,
          ) -> tuple[HostVars, list[Finding], set[str]]:
    """hv with what its command lines set in the contract's names, the findings on them, and the files a
    `--config FILE` made it read (a cached result depends on them). parsed (one dict for one stage of many hosts)
    remembers each line's parse by its words, release and folder: hosts of many profiles share one line."""
    items = hv.values.get("vllm_instances")
    has_items = has_items_args(hv.values)
    if ARGS not in hv.values and not has_items:
        return hv, [], set()
    host = _Host(hv, texts, dict(hv.values), dict(hv.origins), set(hv.secrets), parsed={} if parsed is None else parsed)
    release = releases.of_version(hv.values.get("vllm_version"))  # the parser of the host's release
    if ARGS in hv.values:
        _read(host, (ARGS,), release, host.values, (), lambda dest: "vllm_" + dest)
    if has_items and isinstance(items, list):
        copied = [dict(i) if isinstance(i, Mapping) else i for i in items]
        host.values["vllm_instances"] = copied
        for index, item in enumerate(copied):
            if isinstance(item, dict) and "args" in item:
                _read(host, ("vllm_instances", index, "args"), release, item, ("vllm_instances", index), str)
    changed = dataclasses.replace(hv, values=host.values, origins=host.origins, secrets=frozenset(host.secrets))
    return changed, host.findings, host.files


def _read(host: _Host, path: Path, release: releases.Release, target: MutableMapping[str, Any], prefix: Path,
          key_of: Callable[[str], str]) -> None:
    """Parse the command line at path and set what it gives in target (whose values sit at prefix)."""
    value = host.hv.get(*path)
    shown = ".".join(str(p) for p in path)
    if isinstance(value, Unresolved):
        host.finding(host.hv.origin(*path), "unresolved", f"{shown} cannot be rendered statically ({value.reason}); "
                     "rules that need the arguments it sets are skipped",
                     "set a literal value, or define the variables the template uses in the inventory", "warning")
        return
    if value is None or not isinstance(value, (str, list)):
        return  # null leaves it unset; another type is the schema's error
    try:
        tokens = cmdline.argv(value)
    except cmdline.SplitError as exc:
        host.finding(host.hv.origin(*path), "vllm-args[invalid]",
                     f"{shown}: {exc.message}: a shell would not run this command line",
                     "close the quote, or drop the trailing backslash")
        return
    where = _origins(host, path, tokens)
    command = shell.read(tokens)
    unread = command.message if isinstance(command, shell.Unread) else None
    launcher = None if isinstance(command, shell.Unread) else shell.unmodelled(command.words)
    if isinstance(command, shell.Unread) or launcher:
        token = command.token if isinstance(command, shell.Unread) else command.words[0]
        host.finding(where.get(token, host.hv.origin(*path)), "unresolved",
                     f"{shown}: {unread or f'pdlint does not model the launcher `{launcher}`'}; the arguments it sets "
                     "are not checked, and rules that need them are skipped",
                     "write the line as the `vllm serve` (or `python -m dynamo.vllm`) command it runs, or set the "
                     "engine's vllm_<name> variables", "warning")
        _unknown(target, key_of, release, f"pdlint does not read {shown}")
        return
    tokens = list(command.words)
    shell_env.assign(host, command.assignments, where, target, prefix, key_of("env"), shown)
    launch = dynamo.read(tokens)
    parsed = _parse(host, list(launch.rest) if launch else _served(tokens, target, prefix, host), release,
                    _base_dir(host.hv.origin(*path)), launch is not None)
    for problem in parsed.problems:
        origin = _origin_of(host, problem.token, where, host.hv.origin(*path))
        if problem.kind == "unresolved":
            host.finding(origin, "unresolved", f"{shown}: {problem.message}", problem.hint or None, "warning")
            continue
        if launch and dynamo.unmodelled(problem):
            host.finding(origin, "unresolved", f"{shown}: {problem.message.split(': ', 1)[-1]} is neither vLLM "
                         f"{release}'s nor one of Dynamo's flags pdlint knows: not modelled",
                         f"pdlint reads Dynamo's launcher as {dynamo_launcher.SOURCE} define it", "warning")
            continue
        refuses = f"Dynamo's worker refuses to start: it parses vLLM {release}'s engine flags alone" if launch and \
            problem.hint == cmdline.SERVER_HINT else f"vLLM {release} refuses to start"
        host.finding(origin, "vllm-args[invalid]", f"{shown}: {problem.message} ({refuses})", problem.hint or None)
    secret = any(p[:len(path)] == path for p in host.secrets)
    for dest, given in parsed.values.items():
        # a line vLLM refuses says nothing certain about the rest: its values are read, never held against the host's
        _set(host, parsed, where, dest, given, target, prefix, key_of(dest), secret, path, not parsed.problems)
    for dest in sorted(parsed.refused):
        # a value vLLM refuses is unset and unknown: the rules that need it skip the engine (as for a template), the
        # vllm-args[invalid] above says why; a variable the host sets itself keeps its value
        key = key_of(dest)
        if key not in target:
            target[key] = Unresolved(f"vLLM {release} refuses its value in {shown}", reported=True)
            host.origins[(*prefix, key)] = _origin_of(host, parsed.flags.get((dest,)), where, host.hv.origin(*path))
    if any(p.kind == "unresolved" for p in parsed.problems):
        # a --config FILE on the GPU host may set any argument the line leaves out: those pdlint reads stay unknown
        # (never vLLM's defaults), so the rules that need them skip the engine; the line's own flags are read
        _unknown(target, key_of, release, f"{shown}'s --config FILE is on the GPU host")
    if launch:
        _dynamo(host, launch, where, target, prefix, key_of, path)


def _unknown(target: MutableMapping[str, Any], key_of: Callable[[str], str], release: releases.Release,
             why: str) -> None:
    """The contract's vLLM arguments target does not set, unknown (a finding has said why)."""
    for name in _CONTRACT_ARGS:
        if name in arguments(release) and key_of(name) not in target:
            target[key_of(name)] = Unresolved(why, reported=True)


def _parse(host: _Host, tokens: list[cmdline.Token], release: releases.Release, base_dir: str | None,
           engine_only: bool) -> cmdline.Parsed:
    """cmdline.parse, once per words, release and folder: tokens are values (text, place), so a line's parse
    answers for every host whose line has those words at those places (its origins are the host's own)."""
    key = (tuple(tokens), release, base_dir, engine_only)
    found = host.parsed.get(key)
    if found is None:
        found = host.parsed[key] = cmdline.parse(tokens, release, base_dir=base_dir, engine_only=engine_only)
    return found


def _dynamo(host: _Host, launch: dynamo.Launch, where: Mapping[cmdline.Token, Origin],
            target: MutableMapping[str, Any], prefix: Path, key_of: Callable[[str], str], path: Path) -> None:
    """What Dynamo's launcher adds: vllm_launcher, the side its flags name, its refusal of a prefill without KV."""
    said = {("launcher",): ("dynamo", launch.module)}
    side = dynamo.side(launch)
    if side is not None:
        said[("pd_role",)] = side
    for (name,), (value, token) in said.items():
        parsed = cmdline.Parsed({name: value}, {(name,): token}, {}, (), "dynamo")
        _set(host, parsed, where, name, value, target, prefix, key_of(name), False, path)
    role = target.get(key_of("pd_role"))
    if role == "prefill" and target.get(key_of("kv_transfer_config")) is None:
        host.finding(where.get(side[1] if side else launch.module, host.hv.origin(*path)), "vllm-args[invalid]",
                     f"{'.'.join(map(str, path))}: Dynamo's launcher refuses a prefill worker without "
                     "--kv-transfer-config (ValueError in args.py update_dynamo_config_with_engine)",
                     "add --kv-transfer-config '{\"kv_connector\": \"NixlConnector\", \"kv_role\": \"kv_both\"}'")


def _served(tokens: list[cmdline.Token], target: Mapping[str, Any], prefix: Path,
            host: _Host) -> list[cmdline.Token]:
    """The words vLLM's parser reads: a line of flags alone is what a role's template writes after `vllm serve
    {{ vllm_model }}`, so the host's model goes in front (a line that names its own launcher or model stands)."""
    model = target.get("model" if prefix else "vllm_model")
    if model is None and prefix:
        model = host.hv.values.get("vllm_model")
    if not tokens or not tokens[0].text.startswith("-") or not isinstance(model, str) or cmdline.launcher(tokens)[0]:
        return tokens
    return [cmdline.Token("vllm", None, -1), cmdline.Token("serve", None, -1), cmdline.Token(model, None, -1), *tokens]


def _set(host: _Host, parsed: cmdline.Parsed, where: Mapping[cmdline.Token, Origin], dest: str, given: Any,
         target: MutableMapping[str, Any], prefix: Path, key: str, secret: bool, path: Path,
         judged: bool = True) -> None:
    flag = parsed.flags.get((dest,)) or parsed.value_tokens.get((dest,))
    origin = _origin_of(host, flag, where, host.hv.origin(*path))
    if key in target:
        own = target[key]
        if judged and not isinstance(own, Unresolved) and not _same(own, given):
            own_origin = host.hv.origin(*prefix, key)
            spelled = flag.text if flag else dest
            host.finding(origin, "vllm-args[conflict]",
                         f"{key} is {yaml_text(own)} ({own_origin}), but {'.'.join(map(str, path))} gives {spelled} "
                         f"{yaml_text(given)}: which one vLLM gets depends on the role's template",
                         f"set {dest} in one place: the variable or the command line")
        return
    target[key] = given
    host.origins[(*prefix, key)] = origin
    host.origins[(*prefix, key, KEY)] = origin
    for sub, token in parsed.flags.items():
        if len(sub) > 1 and sub[0] == dest:
            host.origins[(*prefix, key, *sub[1:])] = _origin_of(host, token, where, origin)
    if secret:
        host.secrets.add((*prefix, key))


def _same(own: Any, given: Any) -> bool:
    """Whether a variable and a flag say the same (4 and "4", a mapping and its JSON text)."""
    if isinstance(own, str) and isinstance(given, (dict, list)):
        try:
            own = json.loads(own)
        except ValueError:
            return False
    if isinstance(own, (dict, list)) or isinstance(given, (dict, list)):
        return bool(own == given)
    if isinstance(own, bool) or isinstance(given, bool):
        return str(own).strip().lower() == str(given).strip().lower()
    if isinstance(given, float) or isinstance(own, float):
        try:
            return float(own) == float(given)
        except (TypeError, ValueError):
            return False
    return str(own).strip() == str(given).strip()


def _base_dir(origin: Origin) -> str | None:
    """What a --config FILE is relative to: the directory of the file that holds the command line."""
    return os.path.dirname(os.path.abspath(origin.file)) if origin.file else None


def _origin_of(host: _Host, token: cmdline.Token | None, where: Mapping[cmdline.Token, Origin],
               fallback: Origin) -> Origin:
    """A token's origin: its line and column in a --config FILE (the file is then a dependency), else in the
    inventory's scalar."""
    if token is None:
        return fallback
    if token.file is not None:
        host.files.add(os.path.abspath(token.file))
        return Origin(display_path(token.file), token.line or None, token.col or None)
    return where.get(token, fallback)


def _origins(host: _Host, path: Path, tokens: list[cmdline.Token]) -> dict[cmdline.Token, Origin]:
    """Each token's origin: the word's own line and column in the scalar it came from (a list item's own)."""
    out: dict[cmdline.Token, Origin] = {}
    groups: dict[int | None, list[cmdline.Token]] = {}
    for token in tokens:
        groups.setdefault(token.item, []).append(token)
    for item, group in groups.items():
        scalar = host.hv.origin(*path, item) if item is not None else host.hv.origin(*path)
        for token, origin in zip(group, locate(host.texts, scalar, [t.text for t in group])):
            out[token] = origin
    return out

"""Action plugin for pdlint.topology.check: the play's hostvars -> the one rules core -> task result."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import yaml
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.pdlint.topology.plugins.modules.check import DOCUMENTATION
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint import requires
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.config import files as configfile
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.config.configuration import (
    DEFAULT,
    Config,
    ConfigError,
    names,
    with_notes,
)
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.engine import core as engine
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.explain import compute, html
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.launch.mapping import keep_names
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load import tagged
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load.errors import LoadError
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load.model_files import Files
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load.notes import (
    play_notes as notes,
)
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load.notes import (
    role_conflicts as roles,
)
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.playbook import apply as playbook
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.report import reporters as report
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.vllm import releases

_KEYS = ("type", "elements", "choices", "default", "required")
# The argument spec is the module's DOCUMENTATION, written once.
_SPEC = {name: {k: v for k, v in option.items() if k in _KEYS}
         for name, option in yaml.safe_load(DOCUMENTATION)["options"].items()}


def _config(args: dict[str, Any]) -> Config:
    """The config file named by `config`, with `select` replacing and `skip` extending its choices."""
    config = configfile.read(Path(args["config"])) if args["config"] else DEFAULT
    if args["select"] is not None:
        config = dataclasses.replace(config, select=names(args["select"], "select", "pdlint.topology.check"))
    skip = names(args["skip"], "skip", "pdlint.topology.check")
    config = dataclasses.replace(config, ignore=(*config.ignore, *skip))
    version = args.get("vllm_version")
    if version is not None and config.vllm_version is None:  # the inventory and config file come first
        if releases.parse(version) is None:
            raise ConfigError(f"vllm_version: {version!r} is not a vLLM release (e.g. 0.32.0; see `pdlint versions`)")
        config = dataclasses.replace(config, vllm_version=version, version_source="vllm_version option")
    return config


def _vault_secrets() -> bool:
    """True when the play was given a vault password (so encrypted files were decrypted)."""
    from ansible.parsing.vault import VaultSecretsContext

    context = VaultSecretsContext.current(optional=True)
    return bool(context and context.secrets)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.validate_argument_spec(argument_spec=_SPEC)[1]  # (validation result, validated args)
        problem = requires.missing()
        if problem:  # fail on every inventory, not only on the first that needs a schema message
            raise AnsibleActionFail(problem)
        hostvars = task_vars["hostvars"]
        hosts = args["hosts"] or list(task_vars.get("groups", {}).get("all", []))
        try:
            config = _config(args)
        except ConfigError as exc:
            raise AnsibleActionFail(f"pdlint: {exc}") from None
        started = time.perf_counter()
        project = None
        playbook_file = args.get("playbook") or config.playbook
        if playbook_file:
            try:
                project = playbook.project_of(playbook_file)
            except LoadError as exc:
                raise AnsibleActionFail(f"pdlint: {exc.finding.origin}: {exc.finding.message}") from None
        # what the config file's `variables:` mapping reads is kept beside pdlint's names, as the CLI keeps it
        kept = keep_names(config.variables) | (playbook.names_read(project) if project is not None else frozenset())
        loaded = tagged.from_play(hostvars, hosts, kept)
        launched = playbook.apply(loaded, project, args["allow_lookups"]) if project is not None else None
        if launched is not None:  # the hosts as the playbook launches them, as the CLI's --playbook
            loaded = launched.hosts
        sources = list(task_vars.get("ansible_inventory_sources") or [])
        # the model facts from the same config.json files the CLI reads, on the controller
        checked = engine.lint(loaded, config, Files.of([str(s) for s in sources]))
        files = notes.file_notes(sources, task_vars.get("groups", {}), decrypting=_vault_secrets(), hosts=loaded)
        inventory, loader = getattr(hostvars, "_inventory", None), getattr(hostvars, "_loader", None)
        if inventory is not None and loader is not None:  # the play's own inventory: the CLI's role conflicts
            files += roles.from_ansible(inventory, loader, sources, {hv.host: hv.values.get(roles.ROLE)
                                                                     for hv in loaded})
        if launched is not None:
            files += launched.findings
        found = sorted(with_notes(checked.settled(files), checked.findings, config))
        if args.get("explain_html"):  # the report of exactly what was checked, written even when the task fails
            try:
                Path(args["explain_html"]).write_text(html.render(compute.explain(checked.topology, found, loaded)),
                                                      encoding="utf-8")
            except OSError as exc:  # a missing folder, a directory, no permission: the user's to fix, no traceback
                raise AnsibleActionFail(f"pdlint: cannot write explain_html {args['explain_html']}: "
                                        f"{exc.strerror or type(exc).__name__}") from None
            result["explain_html"] = args["explain_html"]
        failing = ("error",) if args["fail_on"] == "error" else ("error", "warning")
        result["findings"] = [f.as_dict() for f in found]
        result["suppressed"] = [f.as_dict() for f in checked.suppressed]
        result["changed"] = False
        assumed = any("version" not in i.origins for i in checked.topology.instances)
        summary = report.summary(found, len(hosts), len(checked.topology.deployments), time.perf_counter() - started,
                                 len(checked.suppressed), assumed=releases.DEFAULT.text if assumed else None)
        bad = [f for f in found if f.severity in failing]
        if bad:
            result["failed"] = True
            result["msg"] = report.text(found) + summary
        else:
            result["msg"] = summary.strip()
        return result

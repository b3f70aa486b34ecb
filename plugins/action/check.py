"""Action plugin for pdlint.topology.check: the play's hostvars -> the one rules core -> task result."""
from __future__ import annotations

from typing import Any

import yaml
from ansible.plugins.action import ActionBase

from ansible_collections.pdlint.topology.plugins.modules.check import DOCUMENTATION

from ansible_collections.pdlint.topology.plugins.module_utils.pdlint import engine, report
from ansible_collections.pdlint.topology.plugins.module_utils.pdlint.load import tagged

_KEYS = ("type", "elements", "choices", "default", "required")
# The argument spec is the module's DOCUMENTATION, written once.
_SPEC = {name: {k: v for k, v in option.items() if k in _KEYS}
         for name, option in yaml.safe_load(DOCUMENTATION)["options"].items()}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _, args = self.validate_argument_spec(argument_spec=_SPEC)
        hostvars = task_vars["hostvars"]
        names = args["hosts"] or list(task_vars.get("groups", {}).get("all", []))
        loaded = tagged.from_play(hostvars, names)
        skip = set(args["skip"])
        found = [f for f in engine.check(loaded) if not engine.named(f.rule, skip)]
        failing = ("error",) if args["fail_on"] == "error" else ("error", "warning")
        result["findings"] = [f.as_dict() for f in found]
        result["changed"] = False
        bad = [f for f in found if f.severity in failing]
        if bad:
            result["failed"] = True
            result["msg"] = f"pdlint: {len(bad)} finding(s)\n" + report.text(found)
        else:
            result["msg"] = f"pdlint: {len(names)} hosts checked, no {'/'.join(failing)} findings"
        return result

"""Never a silent pass: an inventory where no host takes part but which looks like P/D gets a warning saying what
was seen and the `variables:` lines a config file would need to map it."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...finding import Finding, Origin
from ...hostvars import HostVars
from ...paths import display_path

RULE = "inventory[no-pd-hosts]"
_SIDE = re.compile(r"prefill|decode", re.IGNORECASE)
# What a P/D launch line or connector config spells, in any variable (a role's vllm_extra_args, a docker command)
_KV = re.compile(r"--kv[-_]transfer[-_]config|\bkv_transfer_config\b|\bkv_connector\b")


def takes_part(hv: HostVars) -> bool:
    """vllm_pd_role set on the host or on an item of its vllm_instances (the contract's test)."""
    if hv.values.get("vllm_pd_role") is not None:
        return True
    items = hv.values.get("vllm_instances")
    return isinstance(items, list) and any(isinstance(i, Mapping) and i.get("pd_role") is not None for i in items)


def _first_kv(texts: Mapping[str, str]) -> tuple[str, Origin] | None:
    for path in sorted(texts):
        for number, line in enumerate(texts[path].splitlines(), 1):
            match = _KV.search(line)
            if match and not line.lstrip().startswith("#"):
                return match.group(), Origin(display_path(path), number, match.start() + 1)
    return None


def _role_line(names: Sequence[str], variable: str) -> str:
    prefill = next((n for n in names if "prefill" in n.lower()), None)
    decode = next((n for n in names if "decode" in n.lower()), None)
    if variable == "group_names":
        test = (f"'prefill' if '{prefill}' in group_names else " if prefill else "") + (
            f"'decode' if '{decode}' in group_names else " if decode else "")
    else:
        test = ("'prefill' if 'prefill' in inventory_hostname else " if prefill else "") + (
            "'decode' if 'decode' in inventory_hostname else " if decode else "")
    return f"  vllm_pd_role: \"{{{{ {test}none }}}}\""


def silent_pass(hosts: Sequence[HostVars], group_names: Iterable[Any], texts: Mapping[str, str],
                sources: Sequence[str]) -> list[Finding]:
    """The warning, when no host takes part and groups, hosts or values look like P/D; else nothing."""
    if not hosts or any(takes_part(hv) for hv in hosts):
        return []
    sides = sorted({str(g) for g in group_names if _SIDE.search(str(g))})
    named = sorted({hv.host for hv in hosts if _SIDE.search(hv.host)})
    kv = _first_kv(texts)
    if not (sides or named or kv):
        return []
    seen = []
    if sides:
        seen.append("groups " + ", ".join(sides))
    if named:
        seen.append("hosts " + ", ".join(named[:4]) + (f" (+{len(named) - 4})" if len(named) > 4 else ""))
    if kv:
        seen.append(f"{kv[0]} at {kv[1]}")
    # at the value seen, else the inventory: a group's own line differs between loaders when Ansible renames it
    origin = kv[1] if kv else Origin(", ".join(display_path(s) for s in sources))
    role = _role_line(sides, "group_names") if sides else _role_line(named, "inventory_hostname") if named else \
        "  vllm_pd_role: \"{{ 'prefill' if <a test of the host's variables> else 'decode' }}\""
    lines = "\n".join(("variables:", role, '  vllm_pd_deployment: "pd"  # one name per P/D deployment'))
    return [Finding(origin, RULE, "warning",
                    f"no host takes part (none sets vllm_pd_role), but the inventory looks like P/D: "
                    f"{'; '.join(seen)}; nothing was checked",
                    "set vllm_pd_role and vllm_pd_deployment on the prefill and decode hosts or groups, or map the "
                    f"role's own names in .pdlint.yaml:\n{lines}")]

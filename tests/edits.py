"""The random inventory edits the cache and file-memo property tests share: each is (kind, target, arg)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any


def apply_edit(inv: Path, edit: tuple[str, str, Any]) -> bool:
    """Make the edit in inv (False: not one of these kinds, the caller's own).

    value / same-size: decode TP of group target (same-size: one digit for another, so the size and maybe the
    mtime stay); add-host-vars: arg as the text of host target's host_vars file; remove-host-vars; rename-group:
    target and its _prefill/_decode children to arg, with their group_vars; touch: a new mtime for the file."""
    kind, target, arg = edit
    if kind in ("value", "same-size"):
        for path in sorted((inv / "group_vars").glob(f"*{target}_decode.yml")):
            path.write_text(re.sub(r"tensor_parallel_size: \d+", f"tensor_parallel_size: {arg}", path.read_text()))
    elif kind == "add-host-vars":
        (inv / "host_vars" / f"{target}.yml").write_text(arg)
    elif kind == "remove-host-vars":
        (inv / "host_vars" / f"{target}.yml").unlink(missing_ok=True)
    elif kind == "rename-group":
        text = (inv / "hosts.yml").read_text()
        if f"    {target}:" not in text or f"    {arg}:" in text:
            return True
        (inv / "hosts.yml").write_text(re.sub(rf"\b{target}(_prefill|_decode)?:", rf"{arg}\1:", text))
        for suffix in ("", "_prefill", "_decode"):
            path = inv / "group_vars" / f"{target}{suffix}.yml"
            if path.exists():
                path.rename(path.with_name(f"{arg}{suffix}.yml"))
    elif kind == "touch":
        os.utime(inv / target)
    else:
        return False
    return True

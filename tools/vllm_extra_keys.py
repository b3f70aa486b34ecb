"""The kv_connector_extra_config keys each connector family reads, per vLLM release, from the release's source.

    python tools/vllm_extra_keys.py      # regenerate plugins/plugin_utils/pdlint/vllm/data/extra_keys.json

vLLM types kv_connector_extra_config `dict[str, Any]` (config/kv_transfer.py KVTransferConfig) and a connector
reads only the keys it asks for: `kv_transfer_config.get_from_extra_config("key", default)` (a `.get` on the
dict), `extra_config.get("key")` and `extra_config["key"]` on the dict or a name bound to it, in the family's
files under vllm/distributed/kv_transfer/kv_connector/v1/ (a file or folder named after the family). A key no
call of the release names has no effect there.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

V1 = "vllm/distributed/kv_transfer/kv_connector/v1"
# family -> (path words that select its files, path words that leave a file out); composites read `connectors`
FAMILIES = {"nixl": (("nixl",), ()), "moriio": (("moriio",), ()), "mooncake": (("mooncake",), ("store",)),
            "p2p-nccl": (("p2p",), ()), "multi": (("multi_connector",), ())}
_OPEN = r"\(\s*(?:#[^\n]*\s*)*[\"']([\w.]+)[\"']"  # a `# type: ignore` comment may sit before the key
_READS = (re.compile(r"get_from_extra_config" + _OPEN), re.compile(r"extra_config\.get" + _OPEN),
          re.compile(r"extra_config\[\s*[\"']([\w.]+)[\"']\s*\]"))


def read(root: Path) -> dict[str, list[str]]:
    """family -> the keys its files read in one release (families without files are left out)."""
    base = root / V1
    out: dict[str, list[str]] = {}
    for family, (words, unwanted) in FAMILIES.items():
        files = sorted(p for p in base.rglob("*.py") if any(w in str(p.relative_to(base)) for w in words)
                       and not any(w in str(p.relative_to(base)) for w in unwanted))
        if not files:
            continue
        keys: set[str] = set()
        for path in files:
            text = path.read_text(encoding="utf-8")
            for pattern in _READS:
                keys.update(pattern.findall(text))
        out[family] = sorted(keys)
    return out


def compact(tables: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """{"releases": [...], "families": {family: [[first, last, keys]]}}: runs of releases with one key set."""
    releases = list(tables)
    out: dict[str, list[list[Any]]] = {}
    for family in FAMILIES:
        runs: list[list[Any]] = []
        for index, release in enumerate(releases):
            keys = tables[release].get(family)
            if keys is None:
                continue
            if runs and runs[-1][1] == index - 1 and runs[-1][2] == keys:
                runs[-1][1] = index
            else:
                runs.append([index, index, keys])
        out[family] = runs
    return {"releases": releases, "families": out}


TARGET = Path(__file__).resolve().parents[1] / "plugins/plugin_utils/pdlint/vllm/data/extra_keys.json"


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import vllm_source  # the tests' fetcher: the same wheels the differential tests read

    from pdlint.vllm.releases import KNOWN

    tables = {}
    for release in KNOWN:
        root = vllm_source.source(release)
        if root is None:
            sys.stderr.write(f"{release}: no source\n")
            return 2
        tables[release.text] = read(root)
    TARGET.write_text(json.dumps(compact(tables), sort_keys=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""kv_transfer_config in the `schema` rule: where it is, which release's KVTransferConfig judges it, and what vLLM's
parser makes of it (keys the release lacks, values pydantic converts); and the path helpers the rule shares."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..finding import Finding, Origin
from ..hostvars import HostVars
from ..vllm.connectors import kvconfig
from ..vllm.releases import DEFAULT, Release, resolve

Path = tuple[Any, ...]


def release(doc: dict[str, Any], path: Path) -> Release:
    """The release whose KVTransferConfig applies at path (an instance's own version, else the host's)."""
    text = doc.get("vllm_version")
    if path[0] == "vllm_instances" and "version" in doc["vllm_instances"][path[1]]:
        text = doc["vllm_instances"][path[1]]["version"]
    return resolve(str(text) if text is not None else None).release or DEFAULT


def kv_keys(hv: HostVars, doc: dict[str, Any], path: Path) -> Iterator[Finding]:
    """Keys the release's KVTransferConfig does not have: an error where vLLM rejects them, else a warning."""
    config = path_get(doc, path)
    if not isinstance(config, dict):
        return
    at = release(doc, path)
    known = sorted(kvconfig.fields(at))
    for key in sorted(config, key=str):
        verdict = kvconfig.unknown_key(str(key), at)
        if verdict is None:
            continue
        severity, message = verdict
        import difflib  # only to suggest a name: a run without a typo never imports it

        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "remove it (known: " + ", ".join(known) + ")"
        yield finding(hv, (*path, key), f"{path_name((*path, key))}: {message}", hint, severity)


def converted(hv: HostVars, doc: dict[str, Any], path: Path, rewritten: set[str]) -> Iterator[Finding]:
    """Validate kv_transfer_config as vLLM's parser converts it (pydantic lax mode: kv_port 14580.0 or "14580",
    kv_buffer_size "1e9"), so the schema judges what vLLM gets; vLLM 0.9.0 converts nothing (a warning)."""
    config = path_get(doc, path)
    if not isinstance(config, dict):
        return
    values, notes = kvconfig.converted(config, release(doc, path))
    if any(values[k] is not config[k] for k in config):
        path_set(doc, path, values)
        rewritten.add(path[0])
    for key, message in notes:
        yield finding(hv, (*path, key), f"{path_name(path)}.{message}", f"write it as {_JSON[type(values[key])]}",
                      "warning")


_JSON = {int: "a JSON integer", float: "a JSON number", bool: "JSON true or false"}


def kv_paths(doc: dict[str, Any]) -> Iterator[Path]:
    if "vllm_kv_transfer_config" in doc:
        yield ("vllm_kv_transfer_config",)
    items = doc.get("vllm_instances")
    if isinstance(items, list):
        for i, item in enumerate(items):
            if isinstance(item, dict) and "kv_transfer_config" in item:
                yield ("vllm_instances", i, "kv_transfer_config")


def path_get(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def path_set(doc: Any, path: Path, value: Any) -> None:
    path_get(doc, path[:-1])[path[-1]] = value


def path_name(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (("." if text else "") + str(part))
    return text


def finding(hv: HostVars, path: Path, message: str, hint: str | None = None, severity: str = "error",
            origin: Origin | None = None) -> Finding:
    return Finding(origin=origin or hv.origin(*path), rule="schema", severity=severity, message=message,
                   hint=hint, hosts=(hv.host,))

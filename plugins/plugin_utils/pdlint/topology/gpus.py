"""pdlint's table of GPUs (data/gpus.json): the memory each reports to the runtime, with its source.

vLLM sizes everything from `torch.cuda.mem_get_info()`'s total (v1/worker/gpu_worker.py init_device:
`requested_memory = init_snapshot.total_memory * gpu_memory_utilization`, MemorySnapshot in vllm/utils), so the
table keeps that figure where one is published, else the management tool's total (which the source names).
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
from pathlib import Path

_TABLE = Path(__file__).with_name("data") / "gpus.json"
GIB = 1 << 30
# what the runtime's names carry besides the model: the vendor's brand
_BRAND = re.compile(r"^\s*(?:nvidia|amd[\s_-]+instinct|amd)[\s_-]+", re.I)


@dataclasses.dataclass(frozen=True)
class Gpu:
    name: str  # the table's name (H100-SXM)
    memory: int  # bytes
    kind: str  # where the figure comes from: runtime, nvidia-smi, rocm-smi, driver, planner, datasheet
    source: str
    names: tuple[str, ...] = ()  # what the runtime calls it (torch.cuda.get_device_name)


def _key(text: str) -> str:
    """A name as the lookup compares it: no brand, no case, any run of blanks, dashes or underscores one dash."""
    return re.sub(r"[\s_-]+", "-", _BRAND.sub("", text).strip().lower())


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Gpu]:
    """Every spelling the lookup accepts (the table's name, the runtime's names), keyed, -> its GPU."""
    raw = json.loads(_TABLE.read_text(encoding="utf-8"))["gpus"]
    index: dict[str, Gpu] = {}
    for name, row in raw.items():
        gpu = Gpu(name, int(row["bytes"]), str(row["kind"]), str(row["source"]), tuple(row.get("names", ())))
        for spelling in (name, *gpu.names):
            index[_key(spelling)] = gpu
    return index


def listing() -> list[Gpu]:
    """Each GPU of the table once, in the table's order."""
    return list({id(g): g for g in table().values()}.values())


def find(text: str) -> Gpu | None:
    return table().get(_key(text))


def meant(text: str) -> list[str]:
    """The table's names closest to text (a `did you mean`): those it starts or ends, else difflib's."""
    key = _key(text)
    names = [g.name for g in listing()]
    near = [n for n in names if key and (_key(n).startswith(key) or key in _key(n).split("-"))]
    if near:
        return near[:4]
    keys = {_key(n): n for n in names}
    return [keys[k] for k in difflib.get_close_matches(key, list(keys), n=3, cutoff=0.5)]


_PAGE = """# GPUs pdlint knows

`vllm_host_gpu_type` names one of these (the name, or one the runtime reports, in any case); its memory is what
the `memory` rules check each engine against when `vllm_host_gpu_memory_gib` is unset. vLLM sizes its budget from
`torch.cuda.mem_get_info()`'s total (v1/worker/gpu_worker.py: `total_memory x gpu_memory_utilization`), so the
table keeps that figure where one is published, else the management tool's total, which can be up to about 1 GiB
above it; `kind` says which. Generated from `plugins/plugin_utils/pdlint/topology/data/gpus.json` (a test keeps
this page equal to it).

| GPU | runtime names | memory (GiB) | kind | source |
|---|---|---|---|---|
"""


def markdown() -> str:
    """docs/gpus.md: the table as a page."""
    rows = [f"| {g.name} | {', '.join(f'`{n}`' for n in g.names) or '-'} | {g.memory / GIB:.2f} | {g.kind} | "
            f"{g.source} |" for g in listing()]
    return _PAGE + "\n".join(rows) + "\n"

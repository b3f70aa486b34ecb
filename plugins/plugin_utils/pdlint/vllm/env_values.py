"""Environment variables pdlint reads as numbers: which release's envs.py int()s each, and who reads it.

vllm/envs.py reads every one of them with a lambda evaluated on first use (`envs.NAME`, module __getattr__):
`int(os.getenv(NAME, default))`, so a value Python's int() cannot read ("5600-5607", "5600.0", "") raises
ValueError where the connector reads it, and a port outside 1-65535 cannot be bound (zmq, sockets) or dialled.
tests/vllm/arguments/test_vllm_env_values.py evaluates each release's own lambda on the values and compares.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from .history import history
from .releases import Release, Timeline

_ENVS = "vllm/envs.py environment_variables"


@dataclasses.dataclass(frozen=True)
class EnvNumber:
    """One variable: the families whose code reads it (() = every engine), and whether it is a port."""

    name: str
    readers: tuple[str, ...]
    port: bool
    read: Timeline[bool]  # True where the release's envs.py defines it with int(...)


def _span(name: str, first: str, until: str | None, how: str) -> Timeline[bool]:
    steps: list[tuple[str, bool, str, str]] = []
    if first != "0.8.5":
        steps.append(("0.8.5", False, _ENVS, f"not defined: {name} is not read"))
    steps.append((first, True, f"{_ENVS}[{name!r}]", how))
    if until:
        steps.append((until, False, _ENVS, f"no longer defined: {name} is not read"))
    return history("env[invalid]", Timeline(name, *steps))


_INT = "int(os.getenv(...)): ValueError at first use unless int() reads it"
VARIABLES: tuple[EnvNumber, ...] = (
    EnvNumber("VLLM_NIXL_SIDE_CHANNEL_PORT", ("nixl",), True, _span(
        "VLLM_NIXL_SIDE_CHANNEL_PORT", "0.9.0", None,
        _INT + " (NixlConnectorScheduler / NixlConnectorWorker: the side-channel listener's base port)")),
    EnvNumber("VLLM_MOONCAKE_BOOTSTRAP_PORT", ("mooncake",), True, _span(
        "VLLM_MOONCAKE_BOOTSTRAP_PORT", "0.13.0", None,
        _INT + " (mooncake_connector.py: the bootstrap server's port)")),
    EnvNumber("VLLM_USE_V1", (), False, _span(
        "VLLM_USE_V1", "0.8.5", "0.11.1", "bool(int(os.getenv(\"VLLM_USE_V1\", \"1\"))): \"true\" is a ValueError")),
    *(EnvNumber(f"VLLM_MORIIO_{suffix}", ("moriio",), False, _span(
        f"VLLM_MORIIO_{suffix}", "0.14.0", "0.23.0", _INT + " (moriio_common.py MoRIIOConfig.from_vllm_config)"))
      for suffix in ("QP_PER_TRANSFER", "POST_BATCH_SIZE", "NUM_WORKERS")),
)
BY_NAME = {v.name: v for v in VARIABLES}
PORT_RANGE = (1, 65535)


def as_int(text: str) -> int | None:
    """What envs.py's int(text) gives (None: ValueError): Python's own int(), signs, underscores and spaces too."""
    try:
        return int(text)
    except ValueError:
        return None


def problems(env: Mapping[str, str], kinds: frozenset[str | None], release: Release) -> Iterator[tuple[str, str, str]]:
    """(name, message, hint) for each numeric variable release reads (for one of kinds) that vLLM cannot use."""
    for name, text in env.items():
        var = BY_NAME.get(name)
        if var is None or not var.read.at(release) or (var.readers and not kinds.intersection(var.readers)):
            continue
        number = as_int(text)
        shown = repr(text) if len(text) <= 40 else repr(text[:40]) + "..."
        if number is None:
            what = "a port" if var.port else "an integer"
            yield name, (f"{name}={shown} is not {what} vLLM {release} can read: envs.py reads it with int(), "
                         "which raises ValueError when the engine starts"), _hint(var, text)
        elif var.port and not PORT_RANGE[0] <= number <= PORT_RANGE[1]:
            yield name, (f"{name}={number} is not a port: vLLM {release} binds it (plus the DP rank offset) and the "
                         "bind fails, so the engine does not start"), "use a port from 1 to 65535"


def _hint(var: EnvNumber, text: str) -> str:
    if var.port and "-" in text.strip()[1:]:
        return ("give one base port: vLLM derives the others itself (one per DP rank), "
                "so a range is not accepted")
    if var.name == "VLLM_USE_V1":
        return "write 1 or 0"
    return "write a whole number in digits, e.g. " + ("5600" if var.port else "1")

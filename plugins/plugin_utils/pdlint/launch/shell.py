"""A `vllm_args` line as a shell runs it: lines copied from vLLM's and Dynamo's docs
(`CUDA_VISIBLE_DEVICES=0 vllm serve ... > log 2>&1 &`) are commands, not argv.

POSIX Shell Command Language: `NAME=value` words before the program are environment assignments (2.9.1);
operators (`;`, `&`, `|`, `&&`, `||`) end a command and redirections (`>`, `2>&1`, `< file`) are no arguments (2.7);
`exec`, `nohup`, `env NAME=value`, `uv run` run the command after them as it is. Of several commands, the one
that starts vLLM is read; a line pdlint cannot read as one such command (two of them, a `$(...)`, a backtick, a
`${VAR}` the shell expands on the GPU host, a subshell) is said so once, as is a launcher pdlint does not model.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from ..vllm.arguments import cmdline

_CONTROL = frozenset((";", "&", "|", "&&", "||", "|&", ";;"))
_GROUPING = frozenset(("(", ")"))
_TRANSPARENT = frozenset(("exec", "nohup", "command"))  # run the next word as the program, with no options of theirs
# programs that start something else than vLLM's own parser: pdlint does not read their words as vLLM's
_PROGRAMS = frozenset(("bash", "sh", "zsh", "sudo", "docker", "podman", "kubectl", "srun", "mpirun", "torchrun",
                       "accelerate", "deepspeed", "ray", "numactl", "taskset", "timeout", "time", "uvx", "conda",
                       "pip", "apptainer", "singularity", "ssh", "xargs", "stdbuf", "chrt", "nice", "ionice"))


@dataclasses.dataclass(frozen=True)
class Command:
    """The command of a line that starts vLLM: its environment assignments and the words of its argv."""

    assignments: tuple[cmdline.Token, ...]
    words: tuple[cmdline.Token, ...]


@dataclasses.dataclass(frozen=True)
class Unread:
    """Why pdlint does not read the line, and the word that says it."""

    message: str
    token: cmdline.Token


def read(tokens: Sequence[cmdline.Token]) -> Command | Unread:
    """The command of tokens that starts vLLM (a line of plain words is one command)."""
    if not any(t.shell for t in tokens):
        return Command((), tuple(tokens))  # the common line: no assignment, operator or expansion
    commands: list[Command] = []
    for part in _commands(tokens):
        if isinstance(part, Unread):
            return part
        if part.words or part.assignments:
            commands.append(part)
    ran = [c for c in commands if c.words]
    vllm = [c for c in ran if _runs_vllm(c.words)]
    if len(vllm) > 1:
        return Unread(f"two commands start vLLM ({_shown(vllm[0].words)} and {_shown(vllm[1].words)}): pdlint reads "
                      "one engine per command line", vllm[1].words[0])
    if not vllm and len(ran) > 1:
        return Unread(f"none of its commands starts vLLM ({', '.join(_shown(c.words) for c in ran)}): pdlint cannot "
                      "read this line as one command", ran[0].words[0])
    chosen = vllm[0] if vllm else ran[0] if ran else Command(commands[0].assignments if commands else (), ())
    expanded = next((t for t in (*chosen.assignments, *chosen.words) if t.shell == "expand"), None)
    if expanded is not None:
        return Unread(f"{expanded.text} is expanded by the shell on the GPU host: pdlint cannot read this line as one "
                      "command", expanded)
    return chosen


def _commands(tokens: Sequence[cmdline.Token]) -> list[Command | Unread]:
    """The line split at its control operators, without redirections, each command's prefixes taken off."""
    out: list[Command | Unread] = []
    current: list[cmdline.Token] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token.shell == "op" and token.text in _GROUPING:
            return [Unread(f"`{token.text}` starts a subshell or group: pdlint cannot read this line as one command",
                           token)]
        if token.shell == "op" and token.text in _CONTROL:
            out.append(_command(current))
            current = []
        elif token.shell == "op":  # a redirection: its target is the next word unless written into it (`2>&1`)
            skip = token.text.rstrip("0123456789-").endswith(("<", ">", "&", "|"))
        else:
            current.append(token)
    out.append(_command(current))
    return out


def _command(tokens: list[cmdline.Token]) -> Command | Unread:
    assignments: list[cmdline.Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        text = token.text
        if token.shell == "assign":  # before the program: the loop stops at the program's word
            assignments.append(token)
        elif text in _TRANSPARENT:
            pass
        elif text == "env" and index + 1 < len(tokens) and not tokens[index + 1].text.startswith("-"):
            pass  # env NAME=value ... PROGRAM: the assignments follow
        elif text == "uv" and index + 1 < len(tokens) and tokens[index + 1].text == "run" and \
                index + 2 < len(tokens) and not tokens[index + 2].text.startswith("-"):
            index += 1  # `uv run PROGRAM ...` runs PROGRAM in the project's environment
        else:
            break
        index += 1
    return Command(tuple(assignments), tuple(tokens[index:]))


def _runs_vllm(words: Sequence[cmdline.Token]) -> bool:
    texts = [t.text for t in words[:3]]
    program = os.path.basename(texts[0])
    if program == "vllm" or texts[0].startswith("-"):
        return True
    return _python(program) and len(texts) == 3 and texts[1] == "-m" and texts[2].split(".")[0] in ("vllm", "dynamo")


def _python(program: str) -> bool:
    return program in ("python", "python3") or program.startswith("python3.")


def _shown(words: Sequence[cmdline.Token]) -> str:
    return "`" + " ".join(t.text for t in words[:3]) + "`"


def unmodelled(words: Sequence[cmdline.Token]) -> str | None:
    """The launcher the words start with when pdlint does not model it (None: `vllm serve`, the api_server module,
    Dynamo's launcher, a line of flags, or one that starts with the model)."""
    if not words or words[0].text.startswith("-") or cmdline.launcher(words)[0]:
        return None
    texts = [t.text for t in words[:3]]
    program = os.path.basename(texts[0])
    if program == "vllm":
        return " ".join(texts[:2])  # `vllm bench`, `vllm run-batch`: not the server
    if _python(program):
        if len(texts) >= 3 and texts[1] == "-m":
            return " ".join(texts[:3])
        return " ".join(texts[:2])
    if program in _PROGRAMS or program in ("env", "uv") or program.endswith((".sh", ".py")) or \
            (len(texts) > 1 and texts[1] == "-m" and texts[2:3] and texts[2].split(".")[0] in ("vllm", "dynamo")):
        return " ".join(texts[:2]) if program in ("env", "uv") else texts[0]
    return None

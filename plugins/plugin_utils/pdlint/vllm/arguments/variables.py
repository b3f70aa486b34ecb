"""A `vllm_<name>` variable's value, taken as the host's release takes the flag it stands for.

The role writes the variable onto the command line (`--max-model-len {{ vllm_max_model_len }}`), so the value is
what vLLM's parser makes of its rendered text: the release's own type= converter and choices (cmdline_types,
through the same Action the command-line parser builds: one converter serves both ways in), never a looser
pattern of pdlint's own. tests/vllm/arguments/test_vllm_variables.py holds the two ways equal for every argument type and release.
"""
from __future__ import annotations

import functools
from typing import Any

from ..releases import Release
from .argparser import option_action
from .args import Argument
from .consume import convert_value
from .data import Arg, Fail, Token
from .split import rendered


def problem(arg: Argument, given: Any, release: Release) -> str | None:
    """Why release's parser refuses given for arg (as Ansible renders it onto the command line), or None.

    null is unset (the role leaves the flag out). A switch must be a YAML boolean: the role writes the flag (--x, or
    --no-x) from it, and a string "false" is true to Jinja. A mapping or list for a JSON argument is its JSON text
    (to_json); a list for a list argument is its items, each one argv element.
    """
    if given is None or arg.kind == "any":
        return None
    if arg.kind == "bool":
        if isinstance(given, bool):
            return None
        return f"{arg.flags[0]} is a switch ({' / '.join(arg.spellings)}): expected true or false"
    if isinstance(given, (dict, list)) and arg.kind == "json":
        return None
    if isinstance(given, dict) or (isinstance(given, list) and arg.kind != "list"):
        return f"{arg.flags[0]} takes one value: {'a mapping' if isinstance(given, dict) else 'a list'} is none"
    action = _action(arg, release)
    for item in given if isinstance(given, list) else [given]:
        if isinstance(item, (dict, list)):
            return f"{arg.flags[0]}: item {item!r} is not one value"
        text = rendered(item).strip()  # the shell splits the rendered line: the blanks around it go
        try:
            convert_value(action, Arg(text, Token(text)))
        except Fail as fail:
            return fail.problem.message
    return None


@functools.cache
def _action(arg: Argument, release: Release) -> Any:
    """The Action the command-line parser builds for arg (its converter closures), once per argument and release."""
    return option_action(arg, release)[1]

"""vLLM's `vllm serve` argument vocabulary, read from one release's source with `ast` (no import, no torch).

    python tools/vllm_args.py            # regenerate plugins/plugin_utils/pdlint/vllm/data/args.json
                                         # from the wheels tests/vllm_source.py fetches

Where each release defines its flags (the functions walked):
- engine: `EngineArgs.add_cli_args` / `AsyncEngineArgs.add_cli_args` in vllm/engine/arg_utils.py; most flags are
  `**X_kwargs["field"]` with `X_kwargs = get_kwargs(ConfigCls)`, whose type and choices come from the config
  dataclass's annotation (`get_kwargs` <= 0.9.x, `_compute_kwargs` later: dataclass -> JSON, bool ->
  BooleanOptionalAction, Literal -> choices, list/tuple/set -> nargs, int, float, dict -> JSON, else str);
- server: `make_arg_parser` in entrypoints/openai/cli_args.py (<= 0.28.0), entrypoints/launchers/cli_args.py
  (0.29.0-0.32.0), entrypoints/common/cli_args.py (0.33.0), and FrontendArgs (0.10.0+: one `--field` per dataclass
  field, its base classes' first); `subparser_init` in entrypoints/cli/serve.py (0.9.x: --headless and friends).
An argument of the engine's own add_cli_args is marked "engine" (Dynamo's worker parses those alone).
What cannot be seen statically (a type vLLM computes at run time, a platform's or plugin's flags) is kind "any":
pdlint then accepts every value rather than guess.
"""
from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_arg_types import Source, derived, fields, name_of  # beside this script

ENGINE = "vllm/engine/arg_utils.py"
SERVERS = ("vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/launchers/cli_args.py",
           "vllm/entrypoints/common/cli_args.py")
SERVE = "vllm/entrypoints/cli/serve.py"
def _const_list(node: ast.AST) -> list[Any] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(isinstance(e, ast.Constant) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _type_kind(node: ast.AST) -> str:
    """The kind of an explicit type= (json.loads, optional_type(int), human_readable_int, ...)."""
    if isinstance(node, ast.Call) and name_of(node.func) in ("optional_type", "parse_type") and node.args:
        return _type_kind(node.args[0])
    name = (name_of(node) or "").split(".")[-1]
    if name in ("int", "float", "str"):
        return name
    if name in ("loads",) or name.startswith("union_dict"):
        return "json"
    if name.startswith("human_readable_int"):
        return "int_hr"
    return "any"


def _explicit(call: ast.Call, base: dict[str, Any]) -> dict[str, Any]:
    """base (from **X_kwargs[...]) with the call's own keywords applied, as argparse sees the merged kwargs."""
    spec = dict(base) if base else {"kind": "str"}  # argparse's default type: the text itself
    words = {k.arg: k.value for k in call.keywords if k.arg}
    optional = bool(base.get("optional"))
    if "type" in words:
        spec = {"kind": _type_kind(words["type"])}
        if (name_of(words["type"]) or "").split(".")[-1] == "union_dict_and_str":
            spec["or_text"] = True
        # optional_type(X) (engine/arg_utils.py): "" and "None" are None, any other text goes through X
        optional = isinstance(words["type"], ast.Call) and name_of(words["type"].func) == "optional_type"
    choices = _const_list(words["choices"]) if "choices" in words else None
    if choices is not None:
        spec = {"kind": "choice", "choices": sorted({c for c in choices if c is not None}, key=lambda v: (type(v).__name__, v))}
    elif "choices" in words:
        spec = {"kind": "any"}
    action = words.get("action")
    if action is not None:
        text = action.value if isinstance(action, ast.Constant) else (name_of(action) or "").split(".")[-1]
        actions = {"store_true": {"kind": "bool", "action": "store_true"},
                   "store_false": {"kind": "bool", "action": "store_false"},
                   "BooleanOptionalAction": {"kind": "bool", "action": "optional"},
                   "EnableDisableAction": {"kind": "bool", "action": "enable_disable"},
                   "append": {"kind": "list", "item": spec.get("kind", "str")}}
        spec = actions.get(str(text), {"kind": "any"})
        if text == "append":
            return {**spec, "action": "append"}  # one item per flag, the flag repeated
    # argparse merges the keywords: nargs from **X_kwargs stays unless the call names its own
    given = words.get("nargs")
    nargs = given.value if isinstance(given, ast.Constant) else None if given is not None else base.get("nargs")
    if nargs in ("+", "*") or isinstance(nargs, int) and not isinstance(nargs, bool):
        spec = {"kind": "list", "item": spec.get("item", spec.get("kind", "str")), "nargs": nargs} \
            if spec.get("kind") != "list" else {**spec, "nargs": nargs}
    elif nargs == "?" and spec.get("kind") != "bool":
        spec = {**spec, "nargs": "?"}
    spec = {k: v for k, v in spec.items() if k != "optional"}
    return {**spec, "optional": True} if optional and spec.get("kind") != "bool" else spec


def _kwargs_vars(func: ast.AST) -> dict[str, str]:
    """X_kwargs -> ConfigCls for `X_kwargs = get_kwargs(ConfigCls)` in a function."""
    out = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and (name_of(node.value.func) or "").endswith("get_kwargs") and node.value.args:
            cls = name_of(node.value.args[0])
            for target in node.targets:
                if isinstance(target, ast.Name) and cls:
                    out[target.id] = cls
    return out


def _calls(src: Source, module: str, func: ast.AST) -> Iterator[tuple[list[str], dict[str, Any], str | None]]:
    """(option strings, spec, dest) of each add_argument call in func."""
    variables = _kwargs_vars(func)
    cache: dict[str, dict[str, set[Any]]] = {}
    for call in ast.walk(func):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add_argument"):
            continue
        options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not options:
            continue
        base: dict[str, Any] = {}
        for word in call.keywords:
            value = word.value
            if word.arg is None and isinstance(value, ast.Dict):  # **{**X_kwargs["f"], "default": None}
                value = next((v for k, v in zip(value.keys, value.values) if k is None), value)
            if word.arg is None and isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                    and isinstance(value.slice, ast.Constant) and value.value.id in variables:
                cls = variables[value.value.id]
                if cls not in cache:
                    found = src.lookup(module, cls)
                    cache[cls] = fields(src, found[0], found[1]) if found and isinstance(found[1], ast.ClassDef) \
                        else {}
                hints = cache[cls].get(str(value.slice.value), {"other"})
                base = derived(str(value.slice.value), hints)
        dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)),
                    None)
        yield options, _explicit(call, base), dest


def _functions(tree: ast.Module, names: set[str], classes: set[str] | None = None) -> Iterator[ast.AST]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names and classes is None:
            yield node
        if isinstance(node, ast.ClassDef) and classes is not None and node.name in classes:
            yield from (f for f in node.body if isinstance(f, ast.FunctionDef) and f.name in names)


def _frontend(src: Source, module: str, tree: ast.Module) -> Iterator[tuple[list[str], dict[str, Any], str | None]]:
    """FrontendArgs (0.10.0+): one --field per dataclass field, as its add_cli_args loop registers them."""
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FrontendArgs"), None)
    if cls is None:
        return
    specs = {name: derived(name, hints) for name, hints in fields(src, module, cls).items()}
    flags: dict[str, list[str]] = {}
    words: dict[str, dict[str, ast.expr]] = {}
    # frontend_kwargs["x"]["type"] = json.loads, ["action"] = "append", ["flags"] = [...], del ...["nargs"]: in source
    # order, as add_cli_args edits the kwargs dict before one add_argument(**kwargs) per field
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Delete)) and len(n.targets) == 1]
    for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
        outer = node.targets[0]
        if not (isinstance(outer, ast.Subscript) and isinstance(outer.value, ast.Subscript)
                and isinstance(outer.value.slice, ast.Constant) and isinstance(outer.slice, ast.Constant)
                and outer.value.slice.value in specs):
            continue
        field, key = str(outer.value.slice.value), str(outer.slice.value)
        if isinstance(node, ast.Delete):
            if key == "nargs":
                specs[field] = {k: v for k, v in specs[field].items() if k != "nargs"}
                if specs[field].get("kind") == "list":
                    specs[field] = {"kind": str(specs[field].get("item", "any"))}
            words.get(field, {}).pop(key, None)
        elif key == "flags":
            flags[field] = [str(v) for v in _const_list(node.value) or []]
        elif key in ("type", "action", "choices", "nargs"):
            words.setdefault(field, {})[key] = node.value
    for field, spec in specs.items():
        if field in words:
            fake = ast.Call(func=ast.Name("x"), args=[], keywords=[ast.keyword(k, v) for k, v in words[field].items()])
            spec = _explicit(fake, spec)
        yield [*flags.get(field, []), "--" + field.replace("_", "-")], spec, None


def read(root: Path) -> dict[str, dict[str, Any]]:
    """Every argument of one release: dest -> {"flags": [...], "aliases": [...], "kind": ..., ...}."""
    src = Source(root)
    found: list[tuple[list[str], dict[str, Any], str | None]] = []
    engine = src.tree("vllm.engine.arg_utils")
    if engine is not None:
        for func in _functions(engine, {"add_cli_args"}, {"EngineArgs", "AsyncEngineArgs"}):
            found.extend(_calls(src, "vllm.engine.arg_utils", func))
    # what AsyncEngineArgs.add_cli_args alone registers: the parser Dynamo's worker hands its words to
    engine_only = {dest or next((o for o in options if o.startswith("--")), "--")[2:].replace("-", "_")
                   for options, _spec, dest in found}
    for path in (*SERVERS, SERVE):
        module = path[:-3].replace("/", ".")
        tree = src.tree(module)
        if tree is None:
            continue
        for func in (*_functions(tree, {"make_arg_parser"}), *_functions(tree, {"subparser_init", "add_cli_args"},
                                                                           {"ServeSubcommand", "FrontendArgs"})):
            found.extend(_calls(src, module, func))
        found.extend(_frontend(src, module, tree))
    table: dict[str, dict[str, Any]] = {}
    for options, spec, dest in found:
        longs = [o for o in options if o.startswith("--")]
        if not longs:
            continue  # a positional (model_tag)
        name = dest or longs[0][2:].replace("-", "_")
        table[name] = {"flags": longs, "aliases": sorted(o for o in options if not o.startswith("--")), **spec,
                       **({"engine": True} if name in engine_only else {})}
    return dict(sorted(table.items()))


def compact(tables: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per argument, runs of releases with one spec: {"releases": [...], "args": {name: [[first, last, spec]]}}."""
    releases = list(tables)
    names = sorted({n for t in tables.values() for n in t})
    out: dict[str, list[list[Any]]] = {}
    for name in names:
        runs: list[list[Any]] = []
        for index, release in enumerate(releases):
            spec = tables[release].get(name)
            if spec is None:
                continue
            if runs and runs[-1][1] == index - 1 and runs[-1][2] == spec:
                runs[-1][1] = index
            else:
                runs.append([index, index, spec])
        out[name] = runs
    return {"releases": releases, "args": out}


def dumps(data: dict[str, Any]) -> str:
    """One line per argument, so a release's change is a readable diff."""
    lines = [f"  {json.dumps(name)}: {json.dumps(runs, sort_keys=True)}" for name, runs in data["args"].items()]
    return ('{"releases": ' + json.dumps(data["releases"]) + ',\n "args": {\n' + ",\n".join(lines) + "\n}}\n")


TARGET = Path(__file__).resolve().parents[1] / "plugins/plugin_utils/pdlint/vllm/data/args.json"


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import vllm_source  # the tests' fetcher: the same wheels the differential test reads

    from pdlint.vllm.releases import KNOWN

    tables = {}
    for release in KNOWN:
        root = vllm_source.source(release)
        if root is None:
            sys.stderr.write(f"{release}: {vllm_source._failed.get(release.text)}\n")
            return 2
        tables[release.text] = read(root)
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(dumps(compact(tables)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

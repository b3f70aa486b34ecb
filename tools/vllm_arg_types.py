"""Type hints of vLLM's config dataclasses, read with `ast` through the wheel's imports, as the argparse kwargs
vLLM derives from them (tools/vllm_args.py walks the add_argument calls that use them)."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# ints vLLM reads with human_readable_int (1k, 2M, 1G; max_model_len also "auto"), 0.20.0+ (_compute_kwargs)
_HUMAN = ("max_num_batched_tokens", "max_num_scheduled_tokens", "kv_cache_memory_bytes",
          "safetensors_prefetch_block_size", "max_num_queued_tokens", "max_model_len")


class Source:
    """One unpacked release: modules by dotted name, parsed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._trees: dict[str, ast.Module | None] = {}

    def path(self, module: str) -> Path | None:
        base = self.root / module.replace(".", "/")
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            found = self.path(module)
            self._trees[module] = ast.parse(found.read_text(encoding="utf-8")) if found else None
        return self._trees[module]

    def lookup(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
        """The definition of name as seen from module (a class, or an alias's value), following imports."""
        tree = self.tree(module)
        if tree is None or depth > 8:
            return None
        for node in _walk_defs(tree.body):
            if isinstance(node, ast.ClassDef) and node.name == name:
                return module, node
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return module, node.value
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name \
                    and node.value is not None:
                return module, node.value
            if type(node).__name__ == "TypeAlias" and getattr(node.name, "id", None) == name:
                return module, node.value  # type: ignore[attr-defined]
        for node in _walk_defs(tree.body):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        target = _absolute(module, node, self.path(module))
                        if target and target.startswith("vllm"):
                            return self.lookup(target, alias.name, depth + 1)
        return None


def _walk_defs(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements, and those under `if TYPE_CHECKING:` / try (imports live there too)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _walk_defs(node.body)
            yield from _walk_defs(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _walk_defs(node.body)


def _absolute(module: str, node: ast.ImportFrom, path: Path | None) -> str | None:
    if not node.level:
        return node.module
    package = module.split(".")
    if path is None or path.name != "__init__.py":
        package = package[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def _hints(src: Source, module: str, node: ast.AST | None, depth: int = 0) -> set[Any]:
    """The type hints of an annotation: builtin names, ('literal', values), ('dataclass',), ('dict',), 'other'."""
    if node is None or depth > 12:
        return {"other"}
    if isinstance(node, ast.Constant):
        if node.value is None:
            return {"None"}
        if isinstance(node.value, str):
            try:
                return _hints(src, module, ast.parse(node.value, mode="eval").body, depth + 1)
            except SyntaxError:
                return {"other"}
        return {"other"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _hints(src, module, node.left, depth + 1) | _hints(src, module, node.right, depth + 1)
    if isinstance(node, ast.Subscript):
        head = name_of(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in ("Optional",):
            return _hints(src, module, args[0], depth + 1) | {"None"}
        if head == "Union":
            return set().union(*(_hints(src, module, a, depth + 1) for a in args))
        if head in ("Annotated", "SkipValidation"):
            return _hints(src, module, args[0], depth + 1)
        if head == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            nested = [h for a in args if not isinstance(a, ast.Constant) for h in _hints(src, module, a, depth + 1)]
            for h in nested:
                if isinstance(h, tuple) and h[0] == "literal":
                    values.extend(h[1])
            return {("literal", tuple(values))}
        if head in ("list", "List", "tuple", "Tuple", "set", "Set", "Sequence"):
            inner = set().union(*(_hints(src, module, a, depth + 1) for a in args if not _is_ellipsis(a)))
            return {("list", _kind_of(inner) if inner else "any")}
        if head in ("dict", "Dict", "Mapping"):
            return {"dict"}
        return {"other"}
    name = name_of(node)
    if name in ("int", "float", "str", "bool", "dict", "list", "tuple", "set"):
        return {"dict"} if name == "dict" else {("list", "any")} if name in ("list", "tuple", "set") else {name}
    if name in ("Any", None):
        return {"other"}
    found = src.lookup(module, name.split(".")[-1])
    if found is None:
        return {"other"}
    where, value = found
    if isinstance(value, ast.ClassDef):
        return {_class_hint(value)}
    return _hints(src, where, value, depth + 1)


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _class_hint(node: ast.ClassDef) -> Any:
    bases = {name_of(b) for b in node.bases}
    decorators = {name_of(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
    if bases & {"dict", "TypedDict", "Dict"}:
        return "dict"
    if decorators & {"dataclass", "config", "dataclasses.dataclass"} or "BaseModel" in bases:
        return "dataclass"
    return "other"


def name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = name_of(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


def _kind_of(hints: set[Any]) -> str:
    """The element kind of a list's hints (what each item must be)."""
    for kind in ("int", "float"):
        if kind in hints:
            return kind
    return "any"


def derived(name: str, hints: set[Any]) -> dict[str, Any]:
    """The argparse kwargs _compute_kwargs derives from a field's hints, as pdlint's spec of the value.

    A field that may be None (and is no bool) gets type=optional_type(...): "" and "None" parse as None.
    """
    spec = _derived(name, hints)
    return {**spec, "optional": True} if "None" in hints and "bool" not in hints and spec["kind"] != "bool" \
        else spec


def _derived(name: str, hints: set[Any]) -> dict[str, Any]:
    plain = hints - {"None"}
    if "dataclass" in plain:
        return {"kind": "json"}
    if plain == {"bool", "str"}:
        return {"kind": "any", "nargs": "?"}  # nargs="?", const=True: a bare flag is True, a value a str
    if "bool" in plain:
        return {"kind": "bool", "action": "optional"}
    literal = [h for h in plain if isinstance(h, tuple) and h[0] == "literal"]
    if literal:  # literal_to_kwargs: choices, or only a metavar when str is in the union too
        values = sorted({v for h in literal for v in h[1]}, key=lambda v: (type(v).__name__, v))
        if "str" in plain or not values:
            return {"kind": "str"}
        return {"kind": "choice", "choices": values}
    listed = [h for h in plain if isinstance(h, tuple) and h[0] == "list"]
    if listed:
        return {"kind": "list", "item": listed[0][1], "nargs": "+"}  # collection_to_kwargs
    if "int" in plain:
        return {"kind": "int_hr" if name in _HUMAN else "int"}
    if "float" in plain:
        return {"kind": "float"}
    if "dict" in plain:
        # _compute_kwargs (0.9.2+): dict with str or a non-builtin type -> union_dict_and_str (text not `{...}`
        # stays text), else parse_type(json.loads)
        texts = "str" in plain or "other" in plain or bool(literal)
        return {"kind": "json", **({"or_text": True} if texts else {})}
    return {"kind": "str" if "str" in plain else "any"}


def fields(src: Source, module: str, cls: ast.ClassDef, depth: int = 0) -> dict[str, set[Any]]:
    """A dataclass's fields and their hints, its bases' first (as dataclasses.fields orders them)."""
    out: dict[str, set[Any]] = {}
    for base in cls.bases if depth < 5 else ():
        found = src.lookup(module, (name_of(base) or "").split(".")[-1])
        if found and isinstance(found[1], ast.ClassDef):
            out.update(fields(src, found[0], found[1], depth + 1))
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if name_of(node.annotation.value if isinstance(node.annotation, ast.Subscript) else node.annotation) \
                    in ("ClassVar", "InitVar"):
                continue
            out[node.target.id] = _hints(src, module, node.annotation)
    return out

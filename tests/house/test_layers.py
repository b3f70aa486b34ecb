"""The layer order is a contract (pyproject.toml [tool.importlinter]), held by import-linter on the real package."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "plugins" / "plugin_utils" / "pdlint"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with pyproject's contracts over the pdlint package found in package_parent."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pdlint; assert pdlint.__file__.startswith(sys.argv[1]), "
            "pdlint.__file__; from importlinter.cli import lint_imports_command; sys.argv = ['lint-imports', "
            "sys.argv[2], '--no-cache']; lint_imports_command()")
    return subprocess.run([sys.executable, "-c", code, str(package_parent), str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, env=env, cwd=package_parent, check=False)


def test_the_package_keeps_its_layers() -> None:
    assert LINT_IMPORTS.exists(), "import-linter is in the test extras"
    done = _lint_imports(CORE.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 6 kept, 0 broken." in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "pdlint"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "vllm" / "releases.py"
    target.write_text(target.read_text() + "\nfrom ..cli import options  # noqa: E402,F401 - planted\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pdlint.vllm is not allowed to import pdlint.cli" in done.stdout
    assert "pdlint.vllm.releases -> pdlint.cli.options" in done.stdout


def readme_house() -> str:
    """The README's tree of the package, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("<!-- the house:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]


def _readme_tree(block: str | None = None) -> tuple[list[tuple[int, str, str]], list[str]]:
    """The README's tree of the package: (depth, folder, what it holds) rows, and the leaf modules it names."""
    block = readme_house() if block is None else block
    rows, leaves = [], []
    for line in block.splitlines():
        name, _, what = line.strip().partition(" ")
        if name.endswith("/"):
            rows.append(((len(line) - len(line.lstrip())) // 2, name.rstrip("/"), what.strip()))
        else:
            leaves = line.split(":", 1)[0].split()
    return rows, leaves


def test_the_readme_tree_is_the_package() -> None:
    check_house(readme_house())


def check_house(block: str) -> None:
    """block (the README's tree) names every folder of the package, each saying what it holds, and its leaves."""
    rows, leaves = _readme_tree(block)
    assert all(what for _, _, what in rows), "every folder says what it holds"
    shown, parents = set(), []
    for depth, name, _ in rows:
        parents[depth:] = [name]
        shown.add("/".join(parents))
    folders = {str(p.parent.relative_to(CORE)) for p in CORE.rglob("__init__.py") if p.parent != CORE}
    assert shown == folders
    assert sorted(leaves) == sorted(p.name for p in CORE.glob("*.py") if p.name != "__init__.py")
    assert len(leaves) <= 8


def test_the_readme_layer_order_is_the_contract() -> None:
    import tomllib

    layers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    folders = [[m.strip().removeprefix("pdlint.") for m in layer.replace(":", "|").split("|")] for layer in layers]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    said = text.split("Each layer imports only the layers below it: ", 1)[1].split(" -> the leaf modules", 1)[0]
    assert [[m.strip(" `\n") for m in part.split(",")] for part in said.split("->")] == folders[:-1]
    rows, leaves = _readme_tree()
    assert sorted(folders[-1]) == sorted(leaf.removesuffix(".py") for leaf in leaves)
    assert [name for depth, name, _ in rows if depth == 0] == [f for layer in folders[:-1] for f in layer]


def test_no_folder_holds_more_than_fifteen_modules_flat() -> None:
    """A newcomer walks rooms, not a hall: each package folder, and each test folder, holds at most 15 modules."""
    folders = [*{p.parent for p in CORE.rglob("*.py")},
               *{p.parent for p in (ROOT / "tests").rglob("*.py") if "node_modules" not in p.parts}]
    crowded = {str(f.relative_to(ROOT)): n for f in folders if (n := len(list(f.glob("*.py")))) > 15}
    assert not crowded, crowded

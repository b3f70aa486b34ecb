"""One core, two ways to install it: pip (`pdlint`) and ansible-galaxy (the collection path)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from pdlint.schema import check as schema

BIN = Path(sys.executable).parent


def test_committed_schema_is_generated_from_the_spec() -> None:
    committed = (ROOT / "schemas" / "pdlint-vars.schema.json").read_text(encoding="utf-8")
    assert committed == schema.dumps(), "stale schema: run `pdlint schema > schemas/pdlint-vars.schema.json`"


def test_schema_is_valid_draft7() -> None:
    import jsonschema

    jsonschema.Draft7Validator.check_schema(json.loads(schema.dumps()))


def test_pip_package_is_the_collection_core() -> None:
    import pdlint

    assert Path(pdlint.__file__).resolve().parent == ROOT / "plugins" / "plugin_utils" / "pdlint"


def test_collection_build_install_and_import(tmp_path: Path) -> None:
    galaxy = str(BIN / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", str(ROOT), "--output-path", str(tmp_path)],
                   check=True, capture_output=True)
    [tarball] = tmp_path.glob("pdlint-topology-*.tar.gz")
    dest = tmp_path / "collections"
    subprocess.run([galaxy, "collection", "install", str(tarball), "-p", str(dest)], check=True, capture_output=True)
    core = dest / "ansible_collections" / "pdlint" / "topology" / "plugins" / "plugin_utils" / "pdlint"
    assert (core / "topology" / "data" / "model-attention-facts.json").is_file()
    assert _modules(core.parent) == _modules(ROOT / "plugins" / "plugin_utils")  # the tarball ships every module
    assert not (dest / "ansible_collections" / "pdlint" / "topology" / "tests").exists()
    probe = f"""
import sys
sys.path.insert(0, {str(dest)!r})
sys.modules.pop("pdlint", None)
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.engine import core as engine
from ansible_collections.pdlint.topology.plugins.plugin_utils.pdlint.load.reference import loader as reference
assert engine.__file__.startswith({str(dest)!r}), engine.__file__
found = engine.lint(reference.load([{str(ROOT / 'examples' / 'inventory')!r}])).findings
print(sorted({{f.rule for f in found}}))
"""
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert "tp-ratio[moriio]" in out.stdout


def test_readme_rule_table_is_generated() -> None:
    from pdlint.cli.docs import splice

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert splice(readme) == readme, "stale rule table: regenerate it with pdlint.cli.docs.splice"


def test_readme_starts_with_the_newcomer_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].endswith(".venv/bin/pdlint examples/inventory") and "pip install" in block[0]
    assert block[1] == ".venv/bin/pytest -n auto"


# What the collection ships: these top-level entries and nothing else (no tests, caches or build output).
SHIPPED = {"MANIFEST.json", "FILES.json", "README.md", "docs", "examples", "meta", "playbooks", "plugins", "roles",
           "schemas", "pyproject.toml", ".pre-commit-hooks.yaml", ".gitignore", "requirements.txt", "CHANGELOG.md"}
CACHES = (".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", "__pycache__", "node_modules", ".venv")


def test_built_collection_ships_no_caches(tmp_path: Path) -> None:
    """A tree after a test run (caches at the top and beside the code) builds the same clean tarball."""
    import tarfile

    tree = tmp_path / "src"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes((ROOT / name).read_bytes())
    for cache in (".hypothesis/examples/x", ".pytest_cache/v/cache/lastfailed", ".mypy_cache/3.11/x.json",
                  ".ruff_cache/x", "plugins/plugin_utils/pdlint/engine/__pycache__/core.cpython-311.pyc",
                  "plugins/filter/.pytest_cache/x", "examples/.hypothesis/x", "pdlint.egg-info/PKG-INFO"):
        (tree / cache).parent.mkdir(parents=True, exist_ok=True)
        (tree / cache).write_text("cache")
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", str(tree), "--output-path", str(tmp_path)],
                   check=True, capture_output=True)
    [tarball] = tmp_path.glob("pdlint-topology-*.tar.gz")
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    assert {n.split("/")[0] for n in names} <= SHIPPED, sorted({n.split("/")[0] for n in names} - SHIPPED)
    assert not [n for n in names if set(n.split("/")) & set(CACHES) or n.endswith((".pyc", "PKG-INFO"))]
    assert "plugins/plugin_utils/pdlint/engine/core.py" in names


def test_version_is_written_once() -> None:
    """pyproject.toml reads pdlint.__version__; galaxy.yml must repeat it (ansible-galaxy needs a literal)."""
    import tomllib

    import yaml

    import pdlint

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pdlint.__version__"}
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
    assert galaxy["version"] == pdlint.__version__
    from importlib.metadata import version

    assert version("pdlint") == pdlint.__version__


def _modules(root: Path) -> list[str]:
    """Every module of the pdlint package under root (root holds the `pdlint` folder), as dotted names."""
    found = []
    for path in sorted((root / "pdlint").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_the_wheel_holds_and_imports_every_module(tmp_path: Path) -> None:
    """pip's wheel of the project imports every module of the source tree from the wheel itself (a subpackage
    missing from the wheel, or a data file left behind, fails here, not on a user's machine)."""
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check", "-w",
                    str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True, timeout=600)
    [wheel] = (tmp_path / "dist").glob("pdlint-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    source = _modules(ROOT / "plugins" / "plugin_utils")
    assert _modules(site) == source
    assert (site / "pdlint" / "topology" / "data" / "model-attention-facts.json").is_file()
    wanted = [m for m in source if not m.endswith("__main__") and not m.startswith("pdlint.lsp.")]  # lsp: pygls
    probe = ("import importlib, sys\nsys.path.insert(0, sys.argv[1])\n"
             "for name in sys.argv[2:]:\n"
             "    module = importlib.import_module(name)\n"
             "    assert module.__file__.startswith(sys.argv[1]), (name, module.__file__)\n"
             "print(len(sys.argv) - 2)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", probe, str(site), *wanted], capture_output=True, text=True,
                          cwd=tmp_path, env=env, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(len(wanted))

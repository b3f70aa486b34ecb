"""The layer order is a contract (pyproject.toml [tool.importlinter]), held by import-linter on the real package."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "plugins" / "plugin_utils" / "pdlint"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with pyproject's contracts over the pdlint package found in package_parent."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pdlint; assert pdlint.__file__.startswith(sys.argv[1]), "
            "pdlint.__file__; from importlinter.cli import lint_imports_command; sys.argv = ['lint-imports', '--config', "
            "sys.argv[2], '--no-cache']; lint_imports_command()")
    return subprocess.run([sys.executable, "-c", code, str(package_parent), str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, env=env, cwd=package_parent, check=False)


def test_the_package_keeps_its_layers() -> None:
    assert LINT_IMPORTS.exists(), "import-linter is in the test extras"
    done = _lint_imports(CORE.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "pdlint"
    shutil.copytree(CORE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "vllm" / "releases.py"
    target.write_text(target.read_text() + "\nfrom ..cli import options  # noqa: E402,F401 - planted\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pdlint.vllm is not allowed to import pdlint.cli" in done.stdout
    assert "pdlint.vllm.releases -> pdlint.cli.options" in done.stdout

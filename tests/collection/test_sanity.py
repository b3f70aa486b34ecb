"""The collection as Ansible's own tools judge it: `ansible-test sanity` on the built and installed collection.

ansible-test gives each sanity test a virtual environment and bootstraps pip in it with a get-pip script downloaded
from a host that is no package registry, so unreachable here and in CI. It looks in ~/.ansible/test/cache first, so
ansible-test runs with a HOME of its own (~/.cache/pdlint/ansible-test, kept between runs as the vLLM wheels are)
whose cache holds a stand-in for that script: ensurepip, then pip installs the pip release ansible-test pins, from
PyPI. Every test's own requirements (pinned in ansible_test/_data/requirements) come from PyPI through the machine's
pip configuration, as they would without the stand-in.
"""
from __future__ import annotations

import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._util.target.common.constants import CONTROLLER_PYTHON_VERSIONS
from conftest import ROOT

pytestmark = pytest.mark.sanity  # slow tier: ansible-test sanity on three Pythons

BIN = Path(sys.executable).parent
CI = os.environ.get("CI", "").lower() in ("true", "1")
RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"
# The tests ansible-test runs once per Python; the others run once, on the Python running pytest.
PER_PYTHON = ("compile", "import")

STAND_IN = '''\
"""pdlint's stand-in for ansible-test's get-pip script (tests/collection/test_sanity.py): the same packages, from PyPI."""
import subprocess
import sys

subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True, stdout=subprocess.DEVNULL)
subprocess.run([sys.executable, "-m", "pip", "install",
                *[arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]], check=True)
'''


def _missing(what: str) -> None:
    """CI must run every check: there a missing tool fails the test; elsewhere it skips."""
    if CI:
        pytest.fail(f"{what} (CI=true: the sanity checks must run)")
    pytest.skip(what)


def _interpreter(version: str) -> str | None:
    """pythonX.Y on PATH if it runs (a pyenv shim may not), else one of pyenv's installed versions."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [shutil.which(f"python{version}"), *sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))]
    for path in filter(None, found):
        if subprocess.run([path, "-c", ""], capture_output=True, check=False).returncode == 0:
            return path
    return None


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ansible_collections/pdlint/topology as ansible-galaxy builds and installs it, plus the sanity ignore file."""
    out = tmp_path_factory.mktemp("sanity")
    galaxy = str(BIN / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", str(ROOT), "--output-path", str(out)], check=True,
                   capture_output=True)
    [tarball] = out.glob("*.tar.gz")
    subprocess.run([galaxy, "collection", "install", str(tarball), "-p", str(out)], check=True, capture_output=True)
    installed = out / "ansible_collections" / "pdlint" / "topology"
    # The tarball ships no tests/ (test_packaging.py); ansible-test reads its ignore file from the collection's tree.
    shutil.copytree(ROOT / "tests" / "sanity", installed / "tests" / "sanity")
    return installed


@pytest.fixture(scope="module")
def ansible_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """ansible-test's environment: its own HOME with the pip bootstrap, each controller Python on PATH."""
    real_home = Path.home()
    home = real_home / ".cache" / "pdlint" / "ansible-test"
    pip = get_venv_packages(SimpleNamespace(version=RUNNING))["pip"]
    cache = home / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"get_pip_{pip.replace('.', '_')}.py").write_text(STAND_IN, encoding="utf-8")
    pythons = tmp_path_factory.mktemp("pythons")
    for version in CONTROLLER_PYTHON_VERSIONS:
        path = _interpreter(version)
        if path:
            (pythons / f"python{version}").symlink_to(path)
    return {**os.environ, "HOME": str(home), "PATH": f"{pythons}{os.pathsep}{os.environ.get('PATH', '')}",
            # pip keeps the machine's configuration and download cache, which live under the real HOME
            "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", str(real_home / ".config")),
            "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(real_home / ".cache")),
            "ANSIBLE_NOCOLOR": "1"}


def _sanity(collection: Path, env: dict[str, str], *args: str) -> None:
    tool = BIN / "ansible-test"
    if not tool.exists():
        _missing("ansible-test (it ships with ansible-core) is not installed")
    proc = subprocess.run([str(tool), "sanity", "--requirements", "--color", "no", *args], cwd=collection, env=env,
                          capture_output=True, text=True, check=False)
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith(("ERROR", "FATAL"))]
    assert proc.returncode == 0, "\n".join(errors) or proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("version", CONTROLLER_PYTHON_VERSIONS)
def test_ansible_test_sanity(collection: Path, ansible_env: dict[str, str], version: str) -> None:
    """Every sanity test on the Python running pytest; compile and import on each other controller Python."""
    if _interpreter(version) is None:
        _missing(f"python{version} (an ansible-core 2.19 controller Python) is not installed")
    if version == RUNNING:
        _sanity(collection, ansible_env, "--python", version)  # every test, the rules core included
    else:
        _sanity(collection, ansible_env, "--python", version, *[f"--test={t}" for t in PER_PYTHON])


def _module_documentation() -> str:
    """The check module's DOCUMENTATION, read as validate-modules reads it (a literal, not an import)."""
    tree = ast.parse((ROOT / "plugins" / "modules" / "check.py").read_text(encoding="utf-8"))
    [doc] = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
             and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["DOCUMENTATION"]]
    return doc


def test_role_documentation_matches_the_module(collection: Path) -> None:
    """ansible-test documents no roles: ansible-doc reads the role's argument spec, which must be the module's."""
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collection.parents[2]), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([str(BIN / "ansible-doc"), "-t", "role", "--json", "pdlint.topology.validate"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    main = json.loads(proc.stdout)["pdlint.topology.validate"]["entry_points"]["main"]
    assert main["short_description"] and main["description"] and main["author"]
    module = yaml.safe_load(_module_documentation())["options"]
    role = {name.removeprefix("pdlint_validate_"): spec for name, spec in main["options"].items()}
    assert set(role) == set(module)
    defaults = yaml.safe_load((ROOT / "roles" / "validate" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    for name, spec in module.items():
        for key in ("type", "elements", "choices"):
            assert role[name].get(key) == spec.get(key), (name, key)
        # the role's own default where defaults/main.yml sets one (its task turns an empty host list into omit)
        assert role[name].get("default") == defaults.get(f"pdlint_validate_{name}", spec.get("default")), name


def test_galaxy_metadata() -> None:
    """What Galaxy shows and checks: links, tags, license, and the ansible-core the code needs."""
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text(encoding="utf-8"))
    for key in ("repository", "documentation", "homepage", "issues"):
        assert str(galaxy.get(key, "")).startswith("https://"), key
    tags = galaxy["tags"]
    assert 0 < len(tags) <= 20 and all(re.fullmatch(r"[a-z0-9_]+", tag) for tag in tags), tags
    assert bool(galaxy.get("license")) != bool(galaxy.get("license_file"))  # Galaxy takes exactly one of the two
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [core] = [dep for dep in project["dependencies"] if dep.startswith("ansible-core")]
    least = core.removeprefix("ansible-core>=")
    assert runtime["requires_ansible"] == (f">={least}.0" if least.count(".") == 1 else f">={least}")
    meta = yaml.safe_load((ROOT / "roles" / "validate" / "meta" / "main.yml").read_text(encoding="utf-8"))
    assert meta["galaxy_info"]["min_ansible_version"] == least


def test_every_sanity_ignore_gives_its_reason() -> None:
    for path in (ROOT / "tests" / "sanity").glob("ignore-*.txt"):
        for line in filter(None, path.read_text(encoding="utf-8").splitlines()):
            entry, _, reason = line.partition(" # ")
            assert len(entry.split()) == 2 and len(reason.strip()) > 10, f"{path.name}: {line}"

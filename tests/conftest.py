from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

from pdlint.engine import core as engine  # noqa: E402
from pdlint.finding import Finding  # noqa: E402
from pdlint.load import select  # noqa: E402

Lint = Callable[..., list[Finding]]


@pytest.fixture(autouse=True)
def _no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see pdlint's uncached answers; tests/cache/test_cache.py turns the cache on where it is the subject."""
    monkeypatch.setenv("PDLINT_NO_CACHE", "1")
    # model facts are looked up in the Hugging Face cache: the machine's own must not change what a test sees
    monkeypatch.setenv("HF_HUB_CACHE", "/nonexistent/pdlint-tests/hf-hub")


def write_tree(base: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return base


@pytest.fixture
def lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Lint:
    """Lint an inventory given as hosts.yml text (plus optional extra files) with the real ansible loader."""
    monkeypatch.chdir(tmp_path)

    def run(hosts: str, **files: str) -> list[Finding]:
        tree = {"hosts.yml": hosts, **{k.replace("__", "/"): v for k, v in files.items()}}
        write_tree(tmp_path, tree)
        source = [str(tmp_path / "hosts.yml")]
        notes: list[Finding] = []
        hosts = select.load(source, loader="ansible", notes=notes)
        # Every rule-test inventory doubles as a differential case for the fast loader (values, origins, notes).
        fast_notes: list[Finding] = []
        fell_back: list[str] = []
        fast_hosts = select.load(source, loader="fast", notes=fast_notes, note=fell_back.append)
        if not fell_back:
            assert fast_hosts == hosts and sorted(fast_notes) == sorted(notes)
        return sorted(notes + engine.lint(hosts).findings)

    return run


def readme_snippet(intro: str, lang: str) -> str:
    """The first ```lang block after the README line starting with intro, as users copy it."""
    readme = (ROOT / "README.md").read_text()
    after = readme[readme.index(intro):]
    start = after.index(f"```{lang}\n") + len(f"```{lang}\n")
    return after[start:after.index("\n```\n", start)] + "\n"


def rules_of(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


@pytest.fixture(autouse=True)
def _no_ansible_cfg(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    # Keep any ansible.cfg of the developer's machine out of the tests.
    cfg = tmp_path_factory.getbasetemp() / "empty-ansible.cfg"
    cfg.write_text("[defaults]\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(cfg))


sys.path.insert(0, str(ROOT / "tests"))
# Test modules are grouped in folders by layer (rules/<room>/, vllm/<concern>/, load/, lsp/, ...) and some import a
# neighbour's helpers by module name (`from test_vllm_hma import ...`): every test folder is on the path, as the one
# flat folder was, so an import does not depend on which file pytest collected first.
for _folder in sorted({p.parent for p in (ROOT / "tests").rglob("test_*.py") if "node_modules" not in p.parts}):
    if str(_folder) not in sys.path:
        sys.path.insert(1, str(_folder))


@pytest.fixture(scope="session")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The collection built and installed once per run: the folder for ANSIBLE_COLLECTIONS_PATH."""
    from ansible_collection import install

    return install(tmp_path_factory.mktemp("galaxy"))


SLOW_TIERS = ("editors", "browser", "sanity", "releases")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each slow tier is `slow` too (pyproject.toml [tool.pytest.ini_options] markers)."""
    for item in items:
        if any(item.get_closest_marker(tier) for tier in SLOW_TIERS):
            item.add_marker(pytest.mark.slow)

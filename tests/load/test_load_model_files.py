"""load/model_files: config.json from a model directory or the Hugging Face cache, never the network."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdlint.load import model_files

COMMIT = "a" * 40


def _cache(root: Path, repo: str, ref: str = "main") -> Path:
    """The hub cache layout huggingface_hub writes: refs/<ref> -> commit, snapshots/<commit>/config.json."""
    folder = root / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / ref).write_text(COMMIT)
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").write_text(json.dumps({"num_attention_heads": 40}))
    return folder


def test_a_cached_model_is_found_through_refs_main(tmp_path: Path) -> None:
    _cache(tmp_path, "my-org/fine-tune")
    found = model_files.find("my-org/fine-tune", None, tmp_path / "inv", {"HF_HUB_CACHE": str(tmp_path)})
    assert found.config == {"num_attention_heads": 40}
    assert len(found.looked) == 2 and "refs/main" in found.looked[1]


@pytest.mark.parametrize("revision", ["v2", COMMIT])
def test_a_revision_names_its_ref_or_commit(tmp_path: Path, revision: str) -> None:
    _cache(tmp_path / "hub", "org/m", ref="v2")
    found = model_files.find("org/m", revision, None, {"HF_HOME": str(tmp_path)})
    assert found.config is not None


def test_a_directory_relative_to_the_inventory_wins(tmp_path: Path) -> None:
    (tmp_path / "models" / "m").mkdir(parents=True)
    (tmp_path / "models" / "m" / "config.json").write_text("{\"num_attention_heads\": 8}")
    found = model_files.find("models/m", None, tmp_path, {"HF_HUB_CACHE": str(tmp_path / "none")})
    assert found.config == {"num_attention_heads": 8} and len(found.looked) == 1


@pytest.mark.parametrize("text", ["{", "[1]", "\xff"])
def test_a_bad_file_is_an_error_not_a_traceback(tmp_path: Path, text: str) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_bytes(text.encode("latin-1"))
    found = model_files.find(str(tmp_path / "m"), None, None, {})
    assert found.config is None and found.error


def test_nothing_found_lists_the_places_looked(tmp_path: Path) -> None:
    found = model_files.find("org/absent", None, tmp_path, {"HF_HUB_CACHE": str(tmp_path)})
    assert found.config is None and found.error is None and len(found.looked) == 2


def test_the_layout_is_huggingface_hubs_own(tmp_path: Path) -> None:
    hub = pytest.importorskip("huggingface_hub")
    _cache(tmp_path, "org/m")
    theirs = hub.try_to_load_from_cache("org/m", "config.json", cache_dir=tmp_path)
    ours = model_files.in_cache("org/m", None, {"HF_HUB_CACHE": str(tmp_path)})[0]
    assert Path(theirs) == ours

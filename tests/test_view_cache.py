"""The chunk view's columns saved beside the catalog: an open maps them and catches up
from the catalog with what changed since, giving the same view as a full read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import LoadedDocument, view_cache
from enginelib.chunk_view import ChunkView
from enginelib.own_vectors import ExternalVectors

DIM = 8


def _docs(start: int, n: int, level: str = "L1") -> list[LoadedDocument]:
    rng = np.random.default_rng(start)
    return [LoadedDocument(id=f"d{i}", text=f"document number {i} about topic {i % 7}",
                           title=None if i % 3 else f"Title {i}", language="en",
                           metadata={"truth_level": level},
                           vectors=rng.normal(size=(1, DIM)).astype(np.float32))
            for i in range(start, start + n)]


def _same(a: ChunkView, b: ChunkView) -> None:
    assert a.labels.tolist() == b.labels.tolist()
    assert a.truth_levels.tolist() == b.truth_levels.tolist()
    for p in range(len(a)):
        ra, rb = a.record(p), b.record(p)
        assert (ra.document_id, ra.title, ra.chunk_index, ra.page_start, ra.version,
                ra.content) == (rb.document_id, rb.title, rb.chunk_index, rb.page_start,
                                rb.version, rb.content)


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(view_cache, "MIN_ROWS", 0)
    monkeypatch.setattr(view_cache, "STALE_ROWS", 25)


def test_open_maps_the_saved_columns_and_catches_up(tmp_path: Path, small_thresholds: None) -> None:
    path = tmp_path / "store"
    with enginelib.open(path, embedder=ExternalVectors(DIM)) as store:
        store.ingest_documents(_docs(0, 300))
        store.view()  # a full read: saved
    saved = sorted((path / view_cache.FOLDER).iterdir())
    assert len(saved) == 1
    with enginelib.open(path) as store:
        store.ingest_documents(_docs(300, 5))  # a few more: not saved again
        store.delete_document("d3")
        store.ingest_documents(_docs(10, 1, level="L3"))  # a replaced document
        store.view()
    assert sorted((path / view_cache.FOLDER).iterdir()) == saved
    with enginelib.open(path, read_only=True) as reader:
        caught_up = reader.view()
        assert "d3" not in {caught_up.record(p).document_id for p in range(len(caught_up))}
        full = ChunkView.load(reader._catalog, reader._vector_index, use_saved=False)
        _same(caught_up, full)
    with enginelib.open(path) as store:
        store.ingest_documents(_docs(400, 40))  # past STALE_ROWS: saved again
        store.view()
    assert sorted((path / view_cache.FOLDER).iterdir()) != saved


# "not numpy" fails numpy's magic check (ValueError); an unterminated header makes its parser
# raise tokenize.TokenError, which escaped every reader as "unexpected TokenError".
@pytest.mark.parametrize("damage", [b"not numpy", b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'shape': ("])
def test_a_torn_or_foreign_folder_is_ignored(tmp_path: Path, small_thresholds: None,
                                             damage: bytes) -> None:
    path = tmp_path / "store"
    with enginelib.open(path, embedder=ExternalVectors(DIM)) as store:
        store.ingest_documents(_docs(0, 30))
        store.view()
    (folder,) = (path / view_cache.FOLDER).iterdir()
    (folder / "label.npy").write_bytes(damage)
    with enginelib.open(path, read_only=True) as reader:
        assert len(reader.view()) == 30
        _same(reader.view(), ChunkView.load(reader._catalog, reader._vector_index, use_saved=False))

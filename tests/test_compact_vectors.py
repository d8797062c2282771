"""The compact vector form (usearch int8 / fp16 graph, exact float32 re-rank): recall against
exact search, filtered exactness, deletes past the rebuild point, reopen from the memory-mapped
graph, crash recovery, and a store that records the choice. The shared rules are proven by
tests/test_indexes_contract.py, which runs over these backends too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.errors import InvalidInputError, MissingExtraError
from enginelib.indexes import VECTOR_BACKENDS
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.usearch_vectors import COMPACT_MIN_DELETED, UsearchVectorIndex
from tests.helpers import doc, paragraphs

DIM = 32
DTYPES = ("i8", "f16")


def _clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors around 50 centres: near neighbours a quantized graph can confuse."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 50, n)] + 0.8 * rng.standard_normal((n, DIM)).astype(
        np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _recall(got: list[list[tuple[int, float]]], want: list[list[tuple[int, float]]]) -> float:
    return float(np.mean([len({a for a, _ in g} & {a for a, _ in w}) / len(w)
                          for g, w in zip(got, want)]))


def _labels(row: list[tuple[int, float]]) -> list[int]:
    return [label for label, _ in row]


@pytest.fixture(params=DTYPES)
def dtype(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _graph_index(path: Path, dtype: str) -> UsearchVectorIndex:
    # exact_threshold=0: every search that can use the graph does.
    return UsearchVectorIndex(path, DIM, dtype=dtype, exact_threshold=0)


def test_recall_against_exact_search(tmp_path: Path, dtype: str) -> None:
    vectors = _clustered(5_000, seed=1)
    labels = np.arange(5_000, dtype=np.int64) * 3  # labels are not row numbers
    index = _graph_index(tmp_path, dtype)
    index.add(labels, vectors)
    queries = _clustered(100, seed=2)
    want = exact_topk(vectors, labels, queries, 10)
    got = index.search(queries, 10)
    assert _recall(got, want) >= 0.95
    # The candidates are re-scored from the float32 rows: a label both return scores alike.
    exact_scores = {label: score for label, score in want[0]}
    for label, score in got[0]:
        if label in exact_scores:
            assert score == pytest.approx(exact_scores[label], abs=1e-6)


def test_filtered_search_is_exact_at_low_selectivity(tmp_path: Path, dtype: str) -> None:
    vectors = _clustered(5_000, seed=3)
    labels = np.arange(5_000, dtype=np.int64)
    index = _graph_index(tmp_path, dtype)
    index.add(labels, vectors)
    queries = _clustered(20, seed=4)
    rng = np.random.default_rng(5)
    sparse = np.sort(rng.choice(5_000, size=5, replace=False))  # 0.1 %
    got = index.search(queries, 3, allowed=sparse)
    want = exact_topk(vectors[sparse], sparse, queries, 3)
    assert [_labels(row) for row in got] == [_labels(row) for row in want]
    assert np.allclose([s for row in got for _, s in row], [s for row in want for _, s in row],
                       atol=1e-6)
    # A wide filter (40 %) runs through the graph, over-fetching: still the allowed top k.
    wide = np.sort(rng.choice(5_000, size=2_000, replace=False))
    got = index.search(queries, 10, allowed=wide)
    assert all(set(label for label, _ in row) <= set(wide.tolist()) for row in got)
    assert _recall(got, exact_topk(vectors[wide], wide, queries, 10)) >= 0.95


def test_updates_and_deletes_past_the_rebuild_point(tmp_path: Path, dtype: str) -> None:
    n = 2 * COMPACT_MIN_DELETED + 500
    vectors = _clustered(n, seed=6)
    labels = np.arange(n, dtype=np.int64)
    index = _graph_index(tmp_path, dtype)
    index.add(labels, vectors)
    # Replace a third of the vectors, then delete most of the rest of the originals: the
    # graph is rebuilt from the rows once removed nodes outnumber live ones.
    moved = labels[: n // 3]
    index.add(moved, _clustered(len(moved), seed=7))
    gone = labels[n // 3 : n - 300]
    index.delete(gone.tolist())
    live = np.setdiff1d(labels, gone)
    assert index.labels().tolist() == live.tolist()
    matrix = index.vectors_for(live)
    assert np.allclose(matrix[: len(moved)], _clustered(len(moved), seed=7), atol=1e-6)
    queries = _clustered(50, seed=8)
    got = index.search(queries, 10)
    assert all(not set(label for label, _ in row) & set(gone.tolist()) for row in got)
    assert _recall(got, exact_topk(matrix, live, queries, 10)) >= 0.95


def test_reopen_maps_the_graph_and_a_write_after_it_works(tmp_path: Path, dtype: str) -> None:
    vectors = _clustered(3_000, seed=9)
    labels = np.arange(3_000, dtype=np.int64)
    index = _graph_index(tmp_path, dtype)
    index.add(labels, vectors)
    index.save(3)
    queries = _clustered(10, seed=10)
    expected = index.search(queries, 10)
    del index
    reopened = _graph_index(tmp_path, dtype)
    assert reopened.generation == 3 and len(reopened) == 3_000
    assert reopened.search(queries, 10) == expected
    reopened.save(4)  # unchanged: the mapped graph file is copied into the new generation
    # Writing into the mapped graph would crash usearch: the index loads a copy first.
    reopened.add(np.array([5_000]), queries[:1])
    reopened.delete([0, 1])
    assert reopened.search(queries[:1], 1)[0][0][0] == 5_000
    reopened.save(5)
    del reopened
    again = _graph_index(tmp_path, dtype)
    assert again.generation == 5 and len(again) == 2_999
    assert again.search(queries[:1], 1)[0][0][0] == 5_000
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("gen-")] == [
        json.loads((tmp_path / "stamp.json").read_text())["folder"]]


def test_a_store_of_another_dtype_is_rebuilt_not_misread(tmp_path: Path) -> None:
    index = UsearchVectorIndex(tmp_path, DIM, dtype="i8")
    index.add(np.arange(10), _clustered(10, seed=11))
    index.save(1)
    assert UsearchVectorIndex(tmp_path, DIM, dtype="f16").generation is None


# -- through the store -------------------------------------------------------------------


def _compact_store(path: Path, backend: str = "usearch-i8") -> enginelib.Store:
    return enginelib.open(path, embedder=HashingEmbedder(64),
                          index_options={"vector": {"backend": backend, "M": 8}})


@pytest.mark.parametrize("backend", ["usearch-i8", "usearch-f16"])
def test_store_records_the_compact_form_and_reopens_with_it(tmp_path: Path, backend: str) -> None:
    store = _compact_store(tmp_path / "s", backend)
    store.ingest_documents([doc("manual", paragraphs(8), title="Manual"),
                            doc("guide", paragraphs(5, topic="gearbox"), title="Guide")])
    first = store.search("rotor torque", strategy="vector", answerability_threshold=None)
    store.close()
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["vector_backend"] == backend
    assert manifest["index_options"]["vector"] == {"M": 8}
    reopened = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64))
    assert isinstance(reopened._vector_index, UsearchVectorIndex)
    assert reopened._vector_index.dtype == backend.split("-")[1] and reopened._vector_index.M == 8
    again = reopened.search("rotor torque", strategy="vector", answerability_threshold=None)
    assert [h.label for h in again.hits] == [h.label for h in first.hits]
    reopened.ingest_documents([doc("extra", paragraphs(3, topic="clutch"), title="Extra")])
    hybrid = reopened.search("clutch", strategy="hybrid", answerability_threshold=None)
    assert any(h.document_id == "extra" for h in hybrid.hits)
    reopened.close()
    with pytest.raises(InvalidInputError, match=r"\['backend'\] are fixed when a store"):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64),
                       index_options={"vector": {"backend": "hnsw"}})


def test_unknown_backend_is_refused_before_the_store_exists(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="usearch-i8"):
        _compact_store(tmp_path / "s", "usearch-i4")
    assert not (tmp_path / "s" / "manifest.json").exists()


def test_missing_usearch_names_the_extra(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes ``import usearch.index`` raise ImportError, as when the
    # package is not installed.
    monkeypatch.setitem(sys.modules, "usearch", None)
    monkeypatch.setitem(sys.modules, "usearch.index", None)
    with pytest.raises(MissingExtraError, match=r"enginelib\[compact\]"):
        _compact_store(tmp_path / "s")
    assert not (tmp_path / "s" / "manifest.json").exists()
    with pytest.raises(MissingExtraError):
        VECTOR_BACKENDS["usearch-f16"](tmp_path / "v", DIM)


_WRITER = textwrap.dedent("""
    import sys
    import enginelib
    from enginelib import HashingEmbedder
    from tests.helpers import doc, paragraphs
    store = enginelib.open(sys.argv[1], embedder=HashingEmbedder(64),
                           index_options={"vector": {"backend": "usearch-i8"}}
                           if sys.argv[2] == "create" else None)
    store.ingest_documents([doc(sys.argv[3], paragraphs(4, topic=sys.argv[3]), title="T")])
    store.close()
""")


@pytest.mark.parametrize("step", ["mid_vector_save", "after_vector_save"])
def test_a_writer_killed_while_saving_loses_nothing(tmp_path: Path, step: str) -> None:
    path = str(tmp_path / "s")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    subprocess.run([sys.executable, "-c", _WRITER, path, "create", "alpha"], env=env, check=True)
    killed = subprocess.run([sys.executable, "-c", _WRITER, path, "open", "beta"],
                            env={**env, "ENGINELIB_CRASH_AT": step})
    assert killed.returncode == -9
    store = enginelib.open(path, embedder=HashingEmbedder(64))
    assert store.manifest.vector_backend == "usearch-i8"
    assert not [p for p in (tmp_path / "s").rglob(".tmp-gen-*")]
    assert len(store._vector_index) == store._catalog.con.execute(
        "SELECT count(*) FROM chunks").fetchone()[0]
    found = store.search("beta", strategy="hybrid", answerability_threshold=None)
    assert {h.document_id for h in found.hits} >= {"beta"}
    store.close()


def test_reindex_and_snapshots_keep_the_compact_form(tmp_path: Path) -> None:
    store = _compact_store(tmp_path / "s")
    store.ingest_documents([doc("manual", paragraphs(6), title="Manual")])
    store.reindex(embedder=HashingEmbedder(32))
    assert isinstance(store._vector_index, UsearchVectorIndex)
    assert store.search("rotor", strategy="vector", answerability_threshold=None).hits
    store.create_snapshot("2026.11.0")
    store.close()
    assert json.loads((tmp_path / "s" / "manifest.json").read_text())["vector_backend"] == (
        "usearch-i8")
    snap = enginelib.open(tmp_path / "s", snapshot="2026.11.0", embedder=HashingEmbedder(32))
    assert isinstance(snap._vector_index, UsearchVectorIndex)
    assert snap.search("rotor", strategy="hybrid", answerability_threshold=None).hits
    snap.close()

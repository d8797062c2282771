"""HnswVectorIndex saves what changed: the rows file is appended to, the graph file is kept
(hard-linked) while few labels differ from it, and unsaved rows spill to the file early."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from enginelib.indexes import hnsw, vector_rows
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.hnsw import HnswVectorIndex


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _stamp(folder: Path) -> dict[str, object]:
    return dict(json.loads((folder / hnsw.STAMP).read_text()))


def _graph_inode(folder: Path) -> int:
    return (folder / str(_stamp(folder)["folder"]) / hnsw.GRAPH_FILE).stat().st_ino


def _ids(results: list[list[tuple[int, float]]]) -> list[list[int]]:
    return [[label for label, _ in r] for r in results]


def test_a_small_add_appends_rows_and_keeps_the_graph_file(tmp_path: Path) -> None:
    dim, n = 16, 4_000
    vectors = _unit(n + 150, dim, 0)
    index = HnswVectorIndex(tmp_path, dim, M=8, ef_construction=40)
    index.allow_spill()
    index.add(np.arange(n), vectors[:n])
    index.save(1)
    rows_file, inode = str(_stamp(tmp_path)["rows"]), _graph_inode(tmp_path)

    index = HnswVectorIndex(tmp_path, dim)  # a new writer session adds 100, deletes 20
    index.allow_spill()
    index.add(np.arange(n, n + 100), vectors[n : n + 100])
    index.delete(range(0, 40, 2))
    index.add(np.array([7]), vectors[n + 100 : n + 101])  # a replaced vector, once saved
    index.save(2)
    stamp = _stamp(tmp_path)
    # A delete moved rows inside the saved part, so the rows went to a fresh file; the
    # graph stayed (same inode) with the changes listed beside it.
    assert _graph_inode(tmp_path) == inode
    folder = tmp_path / str(stamp["folder"])
    assert set(np.load(folder / hnsw.PENDING_FILE).tolist()) == set(range(n, n + 100)) | {7}
    assert set(range(0, 40, 2)) <= set(np.load(folder / hnsw.DELETED_FILE).tolist())
    assert not (tmp_path / rows_file).exists() and stamp["rows"] != rows_file

    live = {i: vectors[i] for i in range(n + 100) if not (i < 40 and i % 2 == 0)}
    live[7] = vectors[n + 100]
    labels = np.array(sorted(live))
    matrix = np.stack([live[i] for i in labels])
    queries = np.vstack([vectors[n : n + 10], _unit(20, dim, 1)])
    truth = exact_topk(matrix, labels, queries, 10)

    again = HnswVectorIndex(tmp_path, dim)
    assert len(again) == len(labels) and again.labels().tolist() == labels.tolist()
    got = again.search(queries, 10)
    recall = np.mean([len(set(g) & set(t)) / 10 for g, t in zip(_ids(got), _ids(truth), strict=True)])
    assert recall >= 0.95
    # every pending label is found as its own nearest neighbour; deleted ones never return
    assert [g[0] for g in _ids(got)[:10]] == list(range(n, n + 10))
    assert not {i for g in _ids(got) for i in g} & set(range(0, 40, 2))
    np.testing.assert_allclose(again.vectors_for(labels), matrix, rtol=1e-6)

    # Appends only: the same rows file grows, its saved prefix untouched.
    again.allow_spill()
    rows_file = str(_stamp(tmp_path)["rows"])
    prefix = (tmp_path / rows_file).read_bytes()
    again.add(np.arange(n + 200, n + 250), _unit(50, dim, 2))
    again.save(3)
    assert _stamp(tmp_path)["rows"] == rows_file
    assert (tmp_path / rows_file).read_bytes()[: len(prefix)] == prefix
    assert _graph_inode(tmp_path) == inode


def test_many_changes_rewrite_the_graph_and_fold_the_pending_labels(tmp_path: Path) -> None:
    dim, n = 8, 2_000
    vectors = _unit(n + 1_000, dim, 3)
    index = HnswVectorIndex(tmp_path, dim, M=8, ef_construction=40)
    index.add(np.arange(n), vectors[:n])
    index.save(1)
    inode = _graph_inode(tmp_path)
    index = HnswVectorIndex(tmp_path, dim)
    index.add(np.arange(n, n + 50), vectors[n : n + 50])  # 50 <= 2,000 // 20: deferred
    index.save(2)
    assert _graph_inode(tmp_path) == inode
    index = HnswVectorIndex(tmp_path, dim)
    assert len(index._pending) == 50
    index.add(np.arange(n + 50, n + 1_000), vectors[n + 50 : n + 1_000])
    index.save(3)  # 1,000 changed: the graph is written again, pending folded in
    assert _graph_inode(tmp_path) != inode
    folder = tmp_path / str(_stamp(tmp_path)["folder"])
    assert not (folder / hnsw.PENDING_FILE).exists()
    reopened = HnswVectorIndex(tmp_path, dim)
    assert len(reopened._pending) == 0
    assert reopened._graph is not None and reopened._graph.get_current_count() == n + 1_000
    got = reopened.search(vectors[n : n + 20], 1)
    assert [g[0][0] for g in got] == list(range(n, n + 20))


def test_unsaved_rows_spill_to_the_file_and_a_crash_before_the_stamp_drops_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_rows, "SPILL_ROWS", 500)
    dim = 8
    vectors = _unit(3_000, dim, 4)
    index = HnswVectorIndex(tmp_path, dim, M=8, ef_construction=40)
    index.allow_spill()
    index.add(np.arange(1_000), vectors[:1_000])
    index.save(1)
    saved = str(_stamp(tmp_path)["rows"])
    for start in range(1_000, 3_000, 400):
        index.add(np.arange(start, start + 400), vectors[start : start + 400])
        # bounded: spilled past 500 rows (the tail keeps its first allocation)
        assert index._rows.ram_bytes <= 2 * max(vector_rows._INITIAL_TAIL, 500) * dim * 4
    assert (tmp_path / saved).stat().st_size > 1_000 * dim * 4  # appended, not yet stamped
    # A "crash" here: the stamp still says 1,000 rows, and a new writer appends after them.
    reopened = HnswVectorIndex(tmp_path, dim)
    assert len(reopened) == 1_000
    reopened.allow_spill()
    reopened.add(np.array([5_000]), vectors[2_999:3_000])
    reopened.save(2)
    assert (tmp_path / saved).stat().st_size == 1_001 * dim * 4
    final = HnswVectorIndex(tmp_path, dim)
    np.testing.assert_allclose(final.vectors_for(np.array([0, 999, 5_000])),
                               vectors[[0, 999, 2_999]], rtol=1e-6)


def test_a_reader_never_writes_rows_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_rows, "SPILL_ROWS", 100)
    index = HnswVectorIndex(tmp_path, 8)
    index.add(np.arange(300), _unit(300, 8, 5))  # no allow_spill: all in RAM
    assert not list(tmp_path.glob("rows-*"))
    assert index._rows.ram_bytes >= 300 * 8 * 4

"""HnswVectorIndex at scale: rows mapped from the saved file, ``vectors_for``, ef chosen from
the index size, and filtered searches at 0.1 % selectivity staying exact."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from enginelib.errors import InvalidInputError
from enginelib.indexes import hnsw
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.hnsw import HnswVectorIndex, auto_ef


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_saved_rows_are_mapped_not_held(tmp_path: Path) -> None:
    vectors = _unit(3_000, 16, 0)
    index = HnswVectorIndex(tmp_path, 16)
    index.add(np.arange(3_000), vectors)
    assert index._rows.ram_bytes >= vectors.nbytes  # unsaved rows live in RAM
    index.save(1)
    assert index._rows.ram_bytes == 0  # now the saved file's map
    assert isinstance(index._rows.matrix(), np.memmap)
    reopened = HnswVectorIndex(tmp_path, 16)
    assert reopened._rows.ram_bytes == 0 and isinstance(reopened._rows.matrix(), np.memmap)
    np.testing.assert_allclose(reopened.vectors_for(np.array([2_999, 0, 17])),
                               vectors[[2_999, 0, 17]], rtol=1e-6)


def test_writes_after_reopen_never_touch_the_saved_file(tmp_path: Path) -> None:
    vectors = _unit(2_000, 8, 1)
    first = HnswVectorIndex(tmp_path, 8)
    first.add(np.arange(2_000), vectors)
    first.save(1)
    rows_file = tmp_path / json.loads((tmp_path / hnsw.STAMP).read_text())["rows"]
    saved = rows_file.read_bytes()
    index = HnswVectorIndex(tmp_path, 8)
    extra = _unit(500, 8, 2)
    index.add(np.arange(2_000, 2_500), extra)  # appended after the mapped rows
    index.add(np.array([5]), extra[:1])  # replaces a mapped row (copy-on-write)
    index.delete(range(0, 2_500, 3))  # moves rows from the RAM tail into mapped holes
    expected = {i: vectors[i] for i in range(2_000)} | {2_000 + i: v for i, v in enumerate(extra)}
    expected[5] = extra[0]
    for label in range(0, 2_500, 3):
        expected.pop(label, None)
    labels = np.array(sorted(expected))
    assert index.labels().tolist() == labels.tolist()
    np.testing.assert_allclose(index.vectors_for(labels), np.stack([expected[i] for i in labels]),
                               rtol=1e-6)
    assert rows_file.read_bytes() == saved  # the map is private
    # Searches agree with exact numpy over what is live, then and after a save + reopen.
    queries = _unit(20, 8, 3)
    truth = exact_topk(np.stack([expected[i] for i in labels]), labels, queries, 5)
    assert [[a for a, _ in r] for r in index.search(queries, 5, allowed=labels[::2])] == \
        [[a for a, _ in r] for r in exact_topk(np.stack([expected[i] for i in labels[::2]]),
                                                labels[::2], queries, 5)]
    index.save(2)
    again = HnswVectorIndex(tmp_path, 8)
    got = again.search(queries, 5)
    recall = np.mean([len({a for a, _ in g} & {a for a, _ in t}) / 5 for g, t in zip(got, truth)])
    assert recall >= 0.95
    np.testing.assert_allclose(again.vectors_for(labels), index.vectors_for(labels), rtol=1e-6)


def test_vectors_for_unknown_label_raises(tmp_path: Path) -> None:
    index = HnswVectorIndex(tmp_path, 4)
    index.add(np.array([1, 2]), np.eye(4, dtype=np.float32)[:2])
    with pytest.raises(InvalidInputError, match=r"\[7\]"):
        index.vectors_for(np.array([1, 7]))


def test_ef_grows_with_the_index_and_with_k() -> None:
    assert auto_ef(10_000, 10) == hnsw.DEFAULT_EF_SEARCH
    assert auto_ef(100_000, 10) == hnsw.DEFAULT_EF_SEARCH
    assert 350 <= auto_ef(1_000_000, 10) <= 450  # 0.995 recall@10 needed ef 400 at 1M
    assert auto_ef(10_000, 100) == 200
    sizes = [10_000, 200_000, 500_000, 1_000_000, 5_000_000]
    assert [auto_ef(n, 10) for n in sizes] == sorted(auto_ef(n, 10) for n in sizes)


def test_explicit_ef_is_kept(tmp_path: Path) -> None:
    index = HnswVectorIndex(tmp_path, 4, ef_search=50)
    assert index.ef_for(10) == 50 and index.ef_for(80) == 80


@pytest.fixture(scope="module")
def clustered_20k(tmp_path_factory: pytest.TempPathFactory) -> tuple[HnswVectorIndex, np.ndarray]:
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(50, 32))
    vectors = (centres[rng.integers(0, 50, 20_000)] + 0.8 * rng.normal(size=(20_000, 32)))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    index = HnswVectorIndex(tmp_path_factory.mktemp("c20k"), 32, M=8, ef_construction=40)
    index.add(np.arange(len(vectors)), vectors)
    index.save(1)
    return HnswVectorIndex(index.directory, 32), vectors


def test_filter_at_a_tenth_of_a_percent_returns_the_exact_top_k(
    clustered_20k: tuple[HnswVectorIndex, np.ndarray],
) -> None:
    index, vectors = clustered_20k
    rng = np.random.default_rng(6)
    queries = _unit(30, 32, 7)
    for seed in range(3):
        allowed = np.sort(np.random.default_rng(seed).choice(len(vectors), 20, replace=False))
        expected = exact_topk(vectors[allowed], allowed, queries, 10)
        got = index.search(queries, 10, allowed=rng.permutation(allowed))
        assert [[a for a, _ in r] for r in got] == [[a for a, _ in r] for r in expected]

"""HnswVectorIndex specifics: exact filtered search, growth, deletions, validation, crashes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from enginelib.errors import InvalidInputError, InvalidVectorError
from enginelib.indexes import hnsw
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.hnsw import HnswVectorIndex


def _clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Clustered points of low intrinsic dimension, like real embeddings (isotropic noise
    in 64 dims would make any ANN graph look bad and test nothing of ours)."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(99).normal(size=(8, dim))
    centers = np.random.default_rng(98).normal(size=(40, 8))
    latent = centers[rng.integers(0, len(centers), n)] + 0.5 * rng.normal(size=(n, 8))
    return (latent @ basis).astype(np.float32)


def _normalized(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[HnswVectorIndex, np.ndarray]:
    vectors = _clustered(20_000, 64)
    index = HnswVectorIndex(tmp_path_factory.mktemp("big"), 64, M=8, ef_construction=50)
    index.add(np.arange(len(vectors)), vectors)
    return index, vectors


def test_filter_matching_half_a_percent_is_exact(big: tuple[HnswVectorIndex, np.ndarray]) -> None:
    index, vectors = big
    rng = np.random.default_rng(1)
    allowed = np.sort(rng.choice(len(vectors), 100, replace=False))  # 0.5 % of 20k
    queries = _clustered(25, 64, seed=2)
    expected = exact_topk(_normalized(vectors[allowed]), allowed, _normalized(queries), 10)
    got = index.search(queries, 10, allowed=allowed)
    assert [[lab for lab, _ in r] for r in got] == [[lab for lab, _ in r] for r in expected]
    for g, e in zip(got, expected):
        np.testing.assert_allclose([s for _, s in g], [s for _, s in e], rtol=1e-5)


@pytest.mark.parametrize("fraction", [0.3, 0.7])
def test_large_filters_through_the_graph_keep_recall(
    big: tuple[HnswVectorIndex, np.ndarray], fraction: float
) -> None:
    index, vectors = big
    rng = np.random.default_rng(3)
    allowed = np.sort(rng.choice(len(vectors), int(fraction * len(vectors)), replace=False))
    assert len(allowed) > index.exact_threshold  # really the graph path
    queries = _clustered(30, 64, seed=4)
    expected = exact_topk(_normalized(vectors[allowed]), allowed, _normalized(queries), 10)
    got = index.search(queries, 10, allowed=allowed)
    allowed_set = set(allowed.tolist())
    assert all(lab in allowed_set for r in got for lab, _ in r)
    recall = np.mean([len({a for a, _ in g} & {a for a, _ in e}) / 10
                      for g, e in zip(got, expected)])
    assert recall >= 0.95


def test_graph_results_are_rescored_exactly(big: tuple[HnswVectorIndex, np.ndarray]) -> None:
    index, vectors = big
    query = _clustered(1, 64, seed=5)
    (result,) = index.search(query, 5)
    for label, score in result:
        expected = float((_normalized(vectors[label:label + 1]) @ _normalized(query)[0])[0])
        assert score == pytest.approx(expected, rel=1e-5)


def test_grows_beyond_initial_capacity(tmp_path: Path) -> None:
    index = HnswVectorIndex(tmp_path, 16, exact_threshold=0)
    vectors = _clustered(3_000, 16)  # initial capacity is 1,024
    for start in range(0, 3_000, 700):
        index.add(np.arange(start, min(start + 700, 3_000)), vectors[start:start + 700])
    assert len(index) == 3_000
    assert index._graph is not None and index._graph.get_max_elements() >= 3_000
    (result,) = index.search(vectors[2_999], 1)
    assert result[0][0] == 2_999


def test_deleted_labels_never_come_back(tmp_path: Path) -> None:
    vectors = _clustered(2_000, 16)
    index = HnswVectorIndex(tmp_path, 16, exact_threshold=0)
    index.add(np.arange(2_000), vectors)
    index.delete(range(0, 2_000, 2))
    assert len(index) == 1_000
    for result in index.search(vectors[:50], 20):
        assert all(label % 2 == 1 for label, _ in result)
    index.save(1)
    reloaded = HnswVectorIndex(tmp_path, 16, exact_threshold=0)
    for result in reloaded.search(vectors[:50], 20):
        assert all(label % 2 == 1 for label, _ in result)


def test_mass_deletion_compacts_the_graph(tmp_path: Path) -> None:
    vectors = _clustered(3_000, 16)
    index = HnswVectorIndex(tmp_path, 16, exact_threshold=0)
    index.add(np.arange(3_000), vectors)
    index.delete(range(2_500))
    # Rebuilt from the rows: no marked-deleted slot left.
    assert index._graph is not None and index._graph.element_count == 500
    (result,) = index.search(vectors[2_900], 3)
    assert result[0][0] == 2_900


def test_duplicate_labels_in_one_batch_keep_the_last(tmp_path: Path) -> None:
    index = HnswVectorIndex(tmp_path, 2)
    index.add(np.array([1, 1]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert len(index) == 1
    (result,) = index.search(np.array([[0.0, 1.0]]), 1)
    assert result[0] == (1, pytest.approx(1.0))


@pytest.mark.parametrize(
    "queries",
    [np.ones((1, 5)), np.ones((2, 3, 4)), np.array([[np.nan] * 4]), np.array([[np.inf] * 4]),
     np.zeros((1, 4))],
    ids=["dim", "rank", "nan", "inf", "zero"],
)
def test_bad_query_vectors_raise(tmp_path: Path, queries: np.ndarray) -> None:
    index = HnswVectorIndex(tmp_path, 4)
    index.add(np.array([1]), np.ones((1, 4)))
    with pytest.raises(InvalidVectorError):
        index.search(queries, 1)


def test_dimension_error_names_both_dimensions(tmp_path: Path) -> None:
    index = HnswVectorIndex(tmp_path, 384)
    with pytest.raises(InvalidVectorError, match=r"768.*384"):
        index.add(np.array([1]), np.ones((1, 768)))


def test_bad_labels_raise(tmp_path: Path) -> None:
    index = HnswVectorIndex(tmp_path, 2)
    with pytest.raises(InvalidInputError):
        index.add(np.array([-1]), np.ones((1, 2)))
    with pytest.raises(InvalidInputError):
        index.add(np.array([1, 2]), np.ones((1, 2)))
    with pytest.raises(InvalidInputError):
        index.add(np.array([0.5]), np.ones((1, 2)))


def _saved(tmp_path: Path) -> HnswVectorIndex:
    index = HnswVectorIndex(tmp_path, 4)
    index.add(np.array([1, 2]), np.eye(4)[:2])
    index.save(3)
    return index


def test_crash_while_writing_files_keeps_previous_generation(tmp_path: Path) -> None:
    index = _saved(tmp_path)
    # A crash after the new folder was (partly) written but before the stamp moved: the
    # leftovers are garbage that must be ignored.
    (tmp_path / ".tmp-gen-00000004-dead").mkdir()
    (tmp_path / ".tmp-gen-00000004-dead" / "vectors.hnsw").write_bytes(b"garbage")
    (tmp_path / "gen-00000004-beef").mkdir()
    (tmp_path / "gen-00000004-beef" / "labels.npy").write_bytes(b"\x93NUMPY trunc")
    (tmp_path / ".stamp.json.1234.tmp").write_text('{"generation": 4')
    reopened = HnswVectorIndex(tmp_path, 4)
    assert reopened.generation == 3
    assert reopened.labels().tolist() == [1, 2]
    # The next save cleans the debris up.
    index.save(5)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir())[0].startswith("gen-00000005")
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 1


def test_unreadable_files_give_an_empty_index(tmp_path: Path) -> None:
    _saved(tmp_path)
    stamp = json.loads((tmp_path / hnsw.STAMP).read_text())
    (tmp_path / stamp["folder"] / hnsw.GRAPH_FILE).write_bytes(b"not a graph")
    reopened = HnswVectorIndex(tmp_path, 4)
    assert reopened.generation is None and len(reopened) == 0


@pytest.mark.parametrize("damage", [b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'shape': (", b"\xff" * 64])
def test_a_damaged_label_file_gives_an_empty_index(tmp_path: Path, damage: bytes) -> None:
    # numpy's header parser raises tokenize.TokenError on an unterminated header: not an
    # OSError or ValueError, and it escaped as "unexpected TokenError ... a bug in enginelib"
    _saved(tmp_path)
    stamp = json.loads((tmp_path / hnsw.STAMP).read_text())
    labels = tmp_path / stamp["folder"] / "labels.npy"
    labels.write_bytes(damage + labels.read_bytes()[len(damage):])
    reopened = HnswVectorIndex(tmp_path, 4)
    assert reopened.generation is None and len(reopened) == 0


def test_garbage_stamp_gives_an_empty_index(tmp_path: Path) -> None:
    _saved(tmp_path)
    (tmp_path / hnsw.STAMP).write_text("{not json")
    reopened = HnswVectorIndex(tmp_path, 4)
    assert reopened.generation is None and len(reopened) == 0


def test_other_dimension_on_disk_gives_an_empty_index(tmp_path: Path) -> None:
    _saved(tmp_path)
    assert HnswVectorIndex(tmp_path, 8).generation is None


def test_save_rejects_bad_generation(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        HnswVectorIndex(tmp_path, 4).save(-1)


def test_exact_topk_orders_by_score_then_label() -> None:
    matrix = _normalized(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))
    labels = np.array([7, 3, 1, 5])
    (result,) = exact_topk(matrix, labels, np.array([[1.0, 0.0]], dtype=np.float32), 2)
    assert [label for label, _ in result] == [3, 5]

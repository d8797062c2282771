"""One test body for every index backend: the rules of indexes/base.py's docstring.

Each backend gets a small harness that turns an abstract item "(label, rank)" into its
own kind of entry, such that a fixed query scores items of a lower rank strictly higher
and items of equal rank exactly equally (identical vectors / identical text).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from enginelib.errors import InvalidInputError
from enginelib.indexes.base import TextDocument, TextIndex, VectorIndex
from enginelib.indexes.hnsw import HnswVectorIndex
from enginelib.indexes.tantivy_text import TantivyTextIndex
from enginelib.indexes.usearch_vectors import UsearchVectorIndex

DIM = 8


@dataclass
class Harness:
    make: Callable[[Path], Any]
    add: Callable[[Any, list[tuple[int, int]]], None]  # items: (label, rank)
    query: Any  # one query, in the backend's query type
    protocol: type


def _vector(rank: int) -> np.ndarray:
    # Cosine to e0 falls as rank grows: rank 0 is the best match.
    vec = np.zeros(DIM, dtype=np.float32)
    vec[0] = 1.0
    vec[1] = 0.3 * rank
    return vec


def _vector_add(index: HnswVectorIndex | UsearchVectorIndex, items: list[tuple[int, int]]) -> None:
    labels = np.array([label for label, _ in items], dtype=np.int64)
    index.add(labels, np.stack([_vector(rank) for _, rank in items]))


def _text_add(index: TantivyTextIndex, items: list[tuple[int, int]]) -> None:
    # BM25 length normalization: every extra filler word lowers the score of "alpha".
    index.add([TextDocument(label, "alpha" + " filler" * rank) for label, rank in items])


HARNESSES = {
    "hnsw": Harness(lambda d: HnswVectorIndex(d, DIM), _vector_add,
                    _vector(0)[None, :], VectorIndex),
    # exact_threshold=0 sends every search that can use the graph through it.
    "hnsw-graph": Harness(lambda d: HnswVectorIndex(d, DIM, exact_threshold=0), _vector_add,
                          _vector(0)[None, :], VectorIndex),
    "tantivy": Harness(lambda d: TantivyTextIndex(d), _text_add, ["alpha"], TextIndex),
    # The compact forms ([compact] extra, in [test]): quantized graph, exact float32 re-rank.
    **{
        f"usearch-{dtype}{suffix}": Harness(
            lambda d, dtype=dtype, threshold=threshold: UsearchVectorIndex(
                d, DIM, dtype=dtype, exact_threshold=threshold),
            _vector_add, _vector(0)[None, :], VectorIndex)
        for dtype in ("i8", "f16")
        for suffix, threshold in (("", 2_000), ("-graph", 0))
    },
}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


def _labels(result: list[tuple[int, float]]) -> list[int]:
    return [label for label, _ in result]


def test_follows_the_protocol(harness: Harness, tmp_path: Path) -> None:
    assert isinstance(harness.make(tmp_path), harness.protocol)


def test_empty_index(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    assert len(index) == 0
    assert index.generation is None
    assert index.labels().tolist() == []
    assert index.search(harness.query, 5) == [[]]


def test_best_first_and_scores_descend(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(10, 2), (11, 0), (12, 1), (13, 3)])
    (result,) = index.search(harness.query, 3)
    assert _labels(result) == [11, 12, 10]
    scores = [score for _, score in result]
    assert scores == sorted(scores, reverse=True)
    assert all(isinstance(label, int) and isinstance(score, float) for label, score in result)


def test_add_existing_label_replaces(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 3), (2, 1)])
    harness.add(index, [(1, 0)])
    assert len(index) == 2
    assert _labels(index.search(harness.query, 1)[0]) == [1]
    harness.add(index, [(1, 0)])  # replaying the same add is harmless
    assert len(index) == 2


def test_delete_removes_and_unknown_is_noop(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 0), (2, 1), (3, 2)])
    index.delete([1, 999])
    index.delete([])
    assert index.labels().tolist() == [2, 3]
    assert _labels(index.search(harness.query, 5)[0]) == [2, 3]
    harness.add(index, [(1, 0)])  # a deleted label can come back
    assert _labels(index.search(harness.query, 1)[0]) == [1]


def test_k_larger_than_corpus_returns_all(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(label, label % 3) for label in range(5)])
    assert sorted(_labels(index.search(harness.query, 50)[0])) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("k", [0, -1])
def test_non_positive_k_raises(harness: Harness, tmp_path: Path, k: int) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 0)])
    with pytest.raises(InvalidInputError):
        index.search(harness.query, k)


def test_allowed_restricts_before_ranking(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    # 30 strong matches, then 30 weak ones; only two weak ones are allowed. A global
    # top-2 filtered afterwards would come back empty.
    harness.add(index, [(label, 0) for label in range(30)])
    harness.add(index, [(label, 1 + label % 3) for label in range(30, 60)])
    (result,) = index.search(harness.query, 2, allowed=np.array([45, 41, 7777]))
    assert _labels(result) == [45, 41]  # rank 1 (45 % 3 == 0) before rank 3
    (result,) = index.search(harness.query, 5, allowed=np.array([45, 41]))
    assert sorted(_labels(result)) == [41, 45]


def test_empty_allowed_returns_empty(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 0), (2, 0)])
    assert index.search(harness.query, 3, allowed=np.array([], dtype=np.int64)) == [[]]
    assert index.search(harness.query, 3, allowed=np.array([99])) == [[]]


def test_ties_break_on_smaller_label(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(label, 1) for label in (9, 5, 3, 7)] + [(20, 2)])
    assert _labels(index.search(harness.query, 5)[0]) == [3, 5, 7, 9, 20]
    # The cut falls inside the tie: the smaller labels win it.
    assert _labels(index.search(harness.query, 2)[0]) == [3, 5]
    harness.add(index, [(label, 0) for label in range(100, 140)])  # enough for the graph
    assert _labels(index.search(harness.query, 42)[0])[-2:] == [3, 5]


def test_batch_returns_one_list_per_query(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 0), (2, 1)])
    queries = (np.vstack([harness.query, harness.query]) if isinstance(harness.query, np.ndarray)
               else harness.query * 2)
    first, second = index.search(queries, 1)
    assert first == second and _labels(first) == [1]


def test_save_reload_keeps_content_and_generation(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 0), (2, 1), (3, 2)])
    index.delete([2])
    index.save(7)
    assert index.generation == 7
    expected = index.search(harness.query, 5)
    del index
    reopened = harness.make(tmp_path)
    assert reopened.generation == 7
    assert reopened.labels().tolist() == [1, 3]
    assert reopened.search(harness.query, 5) == expected
    harness.add(reopened, [(4, 0)])
    reopened.save(8)
    del reopened
    assert harness.make(tmp_path).generation == 8


def test_clear_empties(harness: Harness, tmp_path: Path) -> None:
    index = harness.make(tmp_path)
    harness.add(index, [(1, 0), (2, 1)])
    index.clear()
    assert len(index) == 0
    assert index.search(harness.query, 3) == [[]]
    harness.add(index, [(5, 0)])
    assert index.labels().tolist() == [5]


TEXT_HARNESSES = sorted(name for name, h in HARNESSES.items() if h.protocol is TextIndex)


@pytest.mark.parametrize("name", TEXT_HARNESSES)
def test_count_is_the_number_of_live_matches(name: str, tmp_path: Path) -> None:
    # more matches than any top k the gate would ask for, some deleted, one phrase
    harness = HARNESSES[name]
    index = harness.make(tmp_path)
    harness.add(index, [(label, label % 3) for label in range(40)])
    index.add([TextDocument(100 + k, "beta gamma" if k % 2 else "gamma beta") for k in range(6)])
    index.delete([0, 1, 2, 100])
    assert index.count(harness.query[0]) == 37
    assert index.count('"beta gamma"') == 3 and index.count("beta") == 5
    assert index.count("delta") == 0
    index.save(1)
    assert index.count(harness.query[0]) == len(index.search(harness.query, 1_000)[0]) == 37

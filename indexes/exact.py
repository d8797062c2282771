"""Exact (brute-force) cosine top-k over a small matrix: the filtered-search path and the
recall reference for the ANN benchmarks.

Rows and queries are expected to be L2-normalized already, so the dot product is the
cosine similarity. Ordering follows the index contract: score descending, then label
ascending on ties.
"""

from __future__ import annotations

import numpy as np

from enginelib.indexes.base import Labels, Matrix, SearchResult

# Queries are scored against the rows in blocks so a large batch never materializes a
# (queries x rows) matrix bigger than about 64 MB of float32.
_MAX_BLOCK_CELLS = 16_000_000
# A subset holding at least 1/_DENSE_FRACTION of the rows is scored through the full
# matrix and then selected: gathering scattered rows costs more than the extra products.
_DENSE_FRACTION = 4


def exact_topk(
    matrix: Matrix, labels: Labels, queries: Matrix, k: int, rows: np.ndarray | None = None
) -> list[SearchResult]:
    """Return, per query, the ``k`` best ``(label, score)`` pairs among the rows.

    ``matrix`` is (n, dim) float32, ``labels`` is (n,) int64 aligned with its rows,
    ``queries`` is (q, dim). ``rows`` (optional, unique row indices) restricts the
    candidates to those rows. ``k`` larger than the candidate count returns them all.
    """
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    labels = np.asarray(labels, dtype=np.int64)
    dense = rows is None or len(rows) * _DENSE_FRACTION >= matrix.shape[0]
    if rows is not None and not dense:
        # A small subset: copy its rows once rather than score the whole matrix.
        matrix, labels, rows = matrix[rows], labels[rows], None
    n = int(matrix.shape[0]) if rows is None else len(rows)
    if n == 0:
        return [[] for _ in range(len(queries))]
    cand_labels = labels if rows is None else labels[rows]
    k = min(k, n)
    block = max(1, _MAX_BLOCK_CELLS // max(1, matrix.shape[0]))
    results: list[SearchResult] = []
    for start in range(0, len(queries), block):
        # A large subset: one contiguous matrix product beats gathering scattered rows.
        scores = np.asarray(queries[start:start + block], dtype=np.float32) @ matrix.T
        if rows is not None:
            scores = scores[:, rows]
        for row in scores:
            results.append(_topk_row(row, cand_labels, k))
    return results


def _topk_row(scores: np.ndarray, labels: np.ndarray, k: int) -> SearchResult:
    n = scores.shape[0]
    if k < n:
        # argpartition finds the k-th best score; every row scoring at least that much
        # is a candidate so that ties straddling the cut are decided by label, not by
        # argpartition's arbitrary choice.
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    cand_scores = scores[candidates]
    cand_labels = labels[candidates]
    order = np.lexsort((cand_labels, -cand_scores))[:k]
    # tolist() gives the same Python ints and floats as int()/float() on each element,
    # without a numpy scalar per element (a graph search re-ranks ef candidates per query)
    return list(zip(cand_labels[order].tolist(), cand_scores[order].tolist()))

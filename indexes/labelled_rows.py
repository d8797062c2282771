"""Exact float32 rows addressed by chunk label: what a graph backend re-ranks and filters with.

A graph answers approximately (and, in a compact form, from quantized vectors); the exact
rows answer filtered searches over small allowed sets, re-score the graph's candidates with
the same arithmetic as the exact path, and are what the store reads back (``vectors_for``).
Rows are dense (row ``i < len`` is live; a delete moves the last rows into the holes) and
live in ``VectorRows``: a memory map of the saved ``vectors.npy`` plus a RAM tail.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from enginelib.errors import InvalidInputError
from enginelib.indexes.base import Labels, Matrix, SearchResult
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.graph_options import (
    LabelLookup,
    appended_labels,
    label_lookup,
    rows_of_labels,
)
from enginelib.indexes.vector_rows import VectorRows, drop_rows, load_npy


class LabelledRows:
    """label -> row of float32 vectors, with exact top-k over all or some of the rows."""

    def __init__(self, dim: int, rows: VectorRows | None = None,
                 labels: np.ndarray | None = None) -> None:
        self.dim = dim
        self._rows = rows if rows is not None else VectorRows(dim)
        self._labels = (labels.astype(np.int64) if labels is not None
                        else np.zeros(0, dtype=np.int64))  # row -> label, capacity-grown
        self._count = len(self._rows)
        # label -> row as two aligned arrays sorted by label (searchsorted), rebuilt after a
        # write: a dict of a million Python ints costs ~100 MB and a Python loop per lookup.
        self._lookup: LabelLookup | None = None

    @classmethod
    def mapped(cls, folder: Path, vectors_file: str, labels_file: str, dim: int,
               count: int) -> LabelledRows:
        """The rows a ``write`` left in ``folder``; ValueError when they do not add up."""
        labels = load_npy(folder / labels_file)
        rows = VectorRows.mapped(folder / vectors_file, dim) if count else VectorRows(dim)
        if len(rows) != count or labels.shape != (count,) or len(np.unique(labels)) != count:
            raise ValueError(f"{folder}: {len(rows)} rows, labels {labels.shape}, stamp {count}")
        return cls(dim, rows, labels)

    def __len__(self) -> int:
        return self._count

    def live_labels(self) -> np.ndarray:
        """Labels in row order (a view: do not modify)."""
        return self._labels[: self._count]

    def find(self, labels: np.ndarray) -> np.ndarray:
        """The row of each label, -1 where absent."""
        if self._lookup is None:
            self._lookup = label_lookup(self._labels[: self._count])
        return rows_of_labels(self._lookup, labels)

    # -- writes --------------------------------------------------------------------

    def upsert(self, labels: np.ndarray, matrix: np.ndarray) -> np.ndarray:
        """Store the rows (unique labels); returns the mask of labels that were present."""
        rows = self.find(labels)
        present = rows >= 0
        if present.any():
            self._rows.put(rows[present], matrix[present])
        fresh = ~present
        if fresh.any():
            self._labels = appended_labels(self._labels, self._count, labels[fresh])
            self._rows.extend(matrix[fresh])
            self._count += int(fresh.sum())
            self._lookup = None
        return present

    def remove(self, labels: np.ndarray) -> np.ndarray:
        """Drop the rows of ``labels`` (unknown ones ignored); returns the labels removed."""
        rows = self.find(labels)
        gone, rows = labels[rows >= 0], rows[rows >= 0]
        if not len(rows):
            return gone
        self._count = drop_rows(self._rows, self._labels, self._count, rows)
        self._lookup = None
        return gone

    def write(self, folder: Path, vectors_file: str, labels_file: str) -> None:
        self._rows.write(folder / vectors_file)
        np.save(folder / labels_file, self._labels[: self._count])

    def remap(self, folder: Path, vectors_file: str) -> None:
        """After a save: read the rows from the file just written, dropping the RAM tail."""
        if self._count:
            self._rows = VectorRows.mapped(folder / vectors_file, self.dim)

    # -- reads ---------------------------------------------------------------------

    def take(self, rows: np.ndarray) -> np.ndarray:
        return self._rows.take(rows)

    def matrix(self) -> np.ndarray:
        return self._rows.matrix()

    def vectors_for(self, labels: Labels) -> Matrix:
        rows = self.find(labels)
        if (rows < 0).any():
            missing = labels[rows < 0][:5].tolist()
            raise InvalidInputError(f"labels {missing} are not in the vector index; pass labels "
                                    f"of chunks it holds (index.labels())")
        return self._rows.take(rows)

    def rows_of(self, allowed: Labels) -> np.ndarray:
        """The rows of the allowed labels that are present (unique, unknown ones dropped)."""
        rows = self.find(np.unique(np.asarray(allowed, dtype=np.int64)))
        return rows[rows >= 0]

    def exact(self, queries: Matrix, k: int, rows: np.ndarray | None = None) -> list[SearchResult]:
        """Exact top-k over every row, or over ``rows``."""
        if rows is None:
            return exact_topk(self._rows.matrix(), self._labels[: self._count], queries, k)
        return exact_topk(self._rows.take(rows), self._labels[rows], queries, k)

    def rerank(self, query: np.ndarray, candidates: np.ndarray, k: int) -> SearchResult:
        """Exact top-k of one query among candidate labels (absent ones dropped)."""
        rows = self.find(candidates)
        keep = rows >= 0
        return exact_topk(self._rows.take(rows[keep]), candidates[keep], query[None, :], k)[0]

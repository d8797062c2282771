"""Input checks and label lookups shared by the graph vector backends (hnsw.py,
usearch_vectors.py and its labelled_rows.py)."""

from __future__ import annotations

import numpy as np

from enginelib.errors import InvalidInputError, InvalidVectorError
from enginelib.indexes.base import Labels, Matrix


def check_graph_options(dim: int, exact_threshold: int, **positive: int | None) -> None:
    """InvalidInputError naming the option when a dimension, a graph option (``M``,
    ``ef_construction``, ``ef_search``, ``num_threads``: None means "choose") or the exact-path
    threshold cannot be used."""
    if dim <= 0:
        raise InvalidInputError(f"vector dimension must be positive, got {dim}")
    for name, value in positive.items():
        if value is not None and value <= 0:
            raise InvalidInputError(f"{name} must be positive, got {value}")
    if exact_threshold < 0:
        raise InvalidInputError(f"exact_threshold must be >= 0, got {exact_threshold}")


def check_labels(labels: Labels) -> np.ndarray:
    """Labels as a 1-D int64 array of non-negative integers, or InvalidInputError."""
    arr = np.asarray(labels)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidInputError(f"labels must be a 1-D array of integers, got {arr.dtype} "
                                f"with shape {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        raise InvalidInputError("labels must be non-negative chunk labels")
    return arr


def check_matrix(data: Matrix, dim: int, *, what: str) -> np.ndarray:
    """Finite, non-zero rows of ``dim`` values, L2-normalized as float32."""
    try:
        matrix = np.asarray(data, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidVectorError(f"{what} must be numeric arrays: {exc}") from exc
    if matrix.ndim == 1 and matrix.size == dim:
        matrix = matrix[None, :]
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        got = matrix.shape[-1] if matrix.ndim else 0
        raise InvalidVectorError(
            f"{what} have {got} dimensions (shape {matrix.shape}); this index holds "
            f"{dim}-dimensional vectors: embed with the store's model"
        )
    if not np.isfinite(matrix).all():
        raise InvalidVectorError(f"{what} contain NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    if (norms == 0).any():
        raise InvalidVectorError(f"{what} contain an all-zero vector; cosine is undefined")
    return np.ascontiguousarray(matrix / norms[:, None], dtype=np.float32)


def one_row_per_label(labels: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Checked labels paired with their rows; a label repeated within the batch keeps its
    last row, as if the rows were added one by one."""
    if len(labels) != len(matrix):
        raise InvalidInputError(
            f"got {len(labels)} labels for {len(matrix)} vectors; pass one label per row"
        )
    _, last = np.unique(labels[::-1], return_index=True)
    keep = np.sort(len(labels) - 1 - last)
    return labels[keep], matrix[keep]


LabelLookup = tuple[np.ndarray, np.ndarray]
# Label slots a new index starts with; it doubles when full.
INITIAL_LABEL_CAPACITY = 1_024


def appended_labels(buffer: np.ndarray, count: int, labels: np.ndarray) -> np.ndarray:
    """``buffer`` (its first ``count`` slots live) with ``labels`` written after them: the
    same array while they fit, else a copy at least twice as long (amortized appends)."""
    end = count + len(labels)
    if end > len(buffer):
        grown = np.zeros(max(INITIAL_LABEL_CAPACITY, end, 2 * len(buffer)), dtype=np.int64)
        grown[:count] = buffer[:count]
        buffer = grown
    buffer[count:end] = labels
    return buffer


def label_lookup(live: np.ndarray) -> LabelLookup:
    """The live labels sorted, with the row each stands in (built once per change)."""
    order = np.argsort(live, kind="stable")
    return live[order], order.astype(np.int64)


def rows_of_labels(lookup: LabelLookup, labels: np.ndarray) -> np.ndarray:
    """The row of each label, -1 where absent."""
    keys, rows = lookup
    if not len(keys):
        return np.full(len(labels), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, labels), len(keys) - 1)
    return np.where(keys[at] == labels, rows[at], -1)

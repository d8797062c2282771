"""Embedders (kept as the import path older code and users know): see enginelib.embedders."""

from __future__ import annotations

from .embedders import (
    DEFAULT_EMBEDDER,
    E5SmallEmbedder,
    Embedder,
    HashingEmbedder,
    ProgressHook,
    QueryEmbeddingCache,
    SentenceTransformerEmbedder,
    check_vectors,
    make_embedder,
)
from .embedders.minilm import DEFAULT_BATCH_SIZE, MINILM

# The model a store gets when its creator names none.
DEFAULT_MODEL = DEFAULT_EMBEDDER


def default_embedder() -> Embedder:
    return make_embedder(DEFAULT_EMBEDDER)


__all__ = [
    "DEFAULT_BATCH_SIZE", "DEFAULT_MODEL", "MINILM", "E5SmallEmbedder", "Embedder",
    "HashingEmbedder", "ProgressHook", "QueryEmbeddingCache", "SentenceTransformerEmbedder",
    "check_vectors", "default_embedder",
]

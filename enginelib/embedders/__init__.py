"""Embedders: the contract, one small module per backend, the registry, the embedding path."""

from __future__ import annotations

from .base import Embedder, ProgressHook, QueryEmbedder, check_vectors, normalize_rows
from .e5 import E5_SMALL, E5SmallEmbedder
from .hashing import HashingEmbedder
from .joined import E5_MINILM, JoinedEmbedder
from .minilm import MINILM, SentenceTransformerEmbedder
from .path import (
    QueryEmbeddingCache,
    cache_key,
    embed_passages,
    embed_queries,
    identity_problem,
    passage_text,
    vectors_with_cache,
)
from .registry import (
    DEFAULT_EMBEDDER,
    EMBEDDERS,
    UnavailableEmbedder,
    embedder_for_store,
    embedder_names,
    make_embedder,
    resolve_embedder,
)

__all__ = [
    "DEFAULT_EMBEDDER", "E5_MINILM", "E5_SMALL", "EMBEDDERS", "MINILM", "E5SmallEmbedder", "Embedder",
    "HashingEmbedder", "JoinedEmbedder", "ProgressHook", "QueryEmbedder", "QueryEmbeddingCache",
    "SentenceTransformerEmbedder", "UnavailableEmbedder", "cache_key", "check_vectors",
    "embed_passages", "embed_queries", "embedder_for_store", "embedder_names", "identity_problem",
    "make_embedder", "normalize_rows", "passage_text", "resolve_embedder", "vectors_with_cache",
]

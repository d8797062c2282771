"""Index backends behind the contract in ``base.py``, chosen by name from small registries."""

from __future__ import annotations

from enginelib.indexes.base import (
    TextDocument,
    TextIndex,
    TextIndexFactory,
    VectorIndex,
    VectorIndexFactory,
)
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.hnsw import HnswVectorIndex
from enginelib.indexes.tantivy_text import TantivyTextIndex

VECTOR_BACKENDS: dict[str, VectorIndexFactory] = {"hnsw": HnswVectorIndex}
TEXT_BACKENDS: dict[str, TextIndexFactory] = {"tantivy": TantivyTextIndex}

__all__ = [
    "TEXT_BACKENDS",
    "VECTOR_BACKENDS",
    "HnswVectorIndex",
    "TantivyTextIndex",
    "TextDocument",
    "TextIndex",
    "TextIndexFactory",
    "VectorIndex",
    "VectorIndexFactory",
    "exact_topk",
]

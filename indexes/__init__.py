"""Index backends behind the contract in ``base.py``, chosen by name from small registries."""

from __future__ import annotations

from enginelib.indexes.base import (
    IndexFiles,
    TextDocument,
    TextIndex,
    TextIndexFactory,
    VectorIndex,
    VectorIndexFactory,
)
from enginelib.indexes.exact import exact_topk
from enginelib.indexes.hnsw import HnswVectorIndex
from enginelib.indexes.hnsw_files import HnswFiles
from enginelib.indexes.tantivy_files import TantivyFiles
from enginelib.indexes.tantivy_text import TantivyTextIndex

VECTOR_BACKENDS: dict[str, VectorIndexFactory] = {"hnsw": HnswVectorIndex}
TEXT_BACKENDS: dict[str, TextIndexFactory] = {"tantivy": TantivyTextIndex}
# Each backend's file knowledge, by the same names (the store core asks these, never the files).
VECTOR_FILES: dict[str, IndexFiles] = {"hnsw": HnswFiles()}
TEXT_FILES: dict[str, IndexFiles] = {"tantivy": TantivyFiles()}

__all__ = [
    "TEXT_BACKENDS",
    "TEXT_FILES",
    "VECTOR_BACKENDS",
    "VECTOR_FILES",
    "HnswVectorIndex",
    "IndexFiles",
    "TantivyTextIndex",
    "TextDocument",
    "TextIndex",
    "TextIndexFactory",
    "VectorIndex",
    "VectorIndexFactory",
    "exact_topk",
]

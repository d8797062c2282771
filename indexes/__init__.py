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
from enginelib.indexes.usearch_files import UsearchFiles
from enginelib.indexes.usearch_vectors import UsearchVectorIndex, usearch_f16, usearch_i8

# "usearch-*" are the compact forms (issue 15): quantized graph vectors in RAM, exact float32
# re-rank from disk; they need the [compact] extra (usearch), imported only when opened.
VECTOR_BACKENDS: dict[str, VectorIndexFactory] = {
    "hnsw": HnswVectorIndex, "usearch-i8": usearch_i8, "usearch-f16": usearch_f16,
}
TEXT_BACKENDS: dict[str, TextIndexFactory] = {"tantivy": TantivyTextIndex}
# Each backend's file knowledge, by the same names (the store core asks these, never the files).
VECTOR_FILES: dict[str, IndexFiles] = {
    "hnsw": HnswFiles(), "usearch-i8": UsearchFiles(), "usearch-f16": UsearchFiles(),
}
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
    "UsearchVectorIndex",
    "VectorIndex",
    "VectorIndexFactory",
    "exact_topk",
]

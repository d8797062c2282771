"""Index backends behind the contract in ``base.py``, chosen by name from small registries."""

from __future__ import annotations

from typing import Any

from enginelib.errors import InvalidInputError
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
from enginelib.indexes.usearch_vectors import (
    UsearchVectorIndex,
    require_usearch,
    usearch_f16,
    usearch_i8,
)

# "usearch-*" are the compact forms (issue 15): quantized graph vectors in RAM, exact float32
# re-rank from disk; they need the [compact] extra (usearch), imported only when opened.
DEFAULT_VECTOR_BACKEND = "hnsw"
VECTOR_BACKENDS: dict[str, VectorIndexFactory] = {
    "hnsw": HnswVectorIndex, "usearch-i8": usearch_i8, "usearch-f16": usearch_f16,
}
TEXT_BACKENDS: dict[str, TextIndexFactory] = {"tantivy": TantivyTextIndex}
# Each backend's file knowledge, by the same names (the store core asks these, never the files).
VECTOR_FILES: dict[str, IndexFiles] = {
    "hnsw": HnswFiles(), "usearch-i8": UsearchFiles(), "usearch-f16": UsearchFiles(),
}
TEXT_FILES: dict[str, IndexFiles] = {"tantivy": TantivyFiles()}



def split_vector_backend(
    index_options: dict[str, Any] | None,
) -> tuple[str, dict[str, Any] | None]:
    """A new store's vector backend (``index_options["vector"]["backend"]``, "hnsw" when
    absent) and the options without it. An unknown name, or a backend whose optional package
    is missing, raises before the store records it."""
    vector = dict((index_options or {}).get("vector") or {})
    name = vector.pop("backend", DEFAULT_VECTOR_BACKEND)
    if not isinstance(name, str) or name not in VECTOR_BACKENDS:
        raise InvalidInputError(
            f"index_options['vector']['backend'] is {name!r}; choose one of "
            f"{sorted(VECTOR_BACKENDS)} (\"usearch-i8\" / \"usearch-f16\": the compact forms)"
        )
    if name.startswith("usearch-"):
        require_usearch()
    if not index_options or "vector" not in index_options:
        return name, index_options
    return name, {**index_options, "vector": vector}


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
    "split_vector_backend",
]

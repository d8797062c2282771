"""enginelib: in-process hybrid search (hnswlib + Tantivy + DuckDB) with cited, trust-labelled results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .chunker import Chunker, ChunkingConfig
from .embedder import E5SmallEmbedder, Embedder, HashingEmbedder, SentenceTransformerEmbedder
from .errors import (
    DocumentNotFoundError,
    EngineError,
    ExportError,
    IncompatibleStoreError,
    IngestError,
    IntegrityError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    InvalidTruthLevelError,
    InvalidVectorError,
    LoaderError,
    ReadOnlyStoreError,
    SnapshotError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from .search import (
    NO_RELEVANT_SOURCES,
    Citation,
    Hit,
    RagContext,
    Scores,
    SearchResponse,
    check_answer_citations,
)
from .store import Store
from .types import TRUTH_LEVELS, IngestReport, LoadedDocument

__version__ = "0.1.0"


def open(path: str | Path, *, snapshot: str | None = None, **options: Any) -> Store:  # noqa: A001
    """Open the store at ``path`` (created if missing), or one of its snapshots read-only.

    Options: ``embedder`` (an Embedder or a built-in name: "e5-small", the default, or
    "all-MiniLM-L6-v2"; an existing store uses the one it recorded), ``chunking``
    (ChunkingConfig, new stores only), ``read_only``, ``create``, ``lock_timeout``.
    """
    if snapshot is not None:
        from .snapshots import open_snapshot

        return open_snapshot(path, snapshot, **options)
    return Store.open(path, **options)


__all__ = [
    "NO_RELEVANT_SOURCES", "TRUTH_LEVELS", "Chunker", "ChunkingConfig", "Citation",
    "DocumentNotFoundError", "E5SmallEmbedder", "Embedder", "EngineError", "ExportError", "HashingEmbedder",
    "IncompatibleStoreError", "IngestError", "IngestReport", "IntegrityError", "InvalidFilterError",
    "InvalidInputError", "InvalidQueryError", "InvalidTruthLevelError", "InvalidVectorError",
    "Hit", "LoadedDocument", "LoaderError", "RagContext", "ReadOnlyStoreError", "Scores",
    "SearchResponse", "SentenceTransformerEmbedder", "SnapshotError", "Store", "StoreError", "StoreLockedError",
    "StoreNotFoundError", "check_answer_citations", "open",
]

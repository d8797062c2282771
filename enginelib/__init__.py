"""enginelib: in-process hybrid search (hnswlib + Tantivy + DuckDB) with cited, trust-labelled results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .chunker import Chunker, ChunkingConfig
from .embedder import E5SmallEmbedder, Embedder, HashingEmbedder, SentenceTransformerEmbedder
from .errors import (
    CorruptStoreError,
    DamagedSnapshotError,
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
    PruneRefusedError,
    RankingChangedError,
    ReadOnlyStoreError,
    RerankerError,
    RewriterError,
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

    ``":memory:"`` gives an in-memory store (see ``memory()``).
    Options: ``embedder`` (an Embedder or a built-in name: "e5-small", the default, or
    "all-MiniLM-L6-v2"; an existing store uses the one it recorded), ``chunking``
    (ChunkingConfig, new stores only), ``read_only``, ``create``, ``lock_timeout``.
    """
    if isinstance(path, str) and path == ":memory:":
        from .memory_store import open_memory

        return open_memory(snapshot=snapshot, **options)
    if snapshot is not None:
        from .store import open_snapshot

        return open_snapshot(path, snapshot, **options)
    return Store.open(path, **options)


def memory(
    records: Iterable[LoadedDocument | Mapping[str, Any]] | None = None, **options: Any
) -> Store:
    """A new store held in memory (nothing left on disk), optionally seeded with ``records``.

    Same as ``open(":memory:")``. Records are dicts shaped like JSONL lines (``id``, ``text``,
    metadata, optionally their own ``vector``) or LoadedDocuments. Options: ``embedder``,
    ``chunking``, ``index_options``, ``truth_level`` (for records that carry none).
    ``store.save(path)`` writes it to a folder that ``open(path)`` reads.
    """
    from .memory_store import open_memory

    return open_memory(records=records, **options)


__all__ = [
    "NO_RELEVANT_SOURCES", "TRUTH_LEVELS", "Chunker", "ChunkingConfig", "Citation",
    "DocumentNotFoundError", "E5SmallEmbedder", "Embedder", "EngineError", "ExportError", "HashingEmbedder",
    "CorruptStoreError", "DamagedSnapshotError", "IncompatibleStoreError", "IngestError", "IngestReport", "IntegrityError", "InvalidFilterError",
    "InvalidInputError", "InvalidQueryError", "InvalidTruthLevelError", "InvalidVectorError",
    "Hit", "LoadedDocument", "LoaderError", "PruneRefusedError", "RagContext", "ReadOnlyStoreError", "Scores",
    "RankingChangedError", "RerankerError", "RewriterError",
    "SearchResponse", "SentenceTransformerEmbedder", "SnapshotError", "Store", "StoreError", "StoreLockedError",
    "StoreNotFoundError", "check_answer_citations", "memory", "open",
]

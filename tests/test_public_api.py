"""The public names: removing or renaming one is a breaking change and must be deliberate."""

from __future__ import annotations

import enginelib

PUBLIC = {
    "NO_RELEVANT_SOURCES", "TRUTH_LEVELS", "Chunker", "ChunkingConfig", "Citation",
    "DocumentNotFoundError", "E5SmallEmbedder", "Embedder", "EngineError", "ExportError",
    "HashingEmbedder", "Hit",
    "CorruptStoreError", "DamagedSnapshotError", "IncompatibleStoreError", "IngestError", "IngestReport", "IntegrityError",
    "InvalidFilterError", "InvalidInputError", "InvalidQueryError", "InvalidTruthLevelError",
    "InvalidVectorError", "LoadedDocument", "LoaderError", "PruneRefusedError", "RagContext", "ReadOnlyStoreError",
    "RerankerError", "RewriterError",
    "Scores", "SearchResponse", "SentenceTransformerEmbedder", "SnapshotError", "Store",
    "StoreError", "StoreLockedError", "StoreNotFoundError", "check_answer_citations", "memory", "open",
}


def test_public_names_are_pinned() -> None:
    assert set(enginelib.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(enginelib, name) is not None


def test_every_error_is_an_engine_error() -> None:
    errors = [getattr(enginelib, n) for n in PUBLIC if n.endswith("Error")]
    assert errors and all(issubclass(e, enginelib.EngineError) for e in errors)
    # Built-in bases where they help callers: bad arguments are ValueErrors, a missing
    # document is a KeyError, a missing store a FileNotFoundError.
    assert issubclass(enginelib.InvalidFilterError, ValueError)
    assert issubclass(enginelib.DocumentNotFoundError, KeyError)
    assert issubclass(enginelib.StoreNotFoundError, FileNotFoundError)


def test_store_methods_read_like_the_docs() -> None:
    for method in ("ingest_path", "ingest_documents", "search", "search_batch", "show", "history",
                   "stats", "delete_document", "create_snapshot", "list_snapshots",
                   "restore_snapshot", "check", "repair", "reindex", "export_postgres", "to_sql",
                   "logged_queries", "search_presets", "set_default_search_preset", "close"):
        assert callable(getattr(enginelib.Store, method)), method

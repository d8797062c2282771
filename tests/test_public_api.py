"""The public names: removing or renaming one is a breaking change and must be deliberate."""

from __future__ import annotations

from pathlib import Path

import enginelib

PUBLIC = {
    "NO_RELEVANT_SOURCES", "TRUTH_LEVELS", "Chunker", "ChunkingConfig", "Citation",
    "DocumentNotFoundError", "E5SmallEmbedder", "Embedder", "EngineError", "ExportError",
    "HashingEmbedder", "Hit",
    "CorruptStoreError", "DamagedSnapshotError", "IncompatibleStoreError", "IngestError", "IngestReport", "IntegrityError",
    "InvalidFilterError", "InvalidInputError", "InvalidQueryError", "InvalidTruthLevelError",
    "InvalidVectorError", "LoadedDocument", "LoaderError", "PruneRefusedError", "RagContext", "ReadOnlyStoreError",
    "RankingChangedError", "RerankerError", "RewriterError",
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


# Plumbing of the commit protocol, once public-named and reachable (unchecked) from a
# user's Store: store.apply_commit("x", []) or store.adopt_model(None, None) failed deep
# inside, or put the indexes out of step with the catalog.
INTERNAL = ("apply_commit", "adopt_model", "committed", "indexes_follow", "sync_indexes")
# Public callables outside store_guard.CHECKS: the openers (wrapped by store_guard on their
# own), two argument-free state checks, and the job queue (enginelib/jobs.py).
UNCHECKED = {"open", "open_for_maintenance", "require_open", "require_writable", "jobs"}


def test_every_public_store_method_is_checked_at_the_edge() -> None:
    from enginelib.store_guard import CHECKS

    public = {name for name in dir(enginelib.Store)
              if not name.startswith("_") and callable(getattr(enginelib.Store, name))}
    assert public - set(CHECKS) == UNCHECKED
    for name in public & set(CHECKS):
        assert hasattr(getattr(enginelib.Store, name), "__wrapped__"), name


def test_a_store_keeps_its_catalog_and_indexes_to_itself(tmp_path: Path) -> None:
    # store.vector_index.clear() then store.persist() saved an empty index stamped as
    # current: every search missed until `enginelib repair`. They are the core's own now.
    import pytest

    store = enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(dim=16))
    try:
        store.ingest_documents([enginelib.LoadedDocument(id="a", text="brake pads " * 20)])
        for name in ("vector_index", "text_index"):
            assert not hasattr(store, name), name
        catalog = store.catalog  # read by enginelib.jobs and enginelib.web only
        with pytest.raises(AttributeError, match="cannot be replaced"):
            store.catalog = None  # type: ignore[assignment]
        assert store.catalog is catalog
        assert store.stats()["vector_index_size"] == store.stats()["text_index_size"] == 1
        hits = store.search("brake pads", answerability_threshold=None).hits
        assert [h.document_id for h in hits] == ["a"]
    finally:
        store.close()


def test_a_store_offers_no_commit_plumbing(tmp_path: Path) -> None:
    store = enginelib.open(tmp_path / "s", embedder=enginelib.HashingEmbedder(dim=16))
    try:
        store.ingest_documents([enginelib.LoadedDocument(id="a", text="brake pads " * 20)])
        for name in INTERNAL:
            assert not hasattr(store, name), name
        # what a user may call instead still works: persist, and a reader's refresh
        store.persist()
        reader = enginelib.open(tmp_path / "s", read_only=True,
                                embedder=enginelib.HashingEmbedder(dim=16))
        try:
            store.ingest_documents([enginelib.LoadedDocument(id="b", text="wiper " * 20)])
            assert reader.refresh() is True
            assert len(reader.view()) == 2
        finally:
            reader.close()
    finally:
        store.close()

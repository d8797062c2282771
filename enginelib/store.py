"""The Store: the public facade over one store folder, composing the operations.

The folder itself (lock, layout, generations, commits) is ``enginelib.core.store_core``'s
``StoreCore``; each method here hands the core to one operation module (ingest, search,
snapshots, maintenance, export, jobs), which never imports this module.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import manifest as mf
from .catalog_documents import store_counts
from .chunker import ChunkingConfig
from .core import layout
from .core.layout import CATALOG_NAME, LOCK_NAME
from .core.store_core import StoreCore
from .embedders import Embedder, embedder_for_store, resolve_embedder
from .errors import (
    IncompatibleStoreError,
    InvalidInputError,
    StoreNotFoundError,
)
from .schema import SCHEMA_VERSION
from .search.cache import cache_stats
from .search.request import search_signature
from .types import IngestReport, LoadedDocument
from .validation import check_document_id, check_embedder

if TYPE_CHECKING:
    from .export import ExportReport
    from .jobs import JobQueue
    from .maintenance import IntegrityReport, ReindexReport
    from .snapshots import RestoreReport, SnapshotDiff, SnapshotInfo

# Documents per catalog transaction: each commit closes the DuckDB file (a checkpoint) so
# that readers in other processes get their turn; larger batches amortize that cost.
DEFAULT_BATCH = 256
# The core reads ``schema.SCHEMA_VERSION`` when it opens; the name stays here for callers
# (and tests) that knew it as ``enginelib.store.SCHEMA_VERSION``.
__all__ = ["CATALOG_NAME", "DEFAULT_BATCH", "LOCK_NAME", "SCHEMA_VERSION", "Store",
           "open_for_maintenance", "open_snapshot", "remove_store"]


class Store(StoreCore):
    """A store folder: DuckDB catalog (truth), hnswlib + Tantivy indexes (derived), manifest."""

    # -- ingestion -------------------------------------------------------------------------

    def ingest_documents(
        self, documents: Iterable[LoadedDocument], *, progress: bool = False, batch_size: int = DEFAULT_BATCH, **options: Any
    ) -> IngestReport:
        """Ingest documents; one catalog transaction per batch, indexes updated to match.

        Options (applied to every document unless its own metadata says otherwise):
        truth_level, domain, source_type, tags, metadata, author, language, tenant_id,
        source_id, validated_by, parent_document_id, entities; ``strict=True`` makes the
        call all-or-nothing (the first bad record raises, nothing is written).
        """
        from .ingest_run import run_ingest

        self.require_writable()
        return run_ingest(self, documents, options, batch_size=batch_size, progress=progress)

    def ingest_path(
        self,
        *paths: str | Path,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        max_bytes: int | None = None,
        progress: bool = False,
        prune: bool = False,
        **options: Any,
    ) -> IngestReport:
        """Ingest files and folders (options as ``ingest_documents``).

        ``prune=True`` keeps the folders given in sync: after the ingest, the documents whose
        file inside one of them is gone (renamed, removed) are deleted, their versions
        archived; ``report.pruned`` lists them. A file that failed to load is kept; a folder
        that is gone or holds no file at all raises PruneRefusedError instead of emptying
        the store of it (see enginelib/prune.py).
        """
        from .loaders import DEFAULT_MAX_BYTES, iter_load

        self.require_writable()
        # A store kept inside the folder it ingests (`enginelib ingest .` beside the default
        # ./enginelib-store) is not walked: its catalog and index files came out as skipped
        # inputs, and a file uploaded to `serve` waiting in uploads/ as a second document.
        items = iter_load(
            paths, include=include, exclude=exclude, max_bytes=max_bytes or DEFAULT_MAX_BYTES,
            skip_folders=(self.path,),
        )
        from .ingest_run import run_ingest

        if not prune:
            return run_ingest(self, items, options, batch_size=DEFAULT_BATCH, progress=progress)
        from .prune import prune_after, sync_folders

        folders = sync_folders(paths)
        report = run_ingest(self, items, options, batch_size=DEFAULT_BATCH, progress=progress)
        return prune_after(self, report, folders)

    def delete_document(self, document_id: str) -> None:
        """Delete a document: its versions are archived (``history`` keeps them), its chunks
        leave both indexes."""
        from .deletion import delete_documents

        self.require_writable()
        self._catalog.require_document(document_id)
        delete_documents(self, [document_id])

    def add_source(self, source_id: str, **fields: Any) -> None:
        """Register (or update) a source with its authority: name, tier (gold, silver,
        bronze), evidence_level, authority_score (0..100), institution, peer_reviewed.
        A new source takes the fields given (the rest: None, ``peer_reviewed`` False); for a
        source already registered only the fields given change, so
        ``add_source("who", institution="WHO")`` keeps its tier and score. To clear a field,
        pass it as None (``peer_reviewed=None`` sets it back to False)."""
        from .sources import upsert_source

        self.require_writable()
        upsert_source(self._catalog, source_id, **fields)
        self._committed()
        self.persist()

    def save_search_preset(self, name: str, **values: Any) -> None:
        """Store a named fusion preset (fusion, rrf_k, weights, min_score, description).
        A built-in name (``default``, ``keyword``, ``balanced``, ``semantic``) is replaced for
        this store: that is how a store tunes what its searches use by default."""
        from .search.presets import PRESET_FIELDS, save_preset

        self.require_writable()
        unknown = set(values) - PRESET_FIELDS
        if unknown:  # a TypeError from deep inside said less
            raise InvalidInputError(
                f"unknown preset field(s) {sorted(unknown)}; a preset holds "
                f"{', '.join(sorted(PRESET_FIELDS))} (limit, filters and the like are per search)")
        save_preset(self._catalog, name, **values)
        self._committed()
        self.persist()

    def set_default_search_preset(self, name: str) -> None:
        """The preset searches use when they name none (``default``: RRF k=60)."""
        from .search.presets import set_default_preset

        self.require_writable()
        set_default_preset(self._catalog, name)
        self._committed()
        self.persist()

    def update_document(
        self, document_id: str, *, truth_level: str | None = None,
        tags: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Change a document's truth level, tags or custom metadata; nothing is re-embedded."""
        from .documents import update_metadata

        self.require_writable()
        doc = update_metadata(self._catalog, document_id, truth_level=truth_level, tags=tags,
                              metadata=metadata)
        self._committed()
        self.persist()
        return doc

    # -- jobs (implemented in enginelib.jobs) ----------------------------------------------

    def jobs(self, **options: Any) -> JobQueue:
        """This store's ingestion job queue (max_attempts, lease_s, time_unit, clock, rand,
        retention)."""
        import inspect

        from .jobs import JobQueue
        from .search.request import unknown_options_error

        # a misspelt option was a bare TypeError from JobQueue.__init__
        known = [name for name in inspect.signature(JobQueue).parameters if name != "catalog"]
        unknown = set(options) - set(known)
        if unknown:
            raise unknown_options_error(unknown, known, "job queue option")
        return JobQueue(self._catalog, **options)

    def enqueue_paths(self, *paths: str | Path, include: Sequence[str] = (),
                      exclude: Sequence[str] = (), max_attempts: int | None = None,
                      **options: Any) -> list[int]:
        """One PENDING job per file (folders walked); a worker ingests them later."""
        from .jobs import DEFAULT_MAX_ATTEMPTS, jobs_for_paths

        self.require_writable()
        # `or` made 0 (and False) mean the default 5, where -1 was refused
        queue = self.jobs(max_attempts=DEFAULT_MAX_ATTEMPTS if max_attempts is None else max_attempts)
        ids = queue.enqueue(jobs_for_paths(paths, options, include=include, exclude=exclude,
                                           skip_folders=(self.path,)))
        self._catalog.release()
        return ids

    # -- reading ---------------------------------------------------------------------------

    def list_documents(self, **filters: Any) -> list[dict[str, Any]]:
        """Documents with their source's tier and authority (truth_levels, domain,
        source_type, tag, prefix, limit, offset)."""
        from .documents import list_documents

        rows = list_documents(self._catalog, **filters)
        self._catalog.release()
        return rows

    def get_document(self, document_id: str) -> dict[str, Any]:
        return self._catalog.require_document(document_id)

    def present_documents(self, document_ids: Iterable[str]) -> set[str]:
        """The ids among ``document_ids`` that are documents of the store now (a deleted
        one is not): one query per 10,000 ids, where ``get_document`` would be one each."""
        ids = list(dict.fromkeys(document_ids))  # any iterable, read once
        for document_id in ids:
            check_document_id(document_id)
        found: set[str] = set()
        for start in range(0, len(ids), 10_000):
            found.update(self._catalog.document_states(ids[start : start + 10_000]))
        self._catalog.release()
        return found

    def show(self, document_id: str) -> dict[str, Any]:
        doc = self._catalog.require_document(document_id)
        return {
            "document": doc,
            "versions": self._catalog.versions(document_id),
            "chunks": self._catalog.chunks_of(document_id),
        }

    def history(self, document_id: str) -> list[dict[str, Any]]:
        doc = self._catalog.require_document(document_id) if self._catalog.get_document(document_id) else None
        versions = self._catalog.versions(document_id)
        if doc is None and not versions:
            from .errors import DocumentNotFoundError

            raise DocumentNotFoundError(document_id)
        current = []
        if doc is not None:
            # the keys of an archived version's row, so that every row has the same (the
            # current one lacked title, archived_at and generation: `history --json` readers
            # failed on the last row). generation, like archived_at, says when a version was
            # archived: none yet (the document's own moves with every restore)
            current = [{
                "document_id": document_id, "version": doc["version"],
                "index_version": doc["index_version"], "title": doc["title"],
                "content_hash": doc["content_hash"], "truth_level": doc["truth_level"],
                "total_chunks": doc["total_chunks"], "change_summary": "current",
                "valid_from": doc["updated_at"], "archived_at": None,
                "generation": None, "current": True,
            }]
        return [{**v, "current": False} for v in versions] + current

    def version_text(self, document_id: str, version: str) -> str:
        doc = self._catalog.get_document(document_id)
        if doc is not None and doc["version"] == version:
            return str(doc["content"])
        text = self._catalog.version_text(document_id, version)
        if text is None:
            from .errors import VersionNotFoundError

            versions = [v["version"] for v in self.history(document_id)]  # raises if unknown
            raise VersionNotFoundError(document_id, version, versions,
                                       in_memory=layout.is_memory_store(self.path))
        return text

    def logged_queries(self, *, limit: int = 100, zero_results: bool = False) -> list[dict[str, Any]]:
        """The query log, newest first (flushing this process's buffer first when writable)."""
        if limit < 1:
            raise InvalidInputError(f"limit must be >= 1, got {limit}")
        if not self.read_only:
            self.query_log.flush(self._catalog)
        rows = self._catalog.logged_queries(limit=limit, zero_results=zero_results)
        self._catalog.release()
        pending = [r for r in self.query_log.pending() if not zero_results or r["result_count"] == 0]
        if pending:  # logged by readers, not yet imported by a writer
            rows = sorted(rows + pending, key=lambda r: r["created_at"], reverse=True)[:limit]
        return rows

    def stats(self) -> dict[str, Any]:
        counts = store_counts(self._catalog)
        # Searches by read-only processes (every CLI search) wait in their log files until a
        # writer imports them: counted as ``logged_queries`` lists them.
        counts["queries_logged"] += len(self.query_log.pending())
        return {
            "path": str(self.path),
            **counts,
            "generation": self._catalog.generation,
            "index_version": self.index_version,
            "embedding_model": self.manifest.embedding_model,
            "embedding_dim": self.manifest.embedding_dim,
            "chunking": self.manifest.chunking,
            "vector_index_size": len(self._vector_index),
            "text_index_size": len(self._text_index),
            "disk_bytes": _disk_usage(self.path),
            "snapshot": self.snapshot,
            **cache_stats(self),
        }

    # -- search (implemented in enginelib.search.engine) -----------------------------------

    def search(self, query: str | Sequence[str], **options: Any):  # type: ignore[no-untyped-def]
        """Search the store: one response with cited hits, or NO_RELEVANT_SOURCES and why.

        The options and their defaults are ``SearchRequest``'s fields (search/request.py);
        ``inspect.signature`` shows them all.
        """
        from .search.engine import search

        return search(self, query, **options)

    # The keyword options, as the request type defines them (the body takes **options).
    search.__signature__ = search_signature("query", vectors="query_vector")  # type: ignore[attr-defined]

    def search_batch(self, queries: Sequence[str], **options: Any):  # type: ignore[no-untyped-def]
        """``search`` for many queries in one call (one embedding batch): a response each."""
        from .search.engine import search_batch

        return search_batch(self, queries, **options)

    search_batch.__signature__ = search_signature(  # type: ignore[attr-defined]
        "queries", vectors="query_vectors")

    # -- snapshots and maintenance (implemented in enginelib.snapshots / .maintenance) ------

    def create_snapshot(
        self, name: str | None = None, *, keep: int | None = None, pin: bool = False
    ) -> SnapshotInfo:
        from .snapshots import create_snapshot

        return create_snapshot(self, name, keep=keep, pin=pin)

    def list_snapshots(self) -> list[SnapshotInfo]:
        from .snapshots import list_snapshots

        return list_snapshots(self)

    def restore_snapshot(self, name: str) -> RestoreReport:
        from .snapshots import restore_snapshot

        return restore_snapshot(self, name)

    def delete_snapshot(self, name: str) -> None:
        from .snapshots import delete_snapshot

        delete_snapshot(self, name)

    def pin_snapshot(self, name: str, pinned: bool = True) -> SnapshotInfo:
        from .snapshots import pin_snapshot

        return pin_snapshot(self, name, pinned)

    def diff(self, a: str, b: str = "live") -> SnapshotDiff:
        """Documents added/removed/changed between two snapshots (or "live")."""
        from .snapshots import diff_snapshots

        return diff_snapshots(self, a, b)

    def check(self) -> IntegrityReport:
        from .maintenance import check

        return check(self)

    def repair(self) -> IntegrityReport:
        from .maintenance import repair

        return repair(self)

    def reindex(
        self, *, embedder: Embedder | str | None = None, chunking: ChunkingConfig | None = None,
        progress: bool = False,
    ) -> ReindexReport:
        from .maintenance import reindex

        return reindex(self, embedder=embedder, chunking=chunking, progress=progress)

    # -- export (implemented in enginelib.export) -----------------------------------------

    def export_postgres(self, dsn: str, **options: Any) -> ExportReport:
        """Mirror this store into Postgres + pgvector (one transaction; safe to re-run)."""
        from .export import export_postgres

        return export_postgres(self, dsn, **options)

    def to_sql(self, path: str | Path, **options: Any) -> ExportReport:
        """Write a self-contained .sql file (DDL + COPY data) that `psql -f` loads."""
        from .export import write_sql

        return write_sql(self, path, **options)


def open_for_maintenance(path: str | Path, *, lock_timeout: float = 0.0) -> Store:
    """Open a store for writing without loading (or even having) its embedding model."""
    return Store.open_for_maintenance(path, lock_timeout=lock_timeout)


def open_snapshot(
    path: str | Path, name: str, *, embedder: Embedder | str | None = None, **_ignored: Any
) -> Store:
    """Open snapshot ``name`` of the store at ``path`` read-only (``store.snapshot == name``).

    Its tables load into an in-memory catalog and its own index files are searched, so the
    results are the ones it gave when taken, whatever the live store did since. Options
    meant for the live store (read_only, create, lock_timeout, chunking) do not apply.
    """
    from .snapshots import (
        snapshot_folder,
        snapshot_manifest,
        untrusted_indexes,
        wrong_older_vectors,
    )

    root = Path(path)
    if mf.read_manifest(root) is None:
        raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
    folder = snapshot_folder(root, name)
    manifest = snapshot_manifest(folder)
    # A snapshot is searched with the model it recorded unless the caller brings one.
    check_embedder(embedder)
    embedder = (embedder_for_store(manifest.embedding_model, manifest.embedding_dim)
                if embedder is None else resolve_embedder(embedder))
    if embedder.name != manifest.embedding_model or int(embedder.dim) != manifest.embedding_dim:
        raise IncompatibleStoreError(
            f"snapshot {name!r} was built with {manifest.embedding_model} "
            f"({manifest.embedding_dim} dims); this embedder is {embedder.name} "
            f"({embedder.dim} dims): open it with embedder= that model",
            path=folder,
        )
    untrusted = untrusted_indexes(folder, manifest.text_backend)
    store = _snapshot_store(root, folder, name, manifest, embedder, untrusted)
    if layout.VECTOR_DIR not in untrusted and wrong_older_vectors(folder, store):
        store.close()
        store = _snapshot_store(root, folder, name, manifest, embedder,
                                untrusted | {layout.VECTOR_DIR})
    return store


def _snapshot_store(root: Path, folder: Path, name: str, manifest: mf.Manifest,
                    embedder: Embedder, untrusted: frozenset[str]) -> Store:
    from .snapshots import load_catalog

    catalog = load_catalog(folder, manifest.embedding_dim)
    return Store(root, manifest=manifest, catalog=catalog, embedder=embedder, read_only=True,
                 lock=None, index_root=layout.index_root(folder), snapshot=name,
                 untrusted_indexes=untrusted)


def _disk_usage(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def remove_store(path: str | Path) -> None:
    """Delete a store folder (used by tests and `enginelib init --force`)."""
    root = Path(path)
    if (root / mf.MANIFEST_NAME).exists():
        shutil.rmtree(root)


# The edge of the API (argument checks, error mapping, readers releasing the catalog):
# enginelib/store_guard.py wraps the public methods above (the core's are wrapped in
# core/store_core.py).
from .store_guard import install as _install_guards  # noqa: E402

_install_guards(Store)

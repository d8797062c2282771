"""The Store: one folder on disk, opened for reading or writing, that ingests and searches."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from filelock import FileLock, Timeout

from . import faults
from . import manifest as mf
from .catalog import Catalog, first
from .chunk_view import ChunkView
from .chunker import Chunker, ChunkingConfig
from .embedders import Embedder, QueryEmbeddingCache, embedder_for_store, resolve_embedder
from .errors import (
    IncompatibleStoreError,
    ReadOnlyStoreError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from .indexes import TEXT_BACKENDS, VECTOR_BACKENDS
from .indexes.base import TextDocument, TextIndex, VectorIndex
from .querylog import QueryLog
from .schema import SCHEMA_VERSION
from .search.cache import ResponseCache, cache_stats
from .types import IngestReport, LoadedDocument

if TYPE_CHECKING:
    from .export import ExportReport
    from .jobs import JobQueue
    from .maintenance import IntegrityReport, ReindexReport
    from .snapshots import RestoreReport, SnapshotDiff, SnapshotInfo

CATALOG_NAME = "catalog.duckdb"
# Documents per catalog transaction: each commit closes the DuckDB file (a checkpoint) so
# that readers in other processes get their turn; larger batches amortize that cost.
DEFAULT_BATCH = 256
LOCK_NAME = ".writer.lock"


class Store:
    """A store folder: DuckDB catalog (truth), hnswlib + Tantivy indexes (derived), manifest."""

    def __init__(
        self,
        path: Path,
        *,
        manifest: mf.Manifest,
        catalog: Catalog,
        embedder: Embedder,
        read_only: bool,
        lock: FileLock | None,
        index_root: Path,
        snapshot: str | None = None,
        index_overrides: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.path = path
        self.manifest = manifest
        self.catalog = catalog
        self.embedder = embedder
        self.read_only = read_only
        self.snapshot = snapshot
        self._lock = lock
        self._index_root = index_root
        self._index_overrides = index_overrides or {}
        self.chunker = Chunker(ChunkingConfig.from_dict(manifest.chunking))
        self.query_embeddings = QueryEmbeddingCache(embedder)
        self.response_cache = ResponseCache()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.vector_index, self.text_index = self._open_indexes()
        self._refresh_after = 0.0
        self._view: ChunkView | None = None
        self._closed = False
        self.filter_cache: dict[tuple[int, str], np.ndarray] = {}
        # the gate's analyzed words of a chunk, by label; emptied with the filter cache
        self.hit_token_cache: dict[int, frozenset[str]] = {}
        self._presets: dict[str, dict[str, Any]] | None = None
        self._default_preset = "default"
        self.query_log = QueryLog(path, writable=not read_only)
        self._manifest_stamp = _stat(path / mf.MANIFEST_NAME)
        self._load_meta()
        self.sync_indexes()
        if not read_only:
            self.query_log.import_pending(self.catalog)
        self.catalog.release()

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: Embedder | str | None = None,
        chunking: ChunkingConfig | None = None,
        create: bool = True,
        read_only: bool = False,
        lock_timeout: float = 0.0,
        index_options: dict[str, Any] | None = None,
    ) -> Store:
        root = Path(path)
        existing = mf.read_manifest(root) if root.exists() else None
        if existing is None:
            if not create or read_only:
                raise StoreNotFoundError(
                    f"no enginelib store at {root}: create it with `enginelib init --store {root}`",
                    path=root,
                )
            if root.exists() and any(p.name != LOCK_NAME for p in root.iterdir()):
                raise StoreError(
                    f"{root} exists, is not empty and is not an enginelib store (no manifest.json)",
                    path=root,
                )
        root.mkdir(parents=True, exist_ok=True)
        overrides: dict[str, dict[str, Any]] = {}
        lock = None if read_only else _acquire_writer_lock(root, lock_timeout)
        try:
            if existing is None:
                # A new store takes the embedder asked for (object or name), else the default.
                embedder = resolve_embedder(embedder)
                config = chunking or ChunkingConfig()
                config.validate()
                manifest = mf.Manifest(
                    embedding_model=embedder.name,
                    embedding_dim=int(embedder.dim),
                    chunking=config.to_dict(),
                    chunking_hash=config.config_hash(),
                    schema_version=SCHEMA_VERSION,
                    created_at=datetime.now().isoformat(timespec="seconds"),
                    index_options=dict(index_options or {}),
                )
                mf.write_manifest(root, manifest)
            else:
                from .maintenance import finish_interrupted_reindex
                from .recovery import recover_files

                if not read_only:  # we hold the lock: clear what a dead writer left
                    recover_files(root)
                overrides = _runtime_index_options(index_options)
                manifest = finish_interrupted_reindex(root, existing, writable=not read_only)
                # An existing store uses the embedder it recorded unless one is named.
                embedder = (embedder_for_store(manifest.embedding_model, manifest.embedding_dim)
                            if embedder is None else resolve_embedder(embedder))
                _check_compatible(root, manifest, embedder, chunking)
            catalog = Catalog(root / CATALOG_NAME, manifest.embedding_dim, read_only=read_only)
            if not read_only and manifest.schema_version < SCHEMA_VERSION:
                # The catalog has just been migrated in its own transaction: record it.
                manifest = mf.Manifest.from_dict(
                    {**manifest.to_dict(), "schema_version": SCHEMA_VERSION}
                )
                mf.write_manifest(root, manifest)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        return cls(
            root,
            manifest=manifest,
            catalog=catalog,
            embedder=embedder,
            read_only=read_only,
            lock=lock,
            index_root=root / "indexes",
            index_overrides=overrides,
        )

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.query_log.flush(self.catalog)
            if not self.read_only:
                self.persist()
        finally:
            if self._view is not None:
                self._view.close()
            release = getattr(self.text_index, "release", None)
            if release is not None:  # a failed save must not keep tantivy's writer lock
                release()
            self.catalog.close()
            if self._scratch is not None:
                self._scratch.cleanup()
            if self._lock is not None:
                self._lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require_writable(self) -> None:
        if self.read_only:
            what = f"snapshot {self.snapshot!r}" if self.snapshot else "this store (opened read-only)"
            raise ReadOnlyStoreError(f"{what} cannot be modified", path=self.path)

    @property
    def generation(self) -> int:
        """The catalog generation this store object reflects (cached: no file access)."""
        return self._generation

    @property
    def index_version(self) -> str:
        return self._index_version

    def _load_meta(self) -> None:
        self._generation = self.catalog.generation
        self._index_version = self.catalog.get_meta("index_version") or ""

    def committed(self) -> None:
        """Called after every catalog commit by this process: refresh the cached meta."""
        self._load_meta()
        self._presets = None

    def refresh(self) -> bool:
        """Readers: move to the writer's latest persisted generation; True if it changed.

        Cheap when nothing changed (one stat of manifest.json). A reader moves only to a
        generation whose catalog, index stamps and manifest all agree, loading it completely
        before swapping, so a search never sees half a commit.
        """
        if not self.read_only or self.snapshot is not None:
            return False
        stamp = _stat(self.path / mf.MANIFEST_NAME)
        if stamp == self._manifest_stamp or time.monotonic() < self._refresh_after:
            return False
        try:
            manifest = mf.read_manifest(self.path)
            if manifest is None or manifest.generation == self._generation:
                self._manifest_stamp = stamp
                return False
            generation = self.catalog.generation
            vector, text = self._open_indexes()
            if not generation == manifest.generation == vector.generation == text.generation:
                # The writer is between its catalog commit and its index save: try later.
                self._refresh_after = time.monotonic() + 0.2
                return False
            index_version = self.catalog.get_meta("index_version") or ""
            view = self._next_view(vector)
        except StoreLockedError:
            self._refresh_after = time.monotonic() + 0.2
            return False
        finally:
            self.catalog.release()
        self.vector_index, self.text_index = vector, text
        self._generation, self._index_version = generation, index_version
        self.manifest = manifest
        self._manifest_stamp = stamp
        self.filter_cache.clear()
        self.hit_token_cache.clear()
        self._presets = None
        self._swap_view(view)
        return True

    def _index_options(self, kind: str) -> dict[str, Any]:
        """The store's index options, with this session's search-time overrides on top."""
        return {**self.manifest.index_options.get(kind, {}), **self._index_overrides.get(kind, {})}

    def _open_indexes(self) -> tuple[VectorIndex, TextIndex]:
        vector = VECTOR_BACKENDS[self.manifest.vector_backend](
            self._index_root / "vectors", self.manifest.embedding_dim, **self._index_options("vector")
        )
        # A reader never rewrites the shared text index, even one of an older format.
        readonly = {"read_only": True} if self.read_only else {}
        text = TEXT_BACKENDS[self.manifest.text_backend](
            self._index_root / "text", **self._index_options("text"), **readonly
        )
        return vector, text

    def _scratch_text_index(self) -> TextIndex:
        """A private text index for a reader whose shared one lags: never write shared files."""
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="enginelib-text-")
        folder = Path(self._scratch.name) / f"text-{self._generation}"
        return TEXT_BACKENDS[self.manifest.text_backend](folder, **self._index_options("text"))

    def _swap_view(self, view: ChunkView) -> None:
        old, self._view = self._view, view
        if old is not None:
            old.close()

    # -- index maintenance -----------------------------------------------------------------

    def sync_indexes(self) -> None:
        """Bring both indexes up to the catalog's generation (replay, or rebuild if unknown)."""
        target = self._generation
        changed = False
        for index in (self.vector_index, self.text_index):
            stamp = index.generation
            if stamp == target:
                continue
            changed = True
            if self.read_only and isinstance(index, TextIndex):
                index = self.text_index = self._scratch_text_index()
                stamp = None
            if stamp is None or stamp > target:
                index.clear()
                self._replay(index, since=None)
            else:
                index.delete(self.catalog.tombstones_since(stamp))
                self._replay(index, since=stamp)
        if (changed or self.manifest.generation != target) and not self.read_only:
            self.persist()

    def _replay(self, index: VectorIndex | TextIndex, since: int | None) -> None:
        for batch in self.catalog.chunk_batches(since_generation=since):
            labels = np.asarray(batch.column("label").to_numpy(), dtype=np.int64)
            if isinstance(index, VectorIndex):
                emb = batch.column("embedding").combine_chunks()
                flat = np.asarray(emb.values.to_numpy(zero_copy_only=False), dtype=np.float32)
                index.add(labels, flat.reshape(len(labels), self.manifest.embedding_dim))
            else:
                index.add(
                    [
                        TextDocument(int(lb), content, heading or "", title, language or "en")
                        for lb, content, heading, title, language in zip(
                            labels,
                            batch.column("content").to_pylist(),
                            batch.column("heading_path").to_pylist(),
                            batch.column("title").to_pylist(),
                            batch.column("language").to_pylist(),
                            strict=True,
                        )
                    ]
                )

    def persist(self) -> None:
        """Save both indexes stamped with the catalog generation, then the manifest."""
        self._require_writable()
        self.query_log.flush(self.catalog)
        generation = self._generation
        if self.vector_index.generation != generation:
            self.vector_index.save(generation)
            faults.crash_point("after_vector_save")
        if self.text_index.generation != generation:
            self.text_index.save(generation)
            faults.crash_point("after_text_save")
        if (self.manifest.generation, self.manifest.index_version) != (generation, self._index_version):
            self.manifest = mf.Manifest.from_dict(
                {**self.manifest.to_dict(), "generation": generation,
                 "index_version": self._index_version}
            )
            faults.crash_point("before_manifest_rename")
            mf.write_manifest(self.path, self.manifest)
            faults.crash_point("after_manifest")
        self.catalog.release()

    def view(self) -> ChunkView:
        """The chunk view searches read; reloaded only after a commit."""
        if self.read_only:
            self.refresh()
        if self._view is None or self._view.generation != self._generation:
            view = self._next_view()
            self.catalog.release()
            self._swap_view(view)
        assert self._view is not None
        return self._view

    def _next_view(self, vector_index: VectorIndex | None = None) -> ChunkView:
        """The view at the catalog's generation: the current one plus what changed, so a
        commit costs what it changed, not a reload of every chunk."""
        index = vector_index if vector_index is not None else self.vector_index
        if self._view is None:
            return ChunkView.load(self.catalog, index)
        return self._view.advance(self.catalog, index)

    def apply_commit(self, removed: np.ndarray, added: Sequence[tuple[np.ndarray, np.ndarray, list[TextDocument]]]) -> None:
        """Mirror a committed catalog change into the in-memory indexes."""
        if len(removed):
            self.vector_index.delete(removed)
            self.text_index.delete(removed)
        added = [batch for batch in added if len(batch[0])]
        if added:
            # One call per index for the whole batch: both backends have a per-call cost.
            self.vector_index.add(
                np.concatenate([labels for labels, _, _ in added]),
                np.vstack([vectors for _, vectors, _ in added]),
            )
            self.text_index.add([text for _, _, texts in added for text in texts])

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

        self._require_writable()
        return run_ingest(self, documents, options, batch_size=batch_size, progress=progress)

    def ingest_path(
        self,
        *paths: str | Path,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        max_bytes: int | None = None,
        progress: bool = False,
        **options: Any,
    ) -> IngestReport:
        from .loaders import DEFAULT_MAX_BYTES, iter_load

        self._require_writable()
        items = iter_load(
            paths, include=include, exclude=exclude, max_bytes=max_bytes or DEFAULT_MAX_BYTES
        )
        from .ingest_run import run_ingest

        return run_ingest(self, items, options, batch_size=DEFAULT_BATCH, progress=progress)

    def delete_document(self, document_id: str) -> None:
        self._require_writable()
        self.catalog.require_document(document_id)
        with self.catalog.transaction():
            generation = self.catalog.bump_generation()
            self.catalog.archive_document(document_id, "deleted", generation)
            removed = self.catalog.delete_document(document_id, generation)
        self.committed()
        self.apply_commit(removed, [])
        self.persist()

    def add_source(self, source_id: str, **fields: Any) -> None:
        """Register (or update) a source with its authority: tier, evidence_level, ..."""
        from .sources import upsert_source

        self._require_writable()
        upsert_source(self.catalog, source_id, **fields)
        self.committed()
        self.persist()

    def save_search_preset(self, name: str, **values: Any) -> None:
        """Store a named fusion preset (fusion, rrf_k, weights, min_score, description)."""
        from .search.presets import save_preset

        self._require_writable()
        save_preset(self.catalog, name, **values)
        self.committed()
        self.persist()

    def set_default_search_preset(self, name: str) -> None:
        """The preset searches use when they name none (``default``: RRF k=60)."""
        from .search.presets import set_default_preset

        self._require_writable()
        set_default_preset(self.catalog, name)
        self.committed()
        self.persist()

    def update_document(
        self, document_id: str, *, truth_level: str | None = None,
        tags: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Change a document's truth level, tags or custom metadata; nothing is re-embedded."""
        from .documents import update_metadata

        self._require_writable()
        doc = update_metadata(self.catalog, document_id, truth_level=truth_level, tags=tags,
                              metadata=metadata)
        self.committed()
        self.persist()
        return doc

    # -- jobs (implemented in enginelib.jobs) ----------------------------------------------

    def jobs(self, **options: Any) -> JobQueue:
        """This store's ingestion job queue (max_attempts, lease_s, time_unit, clock)."""
        from .jobs import JobQueue

        return JobQueue(self.catalog, **options)

    def enqueue_paths(self, *paths: str | Path, include: Sequence[str] = (),
                      exclude: Sequence[str] = (), max_attempts: int | None = None,
                      **options: Any) -> list[int]:
        """One PENDING job per file (folders walked); a worker ingests them later."""
        from .jobs import DEFAULT_MAX_ATTEMPTS, jobs_for_paths

        self._require_writable()
        from .ingest import IngestOptions

        IngestOptions.build(**dict(options))  # refuse bad options now, not in the worker
        queue = self.jobs(max_attempts=max_attempts or DEFAULT_MAX_ATTEMPTS)
        ids = queue.enqueue(jobs_for_paths(paths, options, include=include, exclude=exclude))
        self.catalog.release()
        return ids

    # -- reading ---------------------------------------------------------------------------

    def search_presets(self) -> dict[str, dict[str, Any]]:
        """Named presets for ``search(..., preset=NAME)``: default, balanced, semantic, keyword..."""
        if self._presets is None:
            self._load_presets()
        assert self._presets is not None
        return self._presets

    def default_search_preset(self) -> str:
        if self._presets is None:
            self._load_presets()
        return self._default_preset

    def _load_presets(self) -> None:
        from .search.presets import default_preset, load_presets

        self._presets = load_presets(self.catalog)
        self._default_preset = default_preset(self.catalog)
        self.catalog.release()

    def list_documents(self, **filters: Any) -> list[dict[str, Any]]:
        """Documents with their source's tier and authority (truth_levels, domain,
        source_type, tag, prefix, limit, offset)."""
        from .documents import list_documents

        rows = list_documents(self.catalog, **filters)
        self.catalog.release()
        return rows

    def get_document(self, document_id: str) -> dict[str, Any]:
        return self.catalog.require_document(document_id)

    def show(self, document_id: str) -> dict[str, Any]:
        doc = self.catalog.require_document(document_id)
        return {
            "document": doc,
            "versions": self.catalog.versions(document_id),
            "chunks": self.catalog.chunks_of(document_id),
        }

    def history(self, document_id: str) -> list[dict[str, Any]]:
        doc = self.catalog.require_document(document_id) if self.catalog.get_document(document_id) else None
        versions = self.catalog.versions(document_id)
        if doc is None and not versions:
            from .errors import DocumentNotFoundError

            raise DocumentNotFoundError(document_id)
        current = []
        if doc is not None:
            current = [{
                "document_id": document_id, "version": doc["version"],
                "index_version": doc["index_version"], "content_hash": doc["content_hash"],
                "truth_level": doc["truth_level"], "total_chunks": doc["total_chunks"],
                "change_summary": "current", "valid_from": doc["updated_at"], "current": True,
            }]
        return [{**v, "current": False} for v in versions] + current

    def version_text(self, document_id: str, version: str) -> str:
        doc = self.catalog.get_document(document_id)
        if doc is not None and doc["version"] == version:
            return str(doc["content"])
        text = self.catalog.version_text(document_id, version)
        if text is None:
            from .errors import DocumentNotFoundError

            raise DocumentNotFoundError(f"{document_id}@{version}")
        return text

    def logged_queries(self, *, limit: int = 100, zero_results: bool = False) -> list[dict[str, Any]]:
        """The query log, newest first (flushing this process's buffer first when writable)."""
        if limit < 1:
            from .errors import InvalidInputError

            raise InvalidInputError(f"limit must be >= 1, got {limit}")
        if not self.read_only:
            self.query_log.flush(self.catalog)
        rows = self.catalog.logged_queries(limit=limit, zero_results=zero_results)
        self.catalog.release()
        pending = [r for r in self.query_log.pending() if not zero_results or r["result_count"] == 0]
        if pending:  # logged by readers, not yet imported by a writer
            rows = sorted(rows + pending, key=lambda r: r["created_at"], reverse=True)[:limit]
        return rows

    def stats(self) -> dict[str, Any]:
        con = self.catalog.con
        docs = first(con.execute("SELECT count(*) FROM documents").fetchall())
        chunks = first(con.execute("SELECT count(*), coalesce(sum(token_count), 0) FROM chunks").fetchall())
        versions = first(con.execute("SELECT count(*) FROM document_versions").fetchall())
        by_level = dict(
            con.execute(
                "SELECT truth_level, count(*) FROM documents GROUP BY 1 ORDER BY 1"
            ).fetchall()
        )
        queries = first(con.execute("SELECT count(*) FROM query_log").fetchall())
        return {
            "path": str(self.path),
            "documents": int(docs[0]) if docs else 0,
            "chunks": int(chunks[0]) if chunks else 0,
            "tokens": int(chunks[1]) if chunks else 0,
            "archived_versions": int(versions[0]) if versions else 0,
            "documents_by_truth_level": by_level,
            "queries_logged": int(queries[0]) if queries else 0,
            "generation": self.catalog.generation,
            "index_version": self.index_version,
            "embedding_model": self.manifest.embedding_model,
            "embedding_dim": self.manifest.embedding_dim,
            "chunking": self.manifest.chunking,
            "vector_index_size": len(self.vector_index),
            "text_index_size": len(self.text_index),
            "disk_bytes": _disk_usage(self.path),
            "snapshot": self.snapshot,
            **cache_stats(self),
        }

    # -- search (implemented in enginelib.search.engine) -----------------------------------

    def search(self, query: str | Sequence[str], **options: Any):  # type: ignore[no-untyped-def]
        from .search.engine import search

        return search(self, query, **options)

    def search_batch(self, queries: Sequence[str], **options: Any):  # type: ignore[no-untyped-def]
        from .search.engine import search_batch

        return search_batch(self, queries, **options)

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

    def rebuild_indexes(self) -> None:
        """Throw both derived indexes away and rebuild them from the catalog, then persist."""
        from .maintenance import discard_index_files

        self._require_writable()
        discard_index_files(self._index_root)
        self.vector_index, self.text_index = self._open_indexes()
        self.filter_cache.clear()
        self.hit_token_cache.clear()
        self.sync_indexes()

    def _adopt_model(self, manifest: mf.Manifest, embedder: Embedder) -> None:
        """After a reindex: switch to the new model, dimension and chunking in place."""
        self.manifest = manifest
        self.embedder = embedder
        self.catalog.dim = manifest.embedding_dim
        self.chunker = Chunker(ChunkingConfig.from_dict(manifest.chunking))
        self.query_embeddings = QueryEmbeddingCache(embedder)
        self.committed()
        self.rebuild_indexes()


    # -- export (implemented in enginelib.export) -----------------------------------------

    def export_postgres(self, dsn: str, **options: Any) -> ExportReport:
        """Mirror this store into Postgres + pgvector (one transaction; safe to re-run)."""
        from .export import export_postgres

        return export_postgres(self, dsn, **options)

    def to_sql(self, path: str | Path, **options: Any) -> ExportReport:
        """Write a self-contained .sql file (DDL + COPY data) that `psql -f` loads."""
        from .export import write_sql

        return write_sql(self, path, **options)


# Index options that only change how a search runs, not what is on disk: an existing store
# accepts them at open, for that session. The others are fixed when the store is created.
RUNTIME_INDEX_OPTIONS: dict[str, frozenset[str]] = {
    "vector": frozenset({"ef_search", "exact_threshold", "num_threads"}),
    "text": frozenset({"lenient"}),
}


def _runtime_index_options(options: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    from .errors import InvalidInputError

    if not options:
        return {}
    checked: dict[str, dict[str, Any]] = {}
    for kind, values in options.items():
        allowed = RUNTIME_INDEX_OPTIONS.get(kind)
        if allowed is None or not isinstance(values, dict):
            raise InvalidInputError(
                f"index_options[{kind!r}] is not understood; use 'vector' or 'text' dicts"
            )
        fixed = sorted(set(values) - allowed)
        if fixed:
            raise InvalidInputError(
                f"index option(s) {fixed} are fixed when a store is created; an existing store "
                f"accepts only {sorted(allowed)} for {kind!r} (run `enginelib reindex` into a "
                "new store to change the others)"
            )
        checked[kind] = dict(values)
    return checked


def _acquire_writer_lock(root: Path, timeout: float) -> FileLock:
    lock = FileLock(str(root / LOCK_NAME))
    try:
        lock.acquire(timeout=timeout)
    except Timeout as exc:
        raise StoreLockedError(
            f"another process is writing to {root}; wait for it to finish, "
            "or open the store with read_only=True to search it",
            path=root,
        ) from exc
    return lock


def _check_compatible(
    root: Path, manifest: mf.Manifest, embedder: Embedder, chunking: ChunkingConfig | None
) -> None:
    if manifest.schema_version > SCHEMA_VERSION:
        raise IncompatibleStoreError(
            f"store {root} uses schema {manifest.schema_version}, newer than this enginelib "
            f"({SCHEMA_VERSION}): upgrade enginelib",
            path=root,
        )
    if embedder.name != manifest.embedding_model or int(embedder.dim) != manifest.embedding_dim:
        raise IncompatibleStoreError(
            f"store {root} was built with {manifest.embedding_model} "
            f"({manifest.embedding_dim} dims); this embedder is {embedder.name} ({embedder.dim} "
            f"dims): run `enginelib reindex --store {root} --embedder {embedder.name}` to switch "
            "(or Store.reindex(embedder=...)), or open it without an embedder to use its own",
            path=root,
        )
    if chunking is not None and chunking.config_hash() != manifest.chunking_hash:
        raise IncompatibleStoreError(
            f"store {root} was chunked with {manifest.chunking}; the requested chunking differs: "
            f"run `enginelib reindex --store {root}` to re-chunk",
            path=root,
        )


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _disk_usage(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def remove_store(path: str | Path) -> None:
    """Delete a store folder (used by tests and `enginelib init --force`)."""
    root = Path(path)
    if (root / mf.MANIFEST_NAME).exists():
        shutil.rmtree(root)


# The edge of the API (argument checks, error mapping, readers releasing the catalog):
# enginelib/store_guard.py wraps the public methods above.
from .store_guard import install as _install_guards  # noqa: E402

_install_guards(Store)

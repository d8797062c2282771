"""The store core: one folder opened for reading or writing, its generations, its commits.

``StoreCore`` owns what every operation shares: the writer lock, the manifest, the catalog
connection, both derived indexes and the caches that live as long as a generation. It opens
a folder (creating it, clearing what a dead writer left, finishing an interrupted reindex),
follows a writer's generations as a reader, and runs the commit protocol:

1. an operation writes the catalog in one transaction that bumps the generation, then calls
   ``_committed()`` (cached meta refreshed) and ``_apply_commit()`` (in-memory indexes);
2. ``persist()`` saves each index stamped with that generation, then the manifest;
3. on open, ``_sync_indexes()`` brings an index whose stamp lags up to the catalog (replay of
   tombstones and new chunks, or a rebuild), so a crash at any step loses nothing committed.

The protocol's steps (and ``_adopt_model`` after a reindex) are underscore methods: the
operations call them with what they just committed, and a user's ``Store`` does not offer
them, since called from outside they put the indexes out of step with the catalog. The
catalog and the indexes themselves are underscore attributes for the same reason
(``_catalog``, ``_vector_index``, ``_text_index``): a user who closed or wrote to them
behind the store's back left indexes that disagree with the catalog, saved as current. Every
public method is checked and guarded by ``store_guard``.

The operations (ingest, search, maintenance, snapshots, export, jobs) take a ``StoreCore``;
``enginelib.store.Store`` is the public facade that adds their methods.
"""

from __future__ import annotations

import errno
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import numpy as np

# schema.SCHEMA_VERSION is read where it is used, so a patched (or migrated) version is seen.
from .. import faults, schema
from .. import manifest as mf
from ..catalog import Catalog, missing_catalog_error, unfinished_catalog
from ..catalog_mend import finish_pending, mend_and_warn, unmendable_error
from ..chunk_texts import FOLDER as TEXTS_FOLDER
from ..chunk_view import ChunkView
from ..chunker import Chunker, ChunkingConfig
from ..embedders import Embedder, QueryEmbeddingCache, embedder_for_store, resolve_embedder
from ..errors import (
    CorruptStoreError,
    IncompatibleStoreError,
    ReadOnlyStoreError,
    StorageError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from ..indexes import TEXT_BACKENDS, VECTOR_BACKENDS, split_vector_backend
from ..indexes.base import TextDocument, TextIndex, VectorIndex
from ..input_files import broken_link, file_above, special_kind
from ..querylog import QueryLog
from ..search.cache import ResponseCache
from ..utc import utc_stamp
from ..validation import MAX_DIM, check_int
from . import layout
from .compat import (
    CatalogOnlyEmbedder,
    check_compatible,
    check_creation_index_options,
    runtime_index_options,
)
from .generations import finish_interrupted_reindex
from .lock import WriterLock, acquire_writer_lock
from .recovery import discard_index_files, recover_files


class StoreCore:
    """A store folder: DuckDB catalog (truth), hnswlib + Tantivy indexes (derived), manifest."""

    def __init__(
        self,
        path: Path,
        *,
        manifest: mf.Manifest,
        catalog: Catalog,
        embedder: Embedder,
        read_only: bool,
        lock: WriterLock | None,
        index_root: Path,
        snapshot: str | None = None,
        index_overrides: dict[str, dict[str, Any]] | None = None,
        untrusted_indexes: frozenset[str] = frozenset(),
    ) -> None:
        self.path = path
        self.manifest = manifest
        self._catalog = catalog
        self.embedder = embedder
        self.read_only = read_only
        self.snapshot = snapshot
        self._lock = lock
        self._index_root = index_root
        self._index_overrides = index_overrides or {}
        # Index kinds whose files failed their snapshot's checksums: read from an empty
        # folder, so the catalog (the snapshot's verified tables) rebuilds them in memory.
        self._untrusted = untrusted_indexes
        self.query_embeddings = QueryEmbeddingCache(embedder)
        self.response_cache = ResponseCache()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        try:
            # Inside: a tokenizer not installed (TokenizerError) kept the catalog and the
            # writer lock, and the next open in this process was refused as locked.
            self.chunker = Chunker(ChunkingConfig.from_dict(manifest.chunking))
            self._vector_index, self._text_index = self._open_indexes()
        except BaseException:
            catalog.close()
            if lock is not None:
                lock.release()
            raise
        self._refresh_after = 0.0
        self._view: ChunkView | None = None
        self._closed = False
        self._shut = False  # close() finished: nothing may use this object any more
        # taken by every public method (store_guard.py): one call at a time per store object.
        # The catalog's own, so that its job queue and a worker, which use the catalog from
        # other threads, take turns with the store's calls (jobs/queue.py).
        self._edge_lock = catalog.calls
        # taken before it by the public methods that change documents (store_guard.WRITERS)
        self._write_lock = catalog.writes
        # the gate's analyzed words of a chunk, by label; emptied when the indexes change
        self.hit_token_cache: dict[int, frozenset[str]] = {}
        self._presets: dict[str, dict[str, Any]] | None = None
        self._default_preset = "default"
        # True from a catalog commit that changes chunks until the in-memory indexes mirror
        # it (``_indexes_follow``): still True afterwards means something failed in between
        self._indexes_behind = False
        try:
            self.query_log = QueryLog(path, writable=not read_only)
            self._manifest_stamp = _stat(path / mf.MANIFEST_NAME)
            self._load_meta()
            self._sync_indexes()
            if not read_only:
                self.query_log.import_pending(self._catalog)
            self._catalog.release()
        except BaseException:
            # A failed open kept the catalog connection and the writer lock: every later
            # open in this process said the store was open already ("another way").
            self._abandon()
            raise

    @property
    def catalog(self) -> Catalog:
        """The DuckDB catalog, only for enginelib's job queue and web console, which still
        read it here (``enginelib.jobs.worker``, ``enginelib.web.service``): not public API.

        The catalog and both indexes are the core's own (``_catalog``, ``_vector_index``,
        ``_text_index``): written or closed outside an operation they fall out of step with
        each other. It cannot be replaced either (the setter refuses: it exists only so
        that the jobs package's ``IngestTarget`` Protocol, which declares a plain
        attribute, is met); it goes once those two modules take the queue from
        ``Store.jobs()``.
        """
        return self._catalog

    @catalog.setter
    def catalog(self, value: Catalog) -> None:
        raise AttributeError("a store's catalog cannot be replaced: open the store again")

    def _abandon(self) -> None:
        self._let_go()
        self._closed = self._shut = True

    def _let_go(self) -> None:
        """Give back what an open took: tantivy's writer lock (a failed save must not keep
        it), the catalog, the scratch folder, the writer lock."""
        release = getattr(self._text_index, "release", None)
        if release is not None:
            release()
        self._catalog.close()
        if self._scratch is not None:
            self._scratch.cleanup()
        if self._lock is not None:
            self._lock.release()

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
    ) -> Self:
        root = Path(path)
        require_folder(root)
        existing = mf.read_manifest(root) if root.exists() else None
        if existing is None:
            if layout.catalog_path(root).is_file():
                raise StoreError(
                    f"{root} holds a catalog but no manifest.json (the file saying which model, "
                    f"dimension and chunking built the store): put it back from a copy of the "
                    f"folder; a snapshot's manifest.json ({layout.SNAPSHOTS_DIR}/NAME/manifest.json)"
                    f" has the same settings unless a reindex came after that snapshot",
                    path=root,
                )
            if not create or read_only:
                raise StoreNotFoundError(
                    f"no enginelib store at {root}: create it with `enginelib init --store {shell_word(root)}`",
                    path=root,
                )
            if root.exists() and any(p.name != layout.LOCK_NAME for p in root.iterdir()):
                raise StoreError(
                    f"{root} exists, is not empty and is not an enginelib store (no manifest.json)",
                    path=root,
                )
        folder_was_new = not root.exists()
        root.mkdir(parents=True, exist_ok=True)
        overrides: dict[str, dict[str, Any]] = {}
        lock = None if read_only else acquire_writer_lock(root, lock_timeout)
        try:
            if existing is None:
                # A new store takes the embedder asked for (object or name), else the default.
                embedder = resolve_embedder(embedder)
                check_int("embedding dimension", embedder.dim, minimum=1, maximum=MAX_DIM)
                config = chunking or ChunkingConfig()
                config.validate()
                check_creation_index_options(index_options)
                # index_options["vector"]["backend"] picks the vector backend (e.g. the
                # compact "usearch-i8"); the manifest records it for every later open.
                backend, index_options = split_vector_backend(index_options)
                manifest = mf.Manifest(
                    embedding_model=embedder.name,
                    embedding_dim=int(embedder.dim),
                    chunking=config.to_dict(),
                    chunking_hash=config.config_hash(),
                    schema_version=schema.SCHEMA_VERSION,
                    created_at=utc_stamp(),
                    index_options=dict(index_options or {}),
                    vector_backend=backend,
                )
                mf.write_manifest(root, manifest)
            else:
                catalog_file = layout.catalog_path(root)
                gone = not catalog_file.exists() or unfinished_catalog(catalog_file)
                if existing.generation > 0 and gone:
                    raise missing_catalog_error(catalog_file, existing.generation)
                if gone and catalog_file.exists():
                    _start_unfinished_catalog_again(catalog_file, read_only)
                if not read_only:  # we hold the lock: clear what a dead writer left
                    recover_files(root, existing)
                    finish_pending(root)
                    if (root / layout.REINDEX_MARKER).exists():  # read before our open below
                        mend_and_warn(root)
                overrides = runtime_index_options(index_options)
                manifest = finish_interrupted_reindex(root, existing, writable=not read_only)
                # An existing store uses the embedder it recorded unless one is named.
                embedder = (embedder_for_store(manifest.embedding_model, manifest.embedding_dim)
                            if embedder is None else resolve_embedder(embedder))
                check_compatible(root, manifest, embedder, chunking)
            catalog = _open_catalog(root, manifest.embedding_dim, read_only)
            if not read_only and manifest.schema_version < schema.SCHEMA_VERSION:
                # The catalog has just been migrated in its own transaction: record it.
                manifest = mf.Manifest.from_dict(
                    {**manifest.to_dict(), "schema_version": schema.SCHEMA_VERSION}
                )
                mf.write_manifest(root, manifest)
        except BaseException:
            if lock is not None:
                lock.release()
            if existing is None and not read_only:  # we hold(held) the lock: nobody else wrote
                _undo_creation(root, folder_was_new)
            raise
        return cls(
            root,
            manifest=manifest,
            catalog=catalog,
            embedder=embedder,
            read_only=read_only,
            lock=lock,
            index_root=layout.index_root(root),
            index_overrides=overrides,
        )

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.query_log.flush(self._catalog)
            if not self.read_only:
                self.persist()
        finally:
            if self._view is not None:
                self._view.close()
            self._let_go()
            self._shut = True

    def __enter__(self) -> Self:
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        # pickle said only "cannot pickle '_thread.RLock' object", and copy.copy made an alias
        # of the open files and lock: closing the copy closed the original (and removed an
        # in-memory store's folder under it).
        raise StoreError(
            f"a Store cannot be pickled or copied: it holds the open files and writer lock of "
            f"{self.path}. Share this object between threads, or pass the path and call "
            "enginelib.open(path) in the other process (read_only=True to search); save() an "
            "in-memory store to a folder first", path=self.path)

    def __exit__(self, *exc: object) -> None:
        self.close()

    def require_open(self) -> None:
        """Raise StoreError once ``close`` ran: its writer lock is released, so a write now
        could race another process's, and a read would reopen files it let go of."""
        if self._shut:
            raise StoreError(f"this store ({self.path}) is closed: open it again with "
                             "enginelib.open(path)", path=self.path)

    def require_writable(self) -> None:
        """Raise ReadOnlyStoreError unless this object may write (operations call it first)."""
        self.require_open()
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
        self._generation = self._catalog.generation
        self._index_version = self._catalog.get_meta("index_version") or ""

    def _committed(self) -> None:
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
            self._check_same_model(manifest)
            generation = self._catalog.generation
            vector, text = self._open_indexes()
            if not generation == manifest.generation == vector.generation == text.generation:
                # The writer is between its catalog commit and its index save: try later.
                self._refresh_after = time.monotonic() + 0.2
                return False
            index_version = self._catalog.get_meta("index_version") or ""
            view = self._next_view(vector)
        except StoreLockedError:
            self._refresh_after = time.monotonic() + 0.2
            return False
        finally:
            self._catalog.release()
        self._vector_index, self._text_index = vector, text
        self._generation, self._index_version = generation, index_version
        self.manifest = manifest
        self._manifest_stamp = stamp
        self.hit_token_cache.clear()
        self._presets = None
        self._swap_view(view)
        return True

    def _check_same_model(self, manifest: mf.Manifest) -> None:
        """A reader cannot follow a reindex to another model: its queries are embedded by the
        model it opened with (another dimension left it at the old generation for good,
        silently; the same dimension compared two models' vectors)."""
        model, dim = manifest.embedding_model, manifest.embedding_dim
        if (model, dim) == (self.embedder.name, int(self.embedder.dim)):
            return
        raise IncompatibleStoreError(
            f"store {self.path} was reindexed with {model} ({dim} dims) after this reader "
            f"opened it with {self.embedder.name} ({self.embedder.dim} dims), so it cannot "
            f"follow the store's writes: open it again, without embedder= to use the store's "
            f"own model (or with embedder={model!r})", path=self.path)

    def _index_options(self, kind: str) -> dict[str, Any]:
        """The store's index options, with this session's search-time overrides on top."""
        return {**self.manifest.index_options.get(kind, {}), **self._index_overrides.get(kind, {})}

    def _open_indexes(self) -> tuple[VectorIndex, TextIndex]:
        vector = VECTOR_BACKENDS[self.manifest.vector_backend](
            self._index_folder(layout.VECTOR_DIR), self.manifest.embedding_dim,
            **self._index_options("vector"),
        )
        allow_spill = getattr(vector, "allow_spill", None)
        if allow_spill is not None and not self.read_only:
            allow_spill()  # the writer's unsaved rows may go to disk early (bounded RAM)
        # A reader never rewrites the shared text index, even one of an older format.
        readonly = {"read_only": True} if self.read_only else {}
        text = TEXT_BACKENDS[self.manifest.text_backend](
            self._index_folder(layout.TEXT_DIR), **self._index_options("text"), **readonly
        )
        return vector, text

    def _index_folder(self, kind: str) -> Path:
        if kind in self._untrusted:
            return self._scratch_folder() / "untrusted" / kind  # never created: nothing to load
        return self._index_root / kind

    def _scratch_folder(self) -> Path:
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="enginelib-scratch-")
        return Path(self._scratch.name)

    def _scratch_text_index(self) -> TextIndex:
        """A private text index for a reader whose shared one lags: never write shared files."""
        folder = self._scratch_folder() / f"text-{self._generation}"
        return TEXT_BACKENDS[self.manifest.text_backend](folder, **self._index_options("text"))

    def _swap_view(self, view: ChunkView) -> None:
        old, self._view = self._view, view
        if old is not None:
            old.close()

    # -- index maintenance -----------------------------------------------------------------

    def _sync_indexes(self) -> None:
        """Bring both indexes up to the catalog's generation (replay, or rebuild if unknown)."""
        target = self._generation
        changed = False
        for index in (self._vector_index, self._text_index):
            stamp = index.generation
            if stamp == target:
                continue
            changed = True
            if self.read_only and isinstance(index, TextIndex):
                index = self._text_index = self._scratch_text_index()
                stamp = None
            if stamp is None or stamp > target:
                index.clear()
                self._replay(index, since=None)
            else:
                index.delete(self._catalog.tombstones_since(stamp))
                self._replay(index, since=stamp)
        if (changed or self.manifest.generation != target) and not self.read_only:
            self._save()

    def _replay(self, index: VectorIndex | TextIndex, since: int | None) -> None:
        for batch in self._catalog.chunk_batches(since_generation=since):
            if isinstance(index, VectorIndex):
                index.add(batch.labels, batch.vectors)
            else:
                index.add(
                    [
                        TextDocument(int(lb), content, heading, title, language)
                        for lb, content, heading, title, language in zip(
                            batch.labels, batch.content, batch.heading_path, batch.title,
                            batch.language, strict=True,
                        )
                    ]
                )

    @contextmanager
    def _indexes_follow(self) -> Iterator[None]:
        """Around everything between a catalog commit that changes chunks and the end of its
        ``_apply_commit``. A failure in between (a full disk reported there, Ctrl-C) left the
        indexes without that commit while this object went on: the next ``persist`` stamped
        them with the new generation, and the commit's documents stayed unsearchable (or a
        deleted one searchable) for good, reopens included."""
        self._indexes_behind = True
        yield
        self._indexes_behind = False

    def _catch_up_indexes(self) -> None:
        """After an interrupted ``_indexes_follow``: reload both indexes as last saved (their
        stamps say exactly what they hold) and replay the catalog from there, as an open
        after a kill does."""
        self._committed()  # the failure may have come before the generation was read
        release = getattr(self._text_index, "release", None)
        if release is not None:
            release()  # its writer's lock, which the reloaded index needs to replay
        self._vector_index, self._text_index = self._open_indexes()
        self.hit_token_cache.clear()
        self._sync_indexes()
        # Only now: a replay that failed (the lock above, a full disk) left the indexes
        # short of the catalog, and the next save stamped them current for good.
        self._indexes_behind = False

    def persist(self) -> None:
        """Save both indexes stamped with the catalog generation, then the manifest."""
        self.require_writable()
        if self._indexes_behind:
            self._catch_up_indexes()
        self._save()

    def _save(self) -> None:
        self.query_log.flush(self._catalog)
        generation = self._generation
        if self._vector_index.generation != generation:
            self._vector_index.save(generation)
            faults.crash_point("after_vector_save")
        if self._text_index.generation != generation:
            self._text_index.save(generation)
            faults.crash_point("after_text_save")
        if (self.manifest.generation, self.manifest.index_version) != (generation, self._index_version):
            self.manifest = mf.Manifest.from_dict(
                {**self.manifest.to_dict(), "generation": generation,
                 "index_version": self._index_version}
            )
            faults.crash_point("before_manifest_rename")
            mf.write_manifest(self.path, self.manifest)
            faults.crash_point("after_manifest")
        self._catalog.release()

    def view(self) -> ChunkView:
        """The chunk view searches read; reloaded only after a commit."""
        self.require_open()
        if self.read_only:
            self.refresh()
        elif self._indexes_behind:
            self._catch_up_indexes()
        if self._view is None or self._view.generation != self._generation:
            view = self._next_view()
            self._catalog.release()
            self._swap_view(view)
        assert self._view is not None
        return self._view

    def _next_view(self, vector_index: VectorIndex | None = None) -> ChunkView:
        """The view at the catalog's generation: the current one plus what changed, so a
        commit costs what it changed, not a reload of every chunk."""
        index = vector_index if vector_index is not None else self._vector_index
        if self._view is None:
            return ChunkView.load(self._catalog, index)
        return self._view.advance(self._catalog, index)

    def _apply_commit(self, removed: np.ndarray, added: Sequence[tuple[np.ndarray, np.ndarray, list[TextDocument]]]) -> None:
        """Mirror a committed catalog change into the in-memory indexes."""
        if len(removed):
            self._vector_index.delete(removed)
            self._text_index.delete(removed)
        added = [batch for batch in added if len(batch[0])]
        if added:
            # One call per index for the whole batch: both backends have a per-call cost.
            self._vector_index.add(
                np.concatenate([labels for labels, _, _ in added]),
                np.vstack([vectors for _, vectors, _ in added]),
            )
            self._text_index.add([text for _, _, texts in added for text in texts])

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
        from ..search.presets import default_preset, load_presets

        self._presets = load_presets(self._catalog)
        self._default_preset = default_preset(self._catalog)
        self._catalog.release()

    def rebuild_indexes(self) -> None:
        """Throw both derived indexes away and rebuild them from the catalog, then persist."""
        self.require_writable()
        self._discard_indexes()
        self._vector_index, self._text_index = self._open_indexes()
        self.hit_token_cache.clear()
        self._sync_indexes()

    def _discard_indexes(self) -> None:
        discard_index_files(self._index_root)
        # The chunk texts are derived too, and a damaged segment passes the index checks.
        shutil.rmtree(self.path / TEXTS_FOLDER, ignore_errors=True)
        if self._view is not None:
            self._view.close()
            self._view = None

    def _adopt_model(
        self, manifest: mf.Manifest, embedder: Embedder, *, rebuild: bool = True
    ) -> None:
        """After a reindex: switch to the new model, dimension and chunking in place, and
        rebuild the indexes (a caller already failing only drops them: the next use
        rebuilds them, as ``_catch_up_indexes`` finds no files to reload)."""
        self.manifest = manifest
        self.embedder = embedder
        self._catalog.dim = manifest.embedding_dim
        self.chunker = Chunker(ChunkingConfig.from_dict(manifest.chunking))
        self.query_embeddings = QueryEmbeddingCache(embedder)
        self._committed()
        if rebuild:
            self.rebuild_indexes()
        else:
            self._discard_indexes()
            self._indexes_behind = True

    @classmethod
    def open_for_maintenance(cls, path: str | Path, *, lock_timeout: float = 0.0) -> Self:
        """Open a store for writing without loading (or even having) its embedding model."""
        root = Path(path)
        manifest = mf.read_manifest(root)
        if manifest is None:
            raise StoreNotFoundError(f"no enginelib store at {root}", path=root)
        manifest = finish_interrupted_reindex(root, manifest, writable=False)
        embedder = CatalogOnlyEmbedder(manifest.embedding_model, manifest.embedding_dim)
        return cls.open(root, embedder=embedder, create=False, lock_timeout=lock_timeout)


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _start_unfinished_catalog_again(path: Path, read_only: bool) -> None:
    """A new store's creation killed before DuckDB wrote its file: nothing was committed
    (the manifest is at generation 0), so a writer starts the file again."""
    if read_only:
        raise StoreError(f"the catalog {path} is empty (shorter than DuckDB's own headers): "
                         f"the store's creation was killed before anything was written; any "
                         f"write (e.g. `enginelib ingest PATH --store {shell_word(path.parent)}`) "
                         f"starts it again", path=path)
    path.unlink()
    path.with_name(path.name + ".wal").unlink(missing_ok=True)


def require_folder(root: Path) -> None:
    """A store path that names a file, a pipe or a device is refused saying so: a search
    said "no enginelib store here: create it with `enginelib init`", which then failed with
    "Not a directory"."""
    try:
        info = root.stat()
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            require_no_file_above(root)
        link = broken_link(root)  # `init` said "File exists", a search "no store here"
        if link is not None:
            raise StoreError(f"the store path {root} is {link}: give the folder itself, or "
                             "another path", path=root) from None
        return  # missing (created, or StoreNotFoundError below) or unreadable: said there
    if not stat.S_ISDIR(info.st_mode):
        kind = special_kind(info.st_mode) or "a file"
        raise StoreError(f"the store path {root} is {kind}, not a folder: a store is a folder "
                         "(created if missing): give another path", path=root)


def require_no_file_above(root: Path) -> None:
    """A store path below a file (``notes.txt/store``) is refused naming that file: the
    open said "Not a directory" of the whole path, and a search "no store here: create it
    with `enginelib init`", which then failed the same way."""
    blocker = file_above(root)
    if blocker is not None:
        kind = special_kind(blocker.stat().st_mode) or "a file"
        raise StorageError(f"the store path {root} goes through {blocker}, which is {kind}, "
                           "not a folder: give a path that does not go through it, or move that "
                           "file away", path=root, errno=errno.ENOTDIR)


def _open_catalog(root: Path, dim: int, read_only: bool) -> Catalog:
    """The store's catalog. A writer first mends a block a killed checkpoint left
    half-written (``catalog_mend``): the store a kill leaves opens, nothing lost."""
    path = layout.catalog_path(root)
    try:
        return Catalog(path, dim, read_only=read_only)
    except CorruptStoreError as exc:
        if read_only:
            raise
        mended = mend_and_warn(root)
        if not mended.opens:
            raise unmendable_error(root, mended.reason) from exc
    return Catalog(path, dim, read_only=False)


# The edge of the API (argument checks, error mapping, readers releasing the catalog):
# enginelib/store_guard.py wraps the core's public methods here and the facade's in store.py.
def _undo_creation(root: Path, folder_was_new: bool) -> None:
    """A new store that failed half-way (a dimension DuckDB refuses, a full disk) leaves
    nothing behind: its manifest would make every later open fail the same way."""
    if folder_was_new:
        shutil.rmtree(root, ignore_errors=True)
        return
    catalog = layout.catalog_path(root)
    for path in (root / layout.MANIFEST_NAME, catalog, catalog.with_name(catalog.name + ".wal"),
                 root / layout.LOCK_NAME):
        path.unlink(missing_ok=True)


from ..store_guard import install as _install_guards  # noqa: E402
from ..text import shell_word

_install_guards(StoreCore)

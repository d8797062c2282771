"""The DuckDB catalog: the store's source of truth for documents, chunks, vectors and history."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from . import columns as cols
from .catalog_errors import refused_write
from .core.layout import is_memory_store
from .errors import (
    CorruptStoreError,
    DocumentNotFoundError,
    IncompatibleStoreError,
    StorageError,
    StoreError,
    StoreLockedError,
)
from .fair_lock import FairRLock
from .input_files import special_kind
from .schema import (
    ACRONYMS_DDL,
    CHUNK_COLUMNS,
    SCHEMA_VERSION,
    add_version_tenants,
    create_schema,
    migrate,
)
from .text import shell_word
from .utc import naive_utc


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class ChunkRow:
    """A chunk ready to be written: the chunker's span plus what the store adds."""

    chunk_index: int
    content: str
    heading_path: str
    start_offset: int
    end_offset: int
    token_count: int
    page_start: int | None
    page_end: int | None
    content_hash: str


@dataclass(frozen=True)
class ChunkBatch:
    """What the indexes need of a run of chunks, in label order."""

    labels: np.ndarray  # int64
    vectors: np.ndarray  # (n, dim) float32
    content: list[str]
    heading_path: list[str]
    title: list[str]
    language: list[str]


class Catalog:
    """Thin, typed wrapper over one DuckDB file. All values reach SQL as parameters."""

    def __init__(
        self, path: Path | str, dim: int, *, read_only: bool = False, lock_timeout: float = 30.0
    ) -> None:
        self.in_memory_db = str(path) == ":memory:"
        self.path = Path(path)
        self.dim = dim
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self._con: duckdb.DuckDBPyConnection | None = None
        self._closed = False
        # What a call after close() is told, when "open the store again" is not the way
        # (an in-memory store: its folder went with the close).
        self.closed_message: str | None = None
        # The file once open (device, inode): a later reconnect (after ``release``) must find
        # it there, or DuckDB would start an empty catalog in its place, and a writer must
        # find that file, not another store's put at the path (``_require_file``).
        self._identity: tuple[int, int] | None = None
        # One caller at a time on the one connection: DuckDB refuses a second ("connection
        # is busy"), or hands it the first one's rows. The Store over this catalog holds it
        # for each public call, the job queue for each of its own, a worker for its pass.
        self.calls = threading.RLock()
        # One writer of documents at a time, taken before ``calls``: a worker holds it for
        # its whole pass, also while it lets go of ``calls`` to embed, so that the documents
        # its job read stay as read; the Store's writers (store_guard.WRITERS) wait for it.
        # First come first served: a writer waiting for a job goes before the worker's next.
        self.writes = FairRLock()
        try:
            if not read_only:
                self._ensure_schema()
            self._check_schema_version()
        except duckdb.Error as exc:
            # A damaged block past the file's header fails the first read, not the connect:
            # that was a bare DuckDB error, and the connection left open made every later
            # open in this process say the store was open another way.
            self.release()
            raise _open_error(self.path, exc) from exc
        except BaseException:
            self.release()
            raise

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, opened on demand (see ``release``)."""
        if self._con is None:
            if self._closed:  # release() lets go for a while; close() is for good
                raise StoreError(self.closed_message or
                                 f"the catalog {self.path} is closed: open the store again",
                                 path=self.path)
            self._con = self._connect()
        return self._con

    def _connect(self) -> duckdb.DuckDBPyConnection:
        # DuckDB lets one process hold a file read-write, or many hold it read-only. Writers
        # and readers therefore hold it only briefly and retry while another process has it.
        if not self.in_memory_db:
            _require_file(self.path, opened=self._identity,
                          same_file=not self.read_only)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.005
        while True:
            try:
                if self.in_memory_db:
                    return duckdb.connect(":memory:")
                con = duckdb.connect(str(self.path), read_only=self.read_only)
                if self._identity is None:
                    try:
                        info = os.stat(self.path)
                        self._identity = (info.st_dev, info.st_ino)
                    except OSError:
                        pass
                return con
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise _open_error(self.path, exc) from exc
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"catalog {self.path} stayed in use by another process for "
                        f"{self.lock_timeout:.0f} s; retry later",
                        path=self.path,
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
            except duckdb.Error as exc:
                raise _open_error(self.path, exc) from exc

    @property
    def connected(self) -> bool:
        """Whether the file is open now (``release`` closes it; ``con`` reopens it)."""
        return self._con is not None

    def release(self) -> None:
        """Close the file so other processes can open it; the next use reopens it. Waits for
        the call in progress (``calls``): closed under it, its query failed or read nothing."""
        with self.calls:
            if self._con is not None and not self.in_memory_db:
                try:
                    self._con.close()
                except duckdb.Error:
                    pass
                self._con = None

    @classmethod
    def in_memory(cls, dim: int) -> Catalog:
        """An empty catalog in memory with the current schema (snapshots load into it)."""
        return cls(":memory:", dim)

    # -- lifecycle -------------------------------------------------------------------------

    def _ensure_schema(self) -> None:
        with self.transaction():
            exists = first(self.con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
            ).fetchall())
            if not exists or exists[0] == 0:
                create_schema(self.con, self.dim)
                return
            version = int(self.get_meta("schema_version") or 0)
            if version < SCHEMA_VERSION:
                migrate(self.con, version, self.dim)
            self.con.execute(ACRONYMS_DDL)
            add_version_tenants(self.con)

    def _check_schema_version(self) -> None:
        version = int(self.get_meta("schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise IncompatibleStoreError(
                f"store schema version {version} is newer than this enginelib "
                f"(supports {SCHEMA_VERSION}): upgrade enginelib",
                path=self.path,
            )
        if version < SCHEMA_VERSION:
            raise IncompatibleStoreError(
                f"store schema version {version} is older than {SCHEMA_VERSION}: "
                "open it once for writing to migrate it",
                path=self.path,
            )

    @property
    def closed(self) -> bool:
        """Whether ``close`` ran (for good; ``release`` only lets go for a while)."""
        return self._closed

    def close(self) -> None:
        self._closed = True
        if self._con is not None:
            try:
                self._con.close()
            except duckdb.Error:
                pass
            self._con = None

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One all-or-nothing write. A key, value or transaction DuckDB refuses comes out as
        an enginelib error that says what to do (it was DuckDB's own ConstraintException).

        DuckDB aborts an open transaction when one of its statements fails, and when another
        BEGIN reaches its connection (a second thread on the same Store); the COMMIT of an
        aborted transaction then rolls it back and reports success. So the transaction is
        checked before it commits: a write lost that way raises instead of passing as done.
        """
        try:
            self.con.execute("BEGIN TRANSACTION")
        except duckdb.TransactionException as exc:
            self._refused(exc)
            raise
        try:
            yield self.con
            self.con.execute(_STILL_OPEN_SQL)  # fails in an aborted transaction
            self.con.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            self._refused(exc)
            raise

    def _refused(self, exc: BaseException) -> None:
        """Raise the enginelib error for what DuckDB refused, if it is one we name."""
        refused = refused_write(self.path, exc)
        if refused is not None:
            raise refused from exc

    def _rollback(self) -> None:
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:
            # none open any more (a failed COMMIT ends it): nothing to undo, and the error
            # that got here is the one to report, not this one
            pass

    # -- meta ------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = first(self.con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall())
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.con.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )

    def delete_meta(self, key: str) -> None:
        self.con.execute("DELETE FROM meta WHERE key = ?", [key])

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def bump_generation(self) -> int:
        """Call inside a transaction: the new generation commits with the data it describes."""
        new = self.generation + 1
        self.set_meta("generation", str(new))
        return new

    def allocate_labels(self, count: int) -> np.ndarray:
        start = int(self.get_meta("next_label") or 0)
        self.set_meta("next_label", str(start + count))
        return np.arange(start, start + count, dtype=np.int64)

    # -- documents -------------------------------------------------------------------------

    def get_document(self, document_id: str) -> dict[str, Any] | None:
        cursor = self.con.execute("SELECT * FROM documents WHERE document_id = ?", [document_id])
        row = first(cursor.fetchall())
        if row is None:
            return None
        names = [d[0] for d in cursor.description]
        return _decode_json(dict(zip(names, row, strict=True)))

    def require_document(self, document_id: str) -> dict[str, Any]:
        doc = self.get_document(document_id)
        if doc is None:
            deleted = bool(self.archived_versions([document_id]))
            raise DocumentNotFoundError(document_id, deleted=deleted,
                                        in_memory=is_memory_store(self.path.parent))
        return doc

    def document_states(
        self, document_ids: Sequence[str]
    ) -> dict[str, tuple[str, str, str, str | None]]:
        """document_id -> (content_hash, version, fingerprint, source_path) for the ids that
        exist."""
        if not document_ids:
            return {}
        rows = self.con.execute(
            "SELECT document_id, content_hash, version, fingerprint, source_path FROM documents "
            "WHERE document_id IN (SELECT unnest(?::VARCHAR[]))",
            [list(document_ids)],
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def archived_versions(self, document_ids: Sequence[str]) -> dict[str, list[str]]:
        """document_id -> the versions kept in its history (a deleted document's too)."""
        if not document_ids:
            return {}
        rows = self.con.execute(
            "SELECT document_id, version FROM document_versions "
            "WHERE document_id IN (SELECT unnest(?::VARCHAR[]))",
            [list(document_ids)],
        ).fetchall()
        found: dict[str, list[str]] = {}
        for document_id, version in rows:
            found.setdefault(document_id, []).append(version)
        return found

    def created_at_of(self, document_ids: Sequence[str]) -> dict[str, Any]:
        """document_id -> created_at: a replaced document keeps its creation date."""
        if not document_ids:
            return {}
        rows = self.con.execute(
            "SELECT document_id, created_at FROM documents "
            "WHERE document_id IN (SELECT unnest(?::VARCHAR[]))",
            [list(document_ids)],
        ).fetchall()
        return dict(rows)

    def labels_of(self, document_id: str) -> np.ndarray:
        rows = self.con.execute(
            "SELECT label FROM chunks WHERE document_id = ? ORDER BY chunk_index", [document_id]
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def archive_document(self, document_id: str, change_summary: str, generation: int) -> None:
        self.archive_documents([document_id], change_summary, generation)

    def archive_documents(
        self, document_ids: Sequence[str], change_summary: str, generation: int
    ) -> None:
        """Copy the current version of each document into document_versions."""
        if not document_ids:
            return
        self.con.execute(
            """INSERT INTO document_versions (document_id, version, index_version, title,
                   content, content_hash, truth_level, total_chunks, custom, change_summary,
                   valid_from, archived_at, generation, tenant_id)
               SELECT document_id, version, index_version, title, content, content_hash,
                      truth_level, total_chunks, custom, ?, updated_at, ?, ?, tenant_id
               FROM documents WHERE document_id IN (SELECT unnest(?::VARCHAR[]))
               ON CONFLICT DO NOTHING""",
            [change_summary, utcnow(), generation, list(document_ids)],
        )

    def delete_document(self, document_id: str, generation: int) -> np.ndarray:
        return self.delete_documents([document_id], generation)

    def delete_documents(self, document_ids: Sequence[str], generation: int) -> np.ndarray:
        """Delete documents and their chunks; their labels are tombstoned for index replay."""
        if not document_ids:
            return np.zeros(0, dtype=np.int64)
        ids = list(document_ids)
        rows = self.con.execute(
            "SELECT label FROM chunks WHERE document_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        ).fetchall()
        labels = np.array([r[0] for r in rows], dtype=np.int64)
        if len(labels):
            self.con.execute(
                "INSERT INTO label_tombstones SELECT unnest(?::BIGINT[]), ?",
                [labels.tolist(), generation],
            )
        self.con.execute("DELETE FROM chunks WHERE document_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
        self.con.execute(_DELETE_ACRONYMS_SQL, [ids])
        self.con.execute(
            "DELETE FROM documents WHERE document_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        )
        return labels

    def insert_document(self, row: dict[str, Any]) -> None:
        self.insert_documents([row])

    def insert_documents(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert document rows (keys: DOCUMENT_COLUMNS) in one statement."""
        if not rows:
            return
        columns = list(rows[0])
        data = {c: cols.objects(_encode_json(c, r[c]) for r in rows) for c in columns}
        self._insert_columns("documents", columns, data)

    def insert_chunks(
        self,
        document_ids: str | Sequence[str],
        labels: np.ndarray,
        chunks: Sequence[ChunkRow],
        vectors: np.ndarray,
        generation: int,
    ) -> None:
        """Insert chunks (of one document, or one document id per chunk) in one statement."""
        n = len(chunks)
        if n == 0:
            return
        doc_ids = [document_ids] * n if isinstance(document_ids, str) else list(document_ids)
        table = {
            "label": np.asarray(labels, dtype=np.int64),
            "document_id": cols.objects(doc_ids),
            "chunk_index": cols.ints((c.chunk_index for c in chunks), np.int32),
            "content": cols.objects(c.content for c in chunks),
            "heading_path": cols.objects(c.heading_path for c in chunks),
            "start_offset": cols.ints((c.start_offset for c in chunks), np.int32),
            "end_offset": cols.ints((c.end_offset for c in chunks), np.int32),
            "token_count": cols.ints((c.token_count for c in chunks), np.int32),
            "page_start": cols.ints((c.page_start for c in chunks), np.int32),
            "page_end": cols.ints((c.page_end for c in chunks), np.int32),
            "content_hash": cols.objects(c.content_hash for c in chunks),
            "embedding": _fixed_list(vectors, self.dim),
            "retrieval_count": np.zeros(n, dtype=np.int64),
            "last_retrieved_at": cols.objects([None] * n),
            "generation": np.full(n, generation, dtype=np.int64),
        }
        self._insert_columns("chunks", list(CHUNK_COLUMNS), table)

    def insert_acronyms(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """(document_id, acronym, expansion) rows; a replaced document's rows went with
        ``delete_documents``."""
        if rows:
            self.con.executemany(_INSERT_ACRONYM_SQL, [list(row) for row in rows])

    def acronym_counts(self) -> list[tuple[str, str, int]]:
        """(acronym, expansion, documents defining it); empty for a store or snapshot made
        before acronyms were learned."""
        try:
            rows = self.con.execute(_ACRONYM_COUNTS_SQL).fetchall()
        except duckdb.CatalogException:
            return []
        return [(str(a), str(e), int(n)) for a, e, n in rows]

    def _insert_columns(
        self, table_name: str, columns: Sequence[str], data: dict[str, np.ndarray]
    ) -> None:
        # Table and column names come from our own schema constants, never from the caller.
        view = f"_new_{table_name}"
        with cols.registered(self.con, view, data):
            self.con.execute(
                f"INSERT INTO {table_name} ({', '.join(columns)}) "
                f"SELECT {', '.join(columns)} FROM {view}"
            )

    def list_documents(self, limit: int | None = None) -> list[dict[str, Any]]:
        cursor = self.con.execute(
            "SELECT document_id, title, truth_level, version, total_chunks, domain, source_type "
            "FROM documents ORDER BY document_id LIMIT ?",
            [limit if limit is not None else 2**62],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]

    def versions(self, document_id: str) -> list[dict[str, Any]]:
        cursor = self.con.execute(
            "SELECT document_id, version, index_version, title, content_hash, truth_level, "
            "total_chunks, change_summary, valid_from, archived_at, generation "
            "FROM document_versions WHERE document_id = ? ORDER BY archived_at, generation",
            [document_id],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]

    def version_text(self, document_id: str, version: str) -> str | None:
        row = first(self.con.execute(
            "SELECT content FROM document_versions WHERE document_id = ? AND version = ?",
            [document_id, version],
        ).fetchall())
        return row[0] if row else None

    def chunks_of(self, document_id: str) -> list[dict[str, Any]]:
        cursor = self.con.execute(
            "SELECT label, chunk_index, content, heading_path, start_offset, end_offset, "
            "token_count, page_start, page_end, retrieval_count, last_retrieved_at "
            "FROM chunks WHERE document_id = ? ORDER BY chunk_index",
            [document_id],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]

    # -- index feeding ---------------------------------------------------------------------

    def chunk_batches(
        self, *, since_generation: int | None = None, batch_size: int = 8192
    ) -> Iterator[ChunkBatch]:
        """Chunks with what the indexes need (vectors, text, title, language), in batches."""
        after: int | None = None  # keyset paging by label: one bounded query per batch
        while True:
            batch = self.con.execute(
                _CHUNK_BATCH_SQL, [since_generation, since_generation, after, after, batch_size]
            ).fetchnumpy()
            labels = np.asarray(batch["label"], dtype=np.int64)
            if len(labels) == 0:
                return
            yield ChunkBatch(
                labels=labels,
                vectors=cols.matrix(batch["embedding"], self.dim),
                content=[str(v) for v in batch["content"]],
                heading_path=[str(v) for v in batch["heading_path"]],
                title=[str(v) for v in batch["title"]],
                language=[str(v) for v in batch["language"]],
            )
            after = int(labels[-1])

    def tombstones_since(self, generation: int) -> np.ndarray:
        rows = self.con.execute(
            "SELECT DISTINCT label FROM label_tombstones WHERE generation > ?", [generation]
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def chunk_count(self) -> int:
        row = first(self.con.execute("SELECT count(*) FROM chunks").fetchall())
        return int(row[0]) if row else 0

    def all_labels(self) -> np.ndarray:
        arr = self.con.execute("SELECT label FROM chunks ORDER BY label").fetchnumpy()["label"]
        return np.asarray(arr, dtype=np.int64)

    # -- embedding cache -------------------------------------------------------------------

    def cached_embeddings(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        if not keys:
            return {}
        result = self.con.execute(
            "SELECT cache_key, embedding FROM embedding_cache "
            "WHERE cache_key IN (SELECT unnest(?::VARCHAR[]))",
            [list(keys)],
        ).fetchnumpy()
        return {
            k: np.asarray(v, dtype=np.float32)
            for k, v in zip(result["cache_key"], result["embedding"], strict=True)
        }

    def cache_embeddings(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        table = {"cache_key": cols.objects(keys), "embedding": _fixed_list(vectors, self.dim)}
        with cols.registered(self.con, "_new_cache", table):
            self.con.execute(
                "INSERT INTO embedding_cache SELECT * FROM _new_cache ON CONFLICT DO NOTHING"
            )

    # -- query log -------------------------------------------------------------------------

    def logged_queries(self, *, limit: int = 100, zero_results: bool = False) -> list[dict[str, Any]]:
        """Newest first; ``zero_results`` keeps the searches that returned no hit (the
        questions the corpus cannot answer yet). Newest by when the search ran, not by id: a
        reader's searches get their ids when a writer imports them, after searches the
        writers ran later (ordered by id, an import put them first)."""
        cursor = self.con.execute(
            "SELECT id, created_at, query_text, strategy, filters, status, result_count, "
            "chunks_retrieved, reranked_count, latency_ms FROM query_log "
            "WHERE NOT ? OR result_count = 0 ORDER BY created_at DESC, id DESC LIMIT ?",
            [zero_results, limit],
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        for row in rows:
            row["filters"] = json.loads(row["filters"]) if row["filters"] else None
        return rows

    def log_queries(self, entries: Sequence[tuple[dict[str, Any], Sequence[int]]]) -> None:
        """Append query-log rows and bump the returned chunks' retrieval stats, atomically."""
        if entries:
            with self.transaction():
                self.insert_queries(entries)

    def insert_queries(self, entries: Sequence[tuple[dict[str, Any], Sequence[int]]]) -> None:
        """``log_queries`` inside a transaction the caller holds, so that what it writes
        besides (the query log's import records the files it claimed) commits with them."""
        if not entries:
            return
        now = utcnow()
        # One columnar insert, not executemany: a writer importing thousands of readers'
        # entries at open spent ~1 ms per row on separate statements.
        rows = {
            "query_text": cols.objects(e["query_text"] for e, _ in entries),
            "strategy": cols.objects(e["strategy"] for e, _ in entries),
            "filters": cols.objects(json.dumps(e.get("filters"), default=str) for e, _ in entries),
            "latency_ms": np.array([float(e["latency_ms"]) for e, _ in entries], np.float64),
            "chunks_retrieved": cols.ints(int(e["chunks_retrieved"]) for e, _ in entries),
            "reranked_count": cols.ints(int(e["reranked_count"]) for e, _ in entries),
            "result_count": cols.ints(int(e["result_count"]) for e, _ in entries),
            "status": cols.objects(e["status"] for e, _ in entries),
            "created_at": cols.objects(_timestamp_text(e.get("created_at") or now)
                                       for e, _ in entries),
        }
        with cols.registered(self.con, "_logged", rows):
            self.con.execute(
                "INSERT INTO query_log (query_text, strategy, filters, latency_ms, "
                "chunks_retrieved, reranked_count, result_count, status, created_at) "
                "SELECT query_text, strategy, filters, latency_ms, chunks_retrieved, "
                "reranked_count, result_count, status, CAST(created_at AS TIMESTAMP) "
                "FROM _logged"
            )
        counts: dict[int, int] = {}
        for _, labels in entries:
            for label in labels:
                counts[int(label)] = counts.get(int(label), 0) + 1
        if counts:
            table = {"label": cols.ints(counts), "n": cols.ints(counts.values())}
            with cols.registered(self.con, "_retrieved", table):
                self.con.execute(
                    "UPDATE chunks SET retrieval_count = retrieval_count + r.n, "
                    "last_retrieved_at = ? FROM _retrieved r WHERE chunks.label = r.label",
                    [now],
                )


_STILL_OPEN_SQL = "SELECT 1"
_CHUNK_BATCH_SQL = """
SELECT c.label, c.embedding, c.content, coalesce(c.heading_path, '') AS heading_path,
       coalesce(d.title, '') AS title, coalesce(d.language, 'en') AS language
FROM chunks c JOIN documents d USING (document_id)
WHERE (? IS NULL OR c.generation > ?) AND (? IS NULL OR c.label > ?)
ORDER BY c.label LIMIT ?
"""
_INSERT_ACRONYM_SQL = "INSERT INTO acronyms (document_id, acronym, expansion) VALUES (?, ?, ?)"
_DELETE_ACRONYMS_SQL = "DELETE FROM acronyms WHERE document_id IN (SELECT unnest(?::VARCHAR[]))"
_ACRONYM_COUNTS_SQL = """
SELECT acronym, expansion, count(DISTINCT document_id) FROM acronyms
GROUP BY acronym, expansion ORDER BY acronym, expansion
"""
def unfinished_catalog(path: Path) -> bool:
    """Whether ``path`` is a file shorter than DuckDB's three 4 KiB headers: a creation killed
    before DuckDB wrote them (an empty file), which can hold nothing."""
    try:
        return path.is_file() and path.stat().st_size < 3 * 4096
    except OSError:
        return False


def missing_catalog_error(path: Path, generation: int) -> CorruptStoreError:
    """A store that has committed (its manifest is at ``generation``) whose catalog file is
    gone (or an empty file): opening it must not start an empty catalog in its place."""
    store = path.parent
    gone = "empty (shorter than DuckDB's own headers)" if unfinished_catalog(path) else "missing"
    return CorruptStoreError(
        f"the catalog {path} is {gone}, though the store's manifest is at generation "
        f"{generation}: its documents were in that file. Put it back from a copy of the folder, "
        f"or start the store again from a snapshot: `enginelib snapshot list --store {shell_word(store)}`, "
        f"then `enginelib snapshot restore NAME --store {shell_word(store)}`; with no snapshot, remove the "
        f"folder and ingest the sources again",
        path=path,
    )


def require_committed_catalog(path: Path, generation: int) -> None:
    """Raise ``missing_catalog_error`` when a store that has committed (its manifest is at
    ``generation`` > 0) lacks its catalog file: a read by path (``check``, a diff against
    the live store) answered in DuckDB's words, "Cannot open database ... in read-only mode:
    database does not exist", with no way back named."""
    if generation > 0 and (not path.exists() or unfinished_catalog(path)):
        raise missing_catalog_error(path, generation)


def _open_error(path: Path, exc: Exception) -> StoreError:
    """What a failed open of the catalog file means to the user."""
    text = str(exc).lower()
    if "different configuration" in text:
        # DuckDB opens one file once per process: a read-only Store beside this process's
        # own writing Store (or the reverse) cannot have its own connection.
        return StoreError(
            f"cannot open {path.parent} here: this process already has it open another way (a "
            "Store opened for writing and not closed, or a read-only one while you open it "
            "for writing). Search through the Store already open, or close() it first; a "
            "read-only Store in another process can read it meanwhile", path=path)
    # "could not read enough bytes": a file cut short (a copy or a disk that stopped early)
    if not any(sign in text for sign in ("corrupt", "not a valid duckdb database file",
                                         "could not read enough bytes")):
        return StoreError(f"cannot open catalog {path}: {exc}", path=path)
    store = shell_word(path.parent)
    return CorruptStoreError(
        f"the catalog {path} is damaged ({exc}). After a killed write (a crash, a power cut), "
        f"the next writer's open (or `enginelib repair --store {store}`) mends the block "
        f"DuckDB was rewriting and loses nothing. If it cannot: {snapshot_advice(path)}",
        path=path,
    )


def _require_file(path: Path, *, opened: tuple[int, int] | None = None,
                  same_file: bool = False) -> None:
    """DuckDB opens whatever the path names: a pipe in the catalog's place blocked every
    command on the store for good, waiting for a writer.

    ``opened``: the file this catalog had open before (device, inode), for a reconnect after
    ``release``. A missing file then means the store was moved or deleted under the process
    (`serve` releases the file whenever it is idle): DuckDB would start an empty catalog in
    its place, every request failed as a damaged catalog, and the next open took the empty
    file for a store that had never committed, its documents gone. ``same_file`` (a writer,
    which holds the store's lock: nothing of ours replaces its file meanwhile): another file
    at the path is another store put there, which the writer's indexes in memory and its
    worker's jobs do not belong to."""
    try:
        info = os.stat(path)
        kind = special_kind(info.st_mode)
    except FileNotFoundError:
        if opened is not None:
            raise StorageError(
                f"the catalog {path} is gone since this process opened the store: its folder "
                "was moved or deleted, or the file removed, meanwhile. Put it back where it "
                "was (nothing was written in its place), or open the store where it is now",
                path=path, errno=errno.ENOENT) from None
        return  # a new catalog
    except OSError:
        return  # unreadable: DuckDB says so
    if same_file and opened is not None and (info.st_dev, info.st_ino) != opened:
        raise StorageError(
            f"the catalog {path} is not the file this process opened: the store was replaced "
            "meanwhile (moved away and another put at its path). Nothing was read from or "
            "written to it: restart this process to use the store now there, or put the one "
            "it opened back", path=path)
    if kind is not None:  # not CorruptStoreError: there are no blocks to mend
        store = shell_word(path.parent)
        raise StoreError(
            f"the catalog {path} is {kind}, not a file: remove it and put catalog.duckdb back "
            f"from a copy of the folder, or start the store again from a snapshot "
            f"(`enginelib snapshot list --store {store}`)", path=path)


def snapshot_advice(path: Path) -> str:
    """The way back from a catalog nothing can mend: its snapshots."""
    store = shell_word(path.parent)
    return (
        f"the snapshots do not depend on this file and stay searchable (`enginelib snapshot "
        f"list --store {store}`, then `enginelib search QUERY --store {store} --snapshot NAME`); "
        f"to write again, `enginelib snapshot restore NAME --store {store}` starts the store "
        "from that snapshot and keeps this file beside it (documents committed after the "
        "snapshot are only in this file: ingest them again from their sources)"
    )


def _timestamp_text(value: Any) -> str:
    """A logged time as text for ``CAST(... AS TIMESTAMP)``, in UTC: DuckDB's cast drops an
    offset rather than apply it (``10:00+02:00`` was kept as 10:00)."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return naive_utc(moment).isoformat(sep=" ")


def _fixed_list(vectors: np.ndarray, dim: int) -> np.ndarray:
    return cols.vectors(np.asarray(vectors, dtype=np.float32).reshape(-1, dim))


_JSON_COLUMNS = ("custom", "pages")


def _encode_json(column: str, value: Any) -> Any:
    if column in _JSON_COLUMNS and value is not None:
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


def _decode_json(row: dict[str, Any]) -> dict[str, Any]:
    for column in _JSON_COLUMNS:
        if isinstance(row.get(column), str):
            row[column] = json.loads(row[column])
    return row


def first(rows: list[Any]) -> Any:
    """The first row or None: DuckDB 2 wants every result fully fetched, so no fetchone()."""
    return rows[0] if rows else None

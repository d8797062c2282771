"""The enginelib exception tree: every error a user can act on.

    EngineError
     +-- StoreError                    a store on disk cannot be used as asked
     |    +-- StoreNotFoundError         (also FileNotFoundError)
     |    +-- StoreLockedError           another writer holds the store
     |    +-- ReadOnlyStoreError         write attempted on a snapshot / read-only store
     |    +-- IncompatibleStoreError     model, dimension, chunking or schema changed: reindex
     |    +-- SnapshotError              unknown / duplicate / pinned snapshot
     |    |    +-- DamagedSnapshotError    a snapshot's files are not those it wrote
     |    +-- IntegrityError             catalog and indexes disagree (run `enginelib repair`)
     |    +-- CorruptStoreError          the catalog file is damaged: its snapshots stay readable
     |    +-- StorageError               the file system refused a read or write  (.errno)
     |    |    +-- DiskFullError           no space left (ENOSPC / EDQUOT)
     |    +-- BackendError               DuckDB / Tantivy / hnswlib failed inside an operation
     |    +-- RankingChangedError        a search's ranked_at names a state the store has left:
     |                                   its pages would not stitch (HTTP 409)  (.given, .current)
     +-- IngestError                   a document could not be ingested  (.path)
     |    +-- LoaderError                unreadable, empty, binary, no text layer, bad JSONL line
     |    |    +-- SourceMissingError        the file named is gone (deleted or moved since)
     |    |    +-- SourceTooLargeError       a file or record over the size limit  (.size, .limit)
     |    +-- UnsupportedFormatError     no loader for this file type
     |    +-- PruneRefusedError          ingest --prune would empty a folder that looks unmounted
     +-- DocumentNotFoundError         (also KeyError)
     |    +-- VersionNotFoundError       the document has no such version  (.version)
     +-- JobNotFoundError              no job with that id in the queue (also KeyError)
     +-- JobStateError                 the job is not in the status the action needs (HTTP 409)
     +-- InvalidInputError             (also ValueError) bad argument from the caller
     |    +-- InvalidTruthLevelError
     |    +-- InvalidFilterError         unknown field or wrong type  (.field)
     |    +-- InvalidQueryError          empty query, syntax error in the query language
     |    +-- InvalidVectorError         wrong dimension, NaN / inf
     |    +-- PayloadTooLargeError       an upload over `serve`'s size limit (HTTP 413)
     |    +-- LengthRequiredError        an upload of unknown length (HTTP 411)
     |    +-- UnsafeBindError            `serve` on a public address without a token
     |    +-- UnknownEmbedderError       no built-in embedder by that name
     +-- QueueFullError                `serve` holds as many waiting uploads as it takes (HTTP 429)
     +-- NestedWriteError              a store writer called inside another call on that store
                                       (a search's hook): refused, it could deadlock (also
                                       RuntimeError)
 +-- EmbeddingError                the embedding model could not be loaded or run
     +-- RewriterError                 the caller's query rewriter hook failed or returned garbage
     +-- TokenizerError                the offline tokenizer is missing (never silently replaced)
     +-- ExportError                   the Postgres export failed (server message attached)
     +-- MissingExtraError             an optional feature's package is not installed
                                       (also ImportError)  (.extra, .package)
 +-- NoRelevantSourcesError        the gate refused, raised where a caller asked for it
                                       (.reason, .reason_code, .response)

Dependency errors (duckdb, tantivy, hnswlib, psycopg) are mapped at the boundary with
``raise ... from exc`` so a user never has to read a traceback from inside them.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any


class EngineError(Exception):
    """Root of every error enginelib raises on purpose."""

    # What an interrupted batch operation had committed before it failed (an IngestReport
    # for ingest), so a caller never has to guess: None when nothing applies.
    report: object | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's own rebuilds an error by calling its class with ``args`` (the message
        # alone), which the subclasses with other parameters cannot take (JobStateError,
        # MissingExtraError...): such an error raised in a worker process broke the whole
        # ProcessPoolExecutor instead of reaching the caller. Rebuilt without __init__, from
        # its message and attributes, every one copies and unpickles as it was.
        return _rebuilt, (type(self), self.args, dict(self.__dict__))


def _rebuilt(cls: type[EngineError], args: tuple[Any, ...], state: dict[str, Any]) -> EngineError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class StoreError(EngineError):
    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None


class StoreNotFoundError(StoreError, FileNotFoundError):
    pass


class StoreLockedError(StoreError):
    pass


class ReadOnlyStoreError(StoreError):
    pass


class IncompatibleStoreError(StoreError):
    pass


class SnapshotError(StoreError):
    pass


class DamagedSnapshotError(SnapshotError):
    """A snapshot's table, manifest or snapshot.json is missing or not the file it wrote: it
    cannot be used (the message names the file and the delete command). The server's files,
    not the request: `serve` answers 503."""


class IntegrityError(StoreError):
    pass


class CorruptStoreError(StoreError):
    """The catalog file fails DuckDB's checksums: no write can repair it, snapshots still read."""


class StorageError(StoreError):
    """The file system refused an operation (read-only medium, permissions, I/O error)."""

    def __init__(
        self, message: str, *, path: str | Path | None = None, errno: int | None = None
    ) -> None:
        super().__init__(message, path=path)
        self.errno = errno


class DiskFullError(StorageError):
    pass


class BackendError(StoreError):
    """A storage engine failed in a way no argument explains; the message says the way out."""


class RankingChangedError(StoreError):
    """A search passed ``ranked_at`` (the state an earlier page was ranked on) and the store is
    no longer in that state: it was written to since, so this page would be cut from
    another ranking, repeating or skipping hits. Nothing was searched."""

    def __init__(self, message: str, *, given: str, current: str,
                 path: str | Path | None = None) -> None:
        super().__init__(message, path=path)
        self.given = given
        self.current = current


class IngestError(EngineError):
    def __init__(self, message: str, *, path: str | Path | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None
        self.reason = reason  # for a refused input: why, without the advice around it


class LoaderError(IngestError):
    pass


class UnsupportedFormatError(LoaderError):
    pass


class SourceMissingError(LoaderError):
    """The file named is not there: deleted or moved since it was named (a queued job's)."""


class SourceTooLargeError(LoaderError):
    """A file (or one JSONL record) over the size limit a loader reads: ``.size`` bytes of
    ``.limit``."""

    def __init__(self, message: str, *, path: str | Path | None = None, size: int = 0,
                 limit: int = 0) -> None:
        super().__init__(message, path=path)
        self.size = size
        self.limit = limit


class PruneRefusedError(IngestError):
    """Folder sync refused to delete: the folder is gone or holds no file while the store has
    documents from it. Raised after the ingest committed (``.report`` says what it did) and
    before anything was deleted."""


class DocumentNotFoundError(EngineError, KeyError):
    def __init__(self, document_id: str, *, deleted: bool = False,
                 in_memory: bool = False) -> None:
        message = f"no document with id {document_id!r} in this store"
        if deleted and in_memory:  # an in-memory store has no path a command could be given
            message += (f" (it was deleted: store.history({document_id!r}) lists its versions "
                        f"and store.version_text({document_id!r}, VERSION) returns one)")
        elif deleted:
            message += (f" (it was deleted: `enginelib history {shlex.quote(document_id)}` lists its "
                         "versions and `--text VERSION` prints one)")
        super().__init__(message)
        self.document_id = document_id

    def __str__(self) -> str:  # KeyError would otherwise quote the message again
        return str(self.args[0])


class VersionNotFoundError(DocumentNotFoundError):
    """The document is known (now, or in its history) but never had this version: the
    message was "no document with id 'd@1.0'", an id nobody gave, for a document that is
    there."""

    def __init__(self, document_id: str, version: str, versions: list[str], *,
                 in_memory: bool = False) -> None:
        super().__init__(document_id)
        known = ", ".join(versions) or "none"
        # an in-memory store has no path a command could be given
        lister = (f"store.history({document_id!r})" if in_memory
                  else f"`enginelib history {shlex.quote(document_id)}`")
        self.args = (f"document {document_id!r} has no version {version!r}; its versions are "
                     f"{known} ({lister} lists them)",)
        self.version = version


class JobNotFoundError(EngineError, KeyError):
    """No job with this id in the queue (a DONE job moved to the history is found, and is a
    JobStateError instead)."""

    def __init__(self, job_id: int, *, in_memory: bool = False) -> None:
        # an in-memory store has no path a command could be given
        lister = ("store.jobs().jobs() lists its jobs (status='DLQ' those in the DLQ)"
                  if in_memory else "`enginelib jobs` lists its jobs (`--status DLQ` those in "
                  "the DLQ)")
        super().__init__(f"no job with id {job_id} in this store's queue: {lister}")
        self.job_id = job_id

    def __str__(self) -> str:  # KeyError would otherwise quote the message again
        return str(self.args[0])


class JobStateError(EngineError):
    """A job exists but is not in the status an action on it needs: only a DLQ job is
    dropped, only a waiting one cancelled (one running would vanish under its worker)."""

    def __init__(self, message: str, *, job_id: int, status: str) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.status = status


class InvalidInputError(EngineError, ValueError):
    pass


class InvalidTruthLevelError(InvalidInputError):
    pass


class InvalidFilterError(InvalidInputError):
    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InvalidQueryError(InvalidInputError):
    pass


class InvalidVectorError(InvalidInputError):
    pass


class RewriterError(EngineError):
    """The ``rewriter`` search hook raised, or did not return a list of query strings."""


class RerankerError(EngineError):
    """The ``reranker`` search hook raised, or did not return one finite score per passage."""


class PayloadTooLargeError(InvalidInputError):
    pass


class LengthRequiredError(InvalidInputError):
    pass


class UnsafeBindError(InvalidInputError):
    pass


class UnknownEmbedderError(InvalidInputError):
    pass


class QueueFullError(EngineError):
    """`serve` already holds as many uploads waiting for the worker (or their bytes) as it
    takes: a flood of uploads filled the disk, and with it the store. Sent again once the
    worker has caught up, the upload is taken (HTTP 429)."""


class NestedWriteError(EngineError, RuntimeError):
    """A writer of a store (store_guard.WRITERS) entered by a thread that holds the store's
    call lock but not its write lock: inside another call on the store (a search's rewriter
    or reranker hook), or under ``store.catalog.calls``. Every other taker goes write lock
    first, so against a worker holding the write lock over a job, both waited for good."""


class EmbeddingError(EngineError):
    pass


class TokenizerError(EngineError):
    pass


class ExportError(EngineError):
    pass


class MissingExtraError(EngineError, ImportError):
    """A feature outside the base install was used without its extra: names the pip command."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the package {package}, which the base install leaves out: "
            f"pip install 'enginelib[{extra}]'"
        )
        self.feature = feature
        self.package = package
        self.extra = extra


class NoRelevantSourcesError(EngineError):
    """The answerability gate found no source to answer from; raised only by callers that
    asked for an exception instead of an empty result (e.g. a retriever's on_refusal="raise")."""

    def __init__(self, query: str, reason: str | None, *, reason_code: str | None = None,
                 response: Any = None) -> None:
        super().__init__(f"NO_RELEVANT_SOURCES for {query!r}: {reason or 'no reason given'}")
        self.query = query
        self.reason = reason
        # the gate's code (NO_MATCH: nothing matched at all; WEAK_EVIDENCE, ...: hits too
        # weak to answer from) and the refused SearchResponse, for callers that switch on it
        self.reason_code = reason_code
        self.response = response


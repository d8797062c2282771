"""The enginelib exception tree: every error a user can act on.

    EngineError
     +-- StoreError                    a store on disk cannot be used as asked
     |    +-- StoreNotFoundError         (also FileNotFoundError)
     |    +-- StoreLockedError           another writer holds the store
     |    +-- ReadOnlyStoreError         write attempted on a snapshot / read-only store
     |    +-- IncompatibleStoreError     model, dimension, chunking or schema changed: reindex
     |    +-- SnapshotError              unknown / duplicate / pinned snapshot
     |    +-- IntegrityError             catalog and indexes disagree (run `enginelib repair`)
     +-- IngestError                   a document could not be ingested  (.path)
     |    +-- LoaderError                unreadable, empty, binary, no text layer, bad JSONL line
     |    +-- UnsupportedFormatError     no loader for this file type
     +-- DocumentNotFoundError         (also KeyError)
     +-- InvalidInputError             (also ValueError) bad argument from the caller
     |    +-- InvalidTruthLevelError
     |    +-- InvalidFilterError         unknown field or wrong type  (.field)
     |    +-- InvalidQueryError          empty query, syntax error in the query language
     |    +-- InvalidVectorError         wrong dimension, NaN / inf
     |    +-- UnknownEmbedderError       no built-in embedder by that name
     +-- EmbeddingError                the embedding model could not be loaded or run
     +-- TokenizerError                the offline tokenizer is missing (never silently replaced)
     +-- ExportError                   the Postgres export failed (server message attached)

Dependency errors (duckdb, tantivy, hnswlib, psycopg) are mapped at the boundary with
``raise ... from exc`` so a user never has to read a traceback from inside them.
"""

from __future__ import annotations

from pathlib import Path


class EngineError(Exception):
    """Root of every error enginelib raises on purpose."""


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


class IntegrityError(StoreError):
    pass


class IngestError(EngineError):
    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None


class LoaderError(IngestError):
    pass


class UnsupportedFormatError(LoaderError):
    pass


class DocumentNotFoundError(EngineError, KeyError):
    def __init__(self, document_id: str) -> None:
        super().__init__(f"no document with id {document_id!r} in this store")
        self.document_id = document_id

    def __str__(self) -> str:  # KeyError would otherwise quote the message again
        return str(self.args[0])


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


class UnknownEmbedderError(InvalidInputError):
    pass


class EmbeddingError(EngineError):
    pass


class TokenizerError(EngineError):
    pass


class ExportError(EngineError):
    pass

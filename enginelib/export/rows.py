"""Read a store's catalog as rows in the Postgres column order (pg_schema's column specs).

All reads run in one DuckDB transaction, so documents, chunks and versions come from the
same catalog generation even if a writer commits meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog import first
from ..columns import matrix
from ..indexes.analyzers import MAX_TOKEN_CHARS, code_tokens, word_parts
from .pg_schema import ts_config

if TYPE_CHECKING:
    import duckdb

    from ..core.store_core import StoreCore as Store

Row = tuple[Any, ...]

# Catalog columns in pg_schema.DOCUMENT_COLUMNS order (custom is exported as metadata).
_DOCUMENT_SELECT = (
    "document_id, title, content, content_hash, fingerprint, source_type, source_path, "
    "source_url, source_id, truth_level, validated_by, validated_at, version, index_version, "
    "domain, entities, keywords, language, total_chunks, parent_document_id, author, "
    "created_at, updated_at, document_type, tags, file_path, file_extension, tenant_id, "
    "CAST(custom AS VARCHAR), CAST(pages AS VARCHAR), retrieval_count, last_retrieved_at, "
    "ingested_at, generation"
)
_CHUNK_SELECT = (
    "c.label, c.document_id, c.chunk_index, c.content, c.heading_path, c.start_offset, "
    "c.end_offset, c.token_count, c.page_start, c.page_end, c.content_hash, c.embedding, "
    "c.retrieval_count, c.last_retrieved_at, c.generation, d.title, d.truth_level, "
    "d.language, d.tenant_id"
)
# The page's scalars (the vectors come from _VECTOR_PAGE_SQL as numpy, not as float tuples).
_CHUNK_PAGE_SQL = (
    f"SELECT {_CHUNK_SELECT.replace('c.embedding', 'NULL AS embedding')} FROM chunks c JOIN documents d USING (document_id) "
    "WHERE c.label > ? ORDER BY c.label LIMIT ?"
)
_VECTOR_PAGE_SQL = "SELECT c.embedding FROM chunks c WHERE c.label > ? ORDER BY c.label LIMIT ?"
_VERSION_SELECT = (
    "document_id, version, index_version, title, content, content_hash, truth_level, "
    "total_chunks, CAST(custom AS VARCHAR), change_summary, valid_from, archived_at, generation"
)
_SOURCE_SELECT = (
    "source_id, name, tier, evidence_level, authority_score, institution, "
    "coalesce(peer_reviewed, false), created_at"
)


@dataclass(frozen=True)
class StoreMeta:
    path: str
    embedding_model: str
    embedding_dim: int
    generation: int
    index_version: str
    documents: int
    chunks: int
    versions: int
    sources: int


class CatalogReader:
    """Row iterators over one consistent view of the catalog (see ``read_store``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, meta: StoreMeta) -> None:
        self._con = con
        self.meta = meta

    def documents(self) -> Iterator[Row]:
        yield from self._rows(f"SELECT {_DOCUMENT_SELECT} FROM documents ORDER BY document_id")

    def versions(self) -> Iterator[Row]:
        yield from self._rows(
            f"SELECT {_VERSION_SELECT} FROM document_versions ORDER BY document_id, version"
        )

    def sources(self) -> Iterator[Row]:
        yield from self._rows(f"SELECT {_SOURCE_SELECT} FROM sources ORDER BY source_id")

    def chunks(self, batch_size: int = 4096) -> Iterator[Row]:
        """Chunk rows with the embedding as a float32 array, then the row's ts_config,
        text_length and codes (pg_schema's chunk column order)."""
        dim = self.meta.embedding_dim
        names = [name.strip().split(".")[-1] for name in _CHUNK_SELECT.split(",")]
        at_embedding, at_language = names.index("embedding"), names.index("language")
        at_title, at_heading, at_content = (names.index(n) for n in ("title", "heading_path", "content"))
        after = -1  # keyset paging by label (labels are >= 0); one transaction keeps it consistent
        while True:
            # Scalars as Python values (what psycopg adapts); vectors through numpy in one piece.
            rows = self._con.execute(_CHUNK_PAGE_SQL, [after, batch_size]).fetchall()
            if not rows:
                return
            found = self._con.execute(_VECTOR_PAGE_SQL, [after, batch_size]).fetchnumpy()
            vectors = matrix(found["embedding"], dim)
            for i, row in enumerate(rows):
                out = list(row)
                out[at_embedding] = vectors[i]
                parts = (out[at_title], out[at_heading], out[at_content])
                yield (*out, ts_config(out[at_language]), text_length(*parts), codes(*parts))
            after = int(rows[-1][0])

    def _rows(self, query: str) -> Iterator[Row]:
        cursor = self._con.execute(query)
        while True:
            rows = cursor.fetchmany(1024)
            if not rows:
                return
            yield from rows


@contextmanager
def read_store(store: Store) -> Iterator[CatalogReader]:
    """A reader over the store's catalog inside one read transaction; releases the file after."""
    catalog = store.catalog
    con = catalog.con
    con.execute("BEGIN TRANSACTION")
    try:
        yield CatalogReader(con, _meta(store, con))
    finally:
        try:
            con.execute("ROLLBACK")  # read-only work: nothing to commit
        finally:
            catalog.release()


def _meta(store: Store, con: duckdb.DuckDBPyConnection) -> StoreMeta:
    def count(table: str) -> int:
        # Table names are our own constants.
        row = first(con.execute(f"SELECT count(*) FROM {table}").fetchall())
        return int(row[0]) if row else 0

    def meta(key: str) -> str:
        row = first(con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall())
        return str(row[0]) if row else ""

    return StoreMeta(
        path=str(store.path),
        embedding_model=store.manifest.embedding_model,
        embedding_dim=int(store.manifest.embedding_dim),
        generation=int(meta("generation") or 0),
        index_version=meta("index_version"),
        documents=count("documents"),
        chunks=count("chunks"),
        versions=count("document_versions"),
        sources=count("sources"),
    )


def text_length(*parts: str | None) -> int:
    """Words in a chunk's text as the engine's BM25 counts them (its field length):
    tantivy's simple tokenizer pieces, without those its length filter drops."""
    text = "\n".join(p for p in parts if p)
    return sum(1 for w in word_parts(text) if len(w.encode("utf-8")) < MAX_TOKEN_CHARS)


def codes(*parts: str | None) -> list[str]:
    """The chunk's exact-match code tokens as the engine's codes field holds them."""
    text = " ".join(p for p in parts if p)
    return [t for t in (c.lower() for c in code_tokens(text)) if len(t.encode("utf-8")) < MAX_TOKEN_CHARS]

"""Catalog statements of maintenance: the consistency checks ``check`` runs, and the staging
tables and the one swap transaction of a ``reindex``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import columns as cols
from .catalog import Catalog, first
from .schema import create_schema

_ORPHANS_SQL = """
SELECT DISTINCT c.document_id FROM chunks c
LEFT JOIN documents d ON d.document_id = c.document_id WHERE d.document_id IS NULL LIMIT ?
"""
_COUNTS_SQL = """
SELECT d.document_id FROM documents d
LEFT JOIN (SELECT document_id, count(*) AS n FROM chunks GROUP BY 1) c USING (document_id)
WHERE coalesce(c.n, 0) <> d.total_chunks ORDER BY 1 LIMIT ?
"""
# DuckDB's substring counts code points from 1, like Python's str slicing from 0.
_OFFSETS_SQL = """
SELECT c.document_id || '#' || c.chunk_index FROM chunks c JOIN documents d USING (document_id)
WHERE substring(d.content, c.start_offset + 1, c.end_offset - c.start_offset) <> c.content
ORDER BY 1 LIMIT ?
"""
_CHECKS = {"orphans": _ORPHANS_SQL, "counts": _COUNTS_SQL, "offsets": _OFFSETS_SQL}
# Vectors an unfinished reindex staged, kept for the next one (create_staging).
SALVAGE_TABLE = "reindex_salvage"
_EMBEDDING_TYPE_SQL = (
    "SELECT data_type FROM information_schema.columns "
    "WHERE table_name = 'chunks' AND column_name = 'embedding'"
)


def catalog_sample(catalog: Catalog, check: str, sample: int) -> list[Any]:
    """Up to ``sample`` ids failing one consistency check (orphans, counts, offsets)."""
    return [r[0] for r in catalog.con.execute(_CHECKS[check], [sample]).fetchall()]


def embedding_column_type(catalog: Catalog) -> str | None:
    """The chunks.embedding column's type (``FLOAT[384]``), None when there is none."""
    row = first(catalog.con.execute(_EMBEDDING_TYPE_SQL).fetchall())
    return str(row[0]) if row else None


# -- reindex --------------------------------------------------------------------------------


def _staging_ddl(dim: int) -> list[str]:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise ValueError(f"embedding dimension must be a positive int, got {dim!r}")
    # dim is a validated int: the only value that cannot be a parameter in DDL.
    return [
        "DROP TABLE IF EXISTS reindex_chunks",
        "DROP TABLE IF EXISTS reindex_documents",
        f"""CREATE TABLE reindex_chunks (
            document_id VARCHAR, chunk_index INTEGER, content VARCHAR, heading_path VARCHAR,
            start_offset INTEGER, end_offset INTEGER, token_count INTEGER, page_start INTEGER,
            page_end INTEGER, content_hash VARCHAR, cache_key VARCHAR, embedding FLOAT[{dim}])""",
        "CREATE TABLE reindex_documents (document_id VARCHAR, total_chunks INTEGER, keywords VARCHAR[])",
    ]


_SWAP_CHUNKS_SQL = """
INSERT INTO chunks (label, document_id, chunk_index, content, heading_path, start_offset,
    end_offset, token_count, page_start, page_end, content_hash, embedding, retrieval_count,
    generation)
SELECT ? + row_number() OVER (ORDER BY document_id, chunk_index) - 1, document_id, chunk_index,
       content, heading_path, start_offset, end_offset, token_count, page_start, page_end,
       content_hash, embedding, 0, ?
FROM reindex_chunks
"""
_UPDATE_DOCUMENTS_SQL = """
UPDATE documents SET total_chunks = r.total_chunks, keywords = r.keywords, generation = ?,
    index_version = ?
FROM reindex_documents r WHERE documents.document_id = r.document_id
"""


def create_staging(catalog: Catalog, dim: int) -> None:
    """Empty staging tables for a reindex to ``dim`` dims. Vectors a reindex that did not
    finish (killed, out of disk, a failing model) had staged are kept aside first, for this
    one to find by cache key: with a slow model a restarted reindex embedded everything
    again (an hour of e5-small on two cores for 10k chunks)."""
    con = catalog.con
    _staging_ddl(dim)  # checks dim before it goes into a statement
    salvage = f"FLOAT[{dim}]"
    if _column_type(catalog, SALVAGE_TABLE) not in (None, salvage):
        con.execute(f"DROP TABLE {SALVAGE_TABLE}")  # vectors of another dimension: no use
    con.execute(f"CREATE TABLE IF NOT EXISTS {SALVAGE_TABLE} "
                f"(cache_key VARCHAR PRIMARY KEY, embedding {salvage})")
    if _column_type(catalog, "reindex_chunks") == salvage:
        # Idempotent: a kill before the DROP below salvages the same rows again next time.
        con.execute(f"INSERT INTO {SALVAGE_TABLE} SELECT DISTINCT ON (cache_key) cache_key, "
                    "embedding FROM reindex_chunks ON CONFLICT DO NOTHING")
    for statement in _staging_ddl(dim):
        con.execute(statement)


def salvaged_embeddings(catalog: Catalog, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """The vectors of ``keys`` an unfinished reindex had staged (see ``create_staging``)."""
    if not keys:
        return {}
    result = catalog.con.execute(
        f"SELECT cache_key, embedding FROM {SALVAGE_TABLE} "
        "WHERE cache_key IN (SELECT unnest(?::VARCHAR[]))", [list(keys)]).fetchnumpy()
    return {k: np.asarray(v, dtype=np.float32)
            for k, v in zip(result["cache_key"], result["embedding"], strict=True)}


def _column_type(catalog: Catalog, table: str) -> str | None:
    row = first(catalog.con.execute(
        "SELECT data_type FROM information_schema.columns "
        "WHERE table_name = ? AND column_name = 'embedding'", [table]).fetchall())
    return str(row[0]) if row else None


def document_ids(catalog: Catalog) -> list[str]:
    return [r[0] for r in catalog.con.execute(
        "SELECT document_id FROM documents ORDER BY 1").fetchall()]


def documents_to_rechunk(catalog: Catalog, ids: Sequence[str]) -> list[tuple[Any, ...]]:
    """(document_id, title or '', content, pages JSON) of ``ids``, by id."""
    return catalog.con.execute(
        "SELECT document_id, coalesce(title, ''), content, pages FROM documents "
        "WHERE document_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY 1",
        [list(ids)],
    ).fetchall()


def stage(catalog: Catalog, chunks: Mapping[str, np.ndarray], documents: Mapping[str, np.ndarray]) -> None:
    """Append one batch of re-chunked rows to the staging tables."""
    con = catalog.con
    for name, data in (("reindex_chunks", chunks), ("reindex_documents", documents)):
        with cols.registered(con, "_staged", data):
            con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM _staged")


def swap_in_staged(
    catalog: Catalog, dim: int, generation: int, index_version: str, reuse_cache: bool,
    acronyms: Sequence[tuple[str, str, str]],
) -> int:
    """Inside the reindex's transaction: replace every chunk with the staged ones (new
    labels), keep the embedding cache when the dimension is unchanged, update the documents
    and acronyms, drop the staging tables. Returns the new chunk count."""
    con = catalog.con
    con.execute("INSERT INTO label_tombstones SELECT label, ? FROM chunks", [generation])
    con.execute("DROP TABLE chunks")
    if not reuse_cache:
        con.execute("DROP TABLE embedding_cache")
    create_schema(con, dim)  # recreates the dropped tables, with the new dimension
    next_label = int(catalog.get_meta("next_label") or 0)
    con.execute(_SWAP_CHUNKS_SQL, [next_label, generation])
    count = catalog.chunk_count()
    catalog.set_meta("next_label", str(next_label + count))
    con.execute("INSERT INTO embedding_cache SELECT DISTINCT ON (cache_key) cache_key, "
                "embedding FROM reindex_chunks ON CONFLICT DO NOTHING")
    con.execute(_UPDATE_DOCUMENTS_SQL, [generation, index_version])
    con.execute("DELETE FROM acronyms")
    catalog.insert_acronyms(acronyms)
    con.execute("DROP TABLE reindex_chunks")
    con.execute("DROP TABLE reindex_documents")
    con.execute(f"DROP TABLE IF EXISTS {SALVAGE_TABLE}")
    return count

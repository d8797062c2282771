"""The catalog reads of an export: one read transaction, rows in the Postgres column order.

The exporter (``export/rows.py``) shapes these rows for Postgres; the SQL that reads the
DuckDB catalog lives here, in the catalog layer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from .catalog import Catalog, first
from .columns import matrix

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
    "v.document_id, v.version, v.index_version, v.title, v.content, v.content_hash, "
    "v.truth_level, v.total_chunks, CAST(v.custom AS VARCHAR), v.change_summary, v.valid_from, "
    "v.archived_at, v.generation, {tenant}"
)
_SOURCE_SELECT = (
    "source_id, name, tier, evidence_level, authority_score, institution, "
    "coalesce(peer_reviewed, false), created_at"
)
CHUNK_COLUMNS = [name.strip().split(".")[-1] for name in _CHUNK_SELECT.split(",")]
# Table names the export counts (our own constants, never user input).
_COUNTED = ("documents", "chunks", "document_versions", "sources")


@contextmanager
def read_transaction(catalog: Catalog) -> Iterator[duckdb.DuckDBPyConnection]:
    """One read transaction (one catalog generation, whatever a writer commits meanwhile);
    releases the file after."""
    con = catalog.con
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    finally:
        try:
            con.execute("ROLLBACK")  # read-only work: nothing to commit
        finally:
            catalog.release()


def counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    out = {}
    for table in _COUNTED:
        row = first(con.execute(f"SELECT count(*) FROM {table}").fetchall())
        out[table] = int(row[0]) if row else 0
    return out


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str:
    row = first(con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall())
    return str(row[0]) if row else ""


def documents(con: duckdb.DuckDBPyConnection) -> Iterator[Row]:
    yield from _rows(con, f"SELECT {_DOCUMENT_SELECT} FROM documents ORDER BY document_id")


def source_folders(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The distinct folders of the documents' absolute source and file paths."""
    rows = con.execute(
        "SELECT DISTINCT regexp_replace(p, '/[^/]*$', '') FROM ("
        "SELECT source_path AS p FROM documents UNION ALL SELECT file_path FROM documents"
        ") WHERE starts_with(p, '/')"
    ).fetchall()
    return [str(r[0]) or "/" for r in rows]


def versions(con: duckdb.DuckDBPyConnection) -> Iterator[Row]:
    recorded = first(con.execute(
        "SELECT count(*) FROM information_schema.columns "
        "WHERE table_name = 'document_versions' AND column_name = 'tenant_id'").fetchall())
    # A catalog older than the column (read without a writer's open, which adds it): the
    # tenant its document has now, as the writer's open would fill it in.
    select = (_VERSION_SELECT.format(tenant="v.tenant_id") + " FROM document_versions v"
              if recorded and recorded[0] else
              _VERSION_SELECT.format(tenant="d.tenant_id") + " FROM document_versions v "
              "LEFT JOIN documents d ON d.document_id = v.document_id")
    yield from _rows(con, f"SELECT {select} ORDER BY v.document_id, v.version")


def sources(con: duckdb.DuckDBPyConnection) -> Iterator[Row]:
    yield from _rows(con, f"SELECT {_SOURCE_SELECT} FROM sources ORDER BY source_id")


def chunk_pages(
    con: duckdb.DuckDBPyConnection, dim: int, batch_size: int
) -> Iterator[tuple[list[Row], np.ndarray]]:
    """Pages of chunk rows (CHUNK_COLUMNS order, the embedding column left None) with their
    vectors as one float32 matrix, by label."""
    after = -1  # keyset paging by label (labels are >= 0); one transaction keeps it consistent
    while True:
        # Scalars as Python values (what psycopg adapts); vectors through numpy in one piece.
        rows = con.execute(_CHUNK_PAGE_SQL, [after, batch_size]).fetchall()
        if not rows:
            return
        found = con.execute(_VECTOR_PAGE_SQL, [after, batch_size]).fetchnumpy()
        yield rows, matrix(found["embedding"], dim)
        after = int(rows[-1][0])


def sample_contents(catalog: Catalog, limit: int) -> list[str]:
    """Texts of chunks spread over the store (every 7th label by hash, then the others: a
    store of a few chunks may have none of the first kind)."""
    con = catalog.con
    try:
        rows = con.execute(
            "SELECT content FROM chunks ORDER BY hash(label) % 7 <> 0, label LIMIT ?", [limit]
        ).fetchall()
    finally:
        catalog.release()
    return [str(r[0]) for r in rows]


def _rows(con: duckdb.DuckDBPyConnection, query: str) -> Iterator[Row]:
    cursor = con.execute(query)
    while True:
        rows = cursor.fetchmany(1024)
        if not rows:
            return
        yield from rows


def labels_matching(catalog: Catalog, where: str, params: tuple[Any, ...]) -> set[int]:
    """Labels of the chunks a compiled filter (``filters.compile_filters``: ``d.<column>``
    references, values as parameters) lets through; every chunk when ``where`` is empty."""
    clause = f"WHERE {where}" if where else ""
    con = catalog.con
    try:
        rows = con.execute(
            f"SELECT c.label FROM chunks c JOIN documents d ON d.document_id = c.document_id {clause}",
            list(params),
        ).fetchall()
    finally:
        catalog.release()
    return {int(r[0]) for r in rows}


@dataclass(frozen=True)
class ProbeValues:
    """Values the store really holds, to build filters a parity check can compare."""

    common: dict[str, list[Any]]  # column -> its two most common values
    tags: list[Any]
    dates: tuple[Any, ...] | None  # created_at median, updated_at quartiles
    custom: list[tuple[str, Any]]  # (metadata key, a common scalar value)


def filter_probe_values(catalog: Catalog, columns: tuple[str, ...]) -> ProbeValues:
    """``columns`` are the exporter's own constants (document columns), never user input."""
    con = catalog.con
    try:
        def common(expression: str) -> list[Any]:
            rows = con.execute(
                f"SELECT v FROM (SELECT {expression} AS v FROM documents) WHERE v IS NOT NULL "
                "GROUP BY v ORDER BY count(*) DESC, v LIMIT 2"
            ).fetchall()
            return [r[0] for r in rows]

        held = {name: common(name) for name in columns}
        tags = common("unnest(tags)")
        dates = con.execute(
            "SELECT quantile_disc(created_at, 0.5), quantile_disc(updated_at, 0.25), "
            "quantile_disc(updated_at, 0.75) FROM documents"
        ).fetchone()
        keys = con.execute(
            "SELECT k, json_extract_string(custom, '$.\"' || k || '\"') AS v, count(*) AS n "
            "FROM (SELECT custom, unnest(json_keys(custom)) AS k FROM documents WHERE custom IS NOT NULL) "
            "WHERE json_type(custom, '$.\"' || k || '\"') NOT IN ('OBJECT', 'ARRAY') "
            "GROUP BY k, v ORDER BY n DESC, k, v LIMIT 3"
        ).fetchall()
    finally:
        catalog.release()
    return ProbeValues(held, tags, tuple(dates) if dates else None, [(k, v) for k, v, _ in keys])

"""Catalog statements about documents as a whole: listing, metadata edits, sources and
their authority, and the counts ``stats`` and ``check`` report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .catalog import Catalog, first

# Per document with its source's authority; word count from the stored text.
LIST_SQL = """
SELECT d.document_id, d.title, d.truth_level, d.version, d.total_chunks, d.domain,
       d.source_type, d.source_path, d.source_url, d.source_id, d.tags, d.ingested_at,
       d.updated_at, len(regexp_split_to_array(trim(d.content), '\\s+')) AS word_count,
       s.tier, s.evidence_level, s.authority_score, s.institution
FROM documents d LEFT JOIN sources s ON s.source_id = d.source_id
WHERE (?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], d.truth_level))
  AND (? IS NULL OR d.domain = ?)
  AND (? IS NULL OR d.source_type = ?)
  AND (? IS NULL OR list_contains(d.tags, ?))
  AND (? IS NULL OR d.document_id LIKE ? ESCAPE '\\')
ORDER BY d.document_id
LIMIT ? OFFSET ?
"""

UPDATE_SQL = (
    "UPDATE documents SET truth_level = ?, tags = ?, custom = ?, version = ?, updated_at = ?, "
    "generation = ? WHERE document_id = ?"
)


AUTHORITY_SQL = """
SELECT d.document_id, d.truth_level, d.source_id, s.tier, s.evidence_level, s.authority_score
FROM documents d LEFT JOIN sources s ON s.source_id = d.source_id
WHERE d.document_id IN (SELECT unnest(?::VARCHAR[]))
"""


# created_at is given (naive UTC), never the column's default: that was DuckDB's
# current_timestamp, the server's local time on any server not set to UTC.
SOURCE_COLUMNS = ("name", "tier", "evidence_level", "authority_score", "institution", "peer_reviewed")
_INSERT_SOURCE_SQL = (
    "INSERT INTO sources (source_id, name, tier, evidence_level, authority_score, "
    "institution, peer_reviewed, created_at) VALUES (?, ?, ?, ?, ?, ?, coalesce(?, FALSE), ?) "
    "ON CONFLICT (source_id) DO "
)
_DOCUMENT_COUNT_SQL = "SELECT count(*) FROM documents"
_CHUNK_TOTALS_SQL = "SELECT count(*), coalesce(sum(token_count), 0) FROM chunks"
_VERSION_COUNT_SQL = "SELECT count(*) FROM document_versions"
_BY_LEVEL_SQL = "SELECT truth_level, count(*) FROM documents GROUP BY 1 ORDER BY 1"
_QUERY_COUNT_SQL = "SELECT count(*) FROM query_log"


def document_rows(catalog: Catalog, params: Sequence[Any]) -> list[dict[str, Any]]:
    """``LIST_SQL``'s rows as dicts (its parameters in order)."""
    cursor = catalog.con.execute(LIST_SQL, list(params))
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def update_document_row(catalog: Catalog, params: Sequence[Any]) -> None:
    """``UPDATE_SQL`` (inside the caller's transaction)."""
    catalog.con.execute(UPDATE_SQL, list(params))


def authority_rows(catalog: Catalog, document_ids: Sequence[str]) -> list[tuple[Any, ...]]:
    return catalog.con.execute(AUTHORITY_SQL, [list(document_ids)]).fetchall()


def upsert_source_sql(given: Sequence[str]) -> str:
    """The upsert that sets, on a source already there, only the ``given`` columns: setting
    all of them reset each one not passed to NULL (or false), so updating a source's
    institution erased the tier and score its ranking boosts read."""
    unknown = set(given) - set(SOURCE_COLUMNS)
    if unknown:  # column names go into the statement: only ours
        raise ValueError(f"not source columns: {sorted(unknown)}")
    if not given:
        return _INSERT_SOURCE_SQL + "NOTHING"
    updates = ", ".join(f"{column} = excluded.{column}" for column in SOURCE_COLUMNS if column in given)
    return _INSERT_SOURCE_SQL + "UPDATE SET " + updates


def upsert_source_row(catalog: Catalog, source_id: str, fields: dict[str, Any], created_at: Any) -> None:
    """Insert or update one source (inside the caller's transaction). A new source takes
    ``fields`` and the defaults (NULL, ``peer_reviewed`` false) for the rest; an existing one
    changes only the fields named (a field given as None is cleared) and keeps its
    ``created_at``."""
    values = [source_id] + [fields.get(column) for column in SOURCE_COLUMNS] + [created_at]
    catalog.con.execute(upsert_source_sql(list(fields)), values)


def document_count(catalog: Catalog) -> int:
    return int(first(catalog.con.execute(_DOCUMENT_COUNT_SQL).fetchall())[0])


def store_counts(catalog: Catalog) -> dict[str, Any]:
    """The catalog's share of ``Store.stats()``: documents, chunks, tokens, versions, queries."""
    con = catalog.con
    docs = first(con.execute(_DOCUMENT_COUNT_SQL).fetchall())
    chunks = first(con.execute(_CHUNK_TOTALS_SQL).fetchall())
    versions = first(con.execute(_VERSION_COUNT_SQL).fetchall())
    by_level = dict(con.execute(_BY_LEVEL_SQL).fetchall())
    queries = first(con.execute(_QUERY_COUNT_SQL).fetchall())
    return {
        "documents": int(docs[0]) if docs else 0,
        "chunks": int(chunks[0]) if chunks else 0,
        "tokens": int(chunks[1]) if chunks else 0,
        "archived_versions": int(versions[0]) if versions else 0,
        "documents_by_truth_level": by_level,
        "queries_logged": int(queries[0]) if queries else 0,
    }


_SOURCE_PATHS_SQL = (
    "SELECT document_id, source_path FROM documents WHERE source_path IS NOT NULL "
    "ORDER BY document_id"
)


def source_paths(catalog: Catalog) -> list[tuple[str, str]]:
    """(document id, recorded source path) of every document that came from a file."""
    return [(str(i), str(p)) for i, p in catalog.con.execute(_SOURCE_PATHS_SQL).fetchall()]

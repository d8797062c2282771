"""Catalog statements of snapshots: tables out to Parquet, back into a catalog, the
documents a diff compares, and the one transaction a restore runs (its steps in order)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from .catalog import Catalog, first

# `update` changes truth level, tags and custom metadata without touching the fingerprint.
_DIFF_COLUMNS = ("document_id, content_hash, version, total_chunks, fingerprint, truth_level, "
                 "tags, custom::VARCHAR")


def _parquet(tables: Path, table: str) -> str:
    return str(tables / f"{table}.parquet")


def export_tables(catalog: Catalog, tables: Sequence[str], folder: Path) -> tuple[int, int]:
    """Write each table to ``folder/<table>.parquet``; returns (documents, chunks) counted in
    the same connection, so they match the files."""
    con = catalog.con
    for table in tables:
        # Table names are our own constants; the file path is a parameter.
        con.execute(f"COPY (SELECT * FROM {table}) TO ? (FORMAT parquet)",
                    [_parquet(folder, table)])
    documents = first(con.execute("SELECT count(*) FROM documents").fetchall())[0]
    chunks = first(con.execute("SELECT count(*) FROM chunks").fetchall())[0]
    return int(documents), int(chunks)


def replace_table(catalog: Catalog, table: str, path: Path) -> None:
    """Replace a table's rows with a Parquet file's (inside the caller's transaction)."""
    con = catalog.con
    # Replace the defaults the empty schema was created with (meta, presets).
    con.execute(f"DELETE FROM {table}")
    con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet(?)", [str(path)])


def unreadable_parquet(catalog: Catalog, path: Path) -> bool:
    """Whether ``path`` fails to open as Parquet (cut short, overwritten, a folder)."""
    try:
        catalog.con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchall()
    except duckdb.Error:
        return True
    return False


def diff_rows_of_file(catalog: Catalog, documents: Path) -> list[tuple[Any, ...]]:
    """(document_id, content_hash, version, total_chunks, *metadata) of a snapshot."""
    return catalog.con.execute(f"SELECT {_DIFF_COLUMNS} FROM read_parquet(?)",
                               [str(documents)]).fetchall()


def diff_rows(catalog: Catalog) -> list[tuple[Any, ...]]:
    """The same columns for the live documents."""
    return catalog.con.execute(f"SELECT {_DIFF_COLUMNS} FROM documents").fetchall()


# -- restore (each step inside the restore's one transaction) ---------------------------------

# A live document equal to the snapshot's in all a restore would write (text, ingest
# fingerprint, and what `update` changes: truth level, tags, metadata) stays as it is, version
# included: restoring the same snapshot twice must not renumber and archive it each time.
_SAME = """(s.content_hash = d.content_hash AND s.fingerprint = d.fingerprint
    AND s.truth_level = d.truth_level AND s.tags IS NOT DISTINCT FROM d.tags
    AND s.custom::VARCHAR IS NOT DISTINCT FROM d.custom::VARCHAR)"""

# Live documents that the restore removes or replaces are archived first, exactly like an
# ingest that changes them would (same columns as Catalog.archive_document). Every other one
# is replaced by the snapshot's row under a new number, so unarchived it would vanish (an
# update's 1.0.1, a delete and re-ingest's 1.1.0).
_ARCHIVE_SQL = f"""
INSERT INTO document_versions (document_id, version, index_version, title, content,
    content_hash, truth_level, total_chunks, custom, change_summary, valid_from, archived_at,
    generation, tenant_id)
SELECT d.document_id, d.version, d.index_version, d.title, d.content, d.content_hash,
       d.truth_level, d.total_chunks, d.custom,
       CASE WHEN s.document_id IS NULL THEN ? ELSE ? END, d.updated_at, ?, ?, d.tenant_id
FROM documents d LEFT JOIN read_parquet(?) s ON s.document_id = d.document_id
WHERE s.document_id IS NULL OR NOT {_SAME}
ON CONFLICT DO NOTHING
"""

_KEPT_SQL = f"""
CREATE OR REPLACE TEMP TABLE _restore_kept AS
SELECT d.document_id FROM documents d JOIN read_parquet(?) s ON s.document_id = d.document_id
WHERE {_SAME}
"""

_KNOWN_VERSIONS_SQL = """
SELECT document_id, version FROM documents
UNION ALL SELECT document_id, version FROM document_versions
"""

_INSERT_DOCUMENTS_SQL = """
INSERT INTO documents BY NAME
SELECT s.* REPLACE (
    v.version AS version,
    CASE WHEN v.bumped THEN ? ELSE s.index_version END AS index_version,
    CASE WHEN v.bumped THEN ? ELSE s.updated_at END AS updated_at,
    ? AS generation)
FROM read_parquet(?) s JOIN _restore_versions v ON v.document_id = s.document_id
WHERE s.document_id NOT IN (SELECT document_id FROM _restore_kept)
"""


def archive_replaced(catalog: Catalog, tables: Path, name: str, now: Any, generation: int) -> int:
    """Archive the live documents the restore removes or replaces, then take in the
    snapshot's own history; returns how many live versions were archived."""
    con = catalog.con
    archived = first(con.execute(_ARCHIVE_SQL, [
        f"deleted by restore of snapshot {name}", f"replaced by restore of snapshot {name}",
        now, generation, _parquet(tables, "documents"),
    ]).fetchall())
    # The snapshot's own history is a subset of the live one unless the folder came
    # from elsewhere; either way nothing archived is ever lost.
    con.execute("INSERT INTO document_versions BY NAME SELECT * FROM read_parquet(?) "
                "ON CONFLICT DO NOTHING", [_parquet(tables, "document_versions")])
    return int(archived[0] if archived else 0)


def snapshot_and_known_versions(
    catalog: Catalog, tables: Path
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(document_id, version) of the snapshot's documents, and of every version the live
    catalog ever had (current and archived)."""
    con = catalog.con
    snapshot = con.execute("SELECT document_id, version FROM read_parquet(?)",
                           [_parquet(tables, "documents")]).fetchall()
    return snapshot, con.execute(_KNOWN_VERSIONS_SQL).fetchall()


def replace_documents_and_chunks(
    catalog: Catalog, tables: Path, versions: Mapping[str, np.ndarray], index_version: str, now: Any,
    generation: int,
) -> None:
    con = catalog.con
    # Every live chunk goes: tombstones let an index that lags replay the deletions.
    con.execute("INSERT INTO label_tombstones SELECT label, ? FROM chunks", [generation])
    con.execute("DELETE FROM chunks")
    con.execute(_KEPT_SQL, [_parquet(tables, "documents")])
    con.execute("DELETE FROM documents WHERE document_id NOT IN "
                "(SELECT document_id FROM _restore_kept)")
    con.execute("UPDATE documents SET generation = ?", [generation])
    con.register("_restore_versions", versions)
    try:
        con.execute(_INSERT_DOCUMENTS_SQL,
                    [index_version, now, generation, _parquet(tables, "documents")])
    finally:
        con.unregister("_restore_versions")
        con.execute("DROP TABLE IF EXISTS _restore_kept")
    con.execute("INSERT INTO chunks BY NAME SELECT * REPLACE (? AS generation) "
                "FROM read_parquet(?)", [generation, _parquet(tables, "chunks")])


def restore_acronyms_labels_sources(catalog: Catalog, tables: Path) -> tuple[int, int]:
    """The last steps; returns the restored (documents, chunks) counts."""
    con = catalog.con
    # The acronyms learned from the restored documents (none in an older snapshot).
    con.execute("DELETE FROM acronyms")
    if (tables / "acronyms.parquet").exists():
        con.execute("INSERT INTO acronyms BY NAME SELECT * FROM read_parquet(?)",
                    [_parquet(tables, "acronyms")])
    # Labels are never reused: keep the allocator past every label ever handed out.
    top = first(con.execute("SELECT coalesce(max(label) + 1, 0) FROM chunks").fetchall())[0]
    catalog.set_meta("next_label", str(max(int(catalog.get_meta("next_label") or 0), int(top))))
    con.execute("INSERT OR REPLACE INTO sources BY NAME SELECT * FROM read_parquet(?)",
                [_parquet(tables, "sources")])
    counts = first(con.execute(
        "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
    ).fetchall())
    return int(counts[0]), int(counts[1])

"""Restore: make the live catalog equal to a snapshot in one transaction, then rebuild indexes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import columns as cols
from . import faults
from .catalog import first, utcnow
from .manifest import next_index_version
from .snapshots import TABLES_DIR, RestoreReport

if TYPE_CHECKING:
    from .store import Store

# Live documents that the restore removes or whose text it replaces are archived first,
# exactly like an ingest that changes them would (same columns as Catalog.archive_document).
_ARCHIVE_SQL = """
INSERT INTO document_versions (document_id, version, index_version, title, content,
    content_hash, truth_level, total_chunks, custom, change_summary, valid_from, archived_at,
    generation)
SELECT d.document_id, d.version, d.index_version, d.title, d.content, d.content_hash,
       d.truth_level, d.total_chunks, d.custom,
       CASE WHEN s.document_id IS NULL THEN ? ELSE ? END, d.updated_at, ?, ?
FROM documents d LEFT JOIN read_parquet(?) s ON s.document_id = d.document_id
WHERE s.document_id IS NULL OR s.content_hash <> d.content_hash
ON CONFLICT DO NOTHING
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
"""


def restore_into(store: Store, folder: Path, name: str) -> RestoreReport:
    """Replace the live documents and chunks with the snapshot's (caller checked compatibility)."""
    catalog = store.catalog
    con = catalog.con
    tables = folder / TABLES_DIR
    docs, chunks = str(tables / "documents.parquet"), str(tables / "chunks.parquet")
    with catalog.transaction():
        generation = catalog.bump_generation()
        index_version = next_index_version(catalog.get_meta("index_version"))
        catalog.set_meta("index_version", index_version)
        now = utcnow()
        archived = first(con.execute(_ARCHIVE_SQL, [
            f"deleted by restore of snapshot {name}", f"replaced by restore of snapshot {name}",
            now, generation, docs,
        ]).fetchall())
        # The snapshot's own history is a subset of the live one unless the folder came
        # from elsewhere; either way nothing archived is ever lost.
        con.execute("INSERT INTO document_versions BY NAME SELECT * FROM read_parquet(?) "
                    "ON CONFLICT DO NOTHING", [str(tables / "document_versions.parquet")])
        versions = _restored_versions(
            con.execute("SELECT document_id, version FROM read_parquet(?)", [docs]).fetchall(),
            con.execute(_KNOWN_VERSIONS_SQL).fetchall(),
        )
        # Every live chunk goes: tombstones let an index that lags replay the deletions.
        con.execute("INSERT INTO label_tombstones SELECT label, ? FROM chunks", [generation])
        con.execute("DELETE FROM chunks")
        con.execute("DELETE FROM documents")
        con.register("_restore_versions", versions)
        try:
            con.execute(_INSERT_DOCUMENTS_SQL, [index_version, now, generation, docs])
        finally:
            con.unregister("_restore_versions")
        con.execute("INSERT INTO chunks BY NAME SELECT * REPLACE (? AS generation) "
                    "FROM read_parquet(?)", [generation, chunks])
        # The acronyms learned from the restored documents (none in an older snapshot).
        con.execute("DELETE FROM acronyms")
        if (tables / "acronyms.parquet").exists():
            con.execute("INSERT INTO acronyms BY NAME SELECT * FROM read_parquet(?)",
                        [str(tables / "acronyms.parquet")])
        # Labels are never reused: keep the allocator past every label ever handed out.
        top = first(con.execute("SELECT coalesce(max(label) + 1, 0) FROM chunks").fetchall())[0]
        catalog.set_meta("next_label", str(max(int(catalog.get_meta("next_label") or 0), int(top))))
        con.execute("INSERT OR REPLACE INTO sources BY NAME SELECT * FROM read_parquet(?)",
                    [str(tables / "sources.parquet")])
        counts = first(con.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
        ).fetchall())
        faults.crash_point("restore_before_catalog_commit")
    faults.crash_point("restore_after_catalog_commit")
    store.committed()
    store.rebuild_indexes()
    return RestoreReport(
        name=name, generation=generation, index_version=index_version,
        documents=int(counts[0]), chunks=int(counts[1]), archived=int(archived[0] if archived else 0),
    )


def _semver(version: str) -> tuple[int, int, int]:
    try:
        major, minor, patch = (int(x) for x in version.split("."))
    except ValueError:
        return (0, 0, 0)
    return (major, minor, patch)


def _restored_versions(
    snapshot: list[tuple[str, str]], known: list[tuple[str, str]]
) -> dict[str, np.ndarray]:
    """The version each restored document gets: its own, unless the document moved past it.

    Ingest bumps from the current version, so the current one must stay the newest the
    document ever had, or a later edit would reuse (and silently lose) an archived number.
    """
    newest: dict[str, tuple[int, int, int]] = {}
    for doc_id, version in known:
        newest[doc_id] = max(newest.get(doc_id, (0, 0, 0)), _semver(version))
    ids, out, bumped = [], [], []
    for doc_id, version in snapshot:
        top = newest.get(doc_id)
        ids.append(doc_id)
        if top is None or _semver(version) >= top:
            out.append(version)
            bumped.append(False)
        else:
            out.append(f"{top[0]}.{top[1] + 1}.0")
            bumped.append(True)
    return {"document_id": cols.objects(ids), "version": cols.objects(out),
            "bumped": np.array(bumped, dtype=bool)}

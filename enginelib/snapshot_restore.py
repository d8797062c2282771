"""Restore: make the live catalog equal to a snapshot in one transaction, then rebuild indexes."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import catalog_snapshots as cs
from . import columns as cols
from . import faults
from .catalog import utcnow
from .core.layout import SNAPSHOT_TABLES_DIR as TABLES_DIR
from .manifest import next_index_version

if TYPE_CHECKING:
    from .core.store_core import StoreCore


@dataclass(frozen=True)
class RestoreReport:
    name: str
    generation: int
    index_version: str
    documents: int
    chunks: int
    archived: int  # live versions archived because the restore replaced or removed them
    # where a damaged catalog the restore replaced was moved (kept: what it committed after
    # the snapshot is only there); None for a restore into a sound catalog
    damaged_catalog: str | None = None
    # the store had lost its catalog file; the snapshot filled a fresh one
    catalog_was_missing: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def restore_into(store: StoreCore, folder: Path, name: str) -> RestoreReport:
    """Replace the live documents and chunks with the snapshot's (caller checked compatibility)."""
    catalog = store._catalog
    tables = folder / TABLES_DIR
    with catalog.transaction():
        generation = catalog.bump_generation()
        index_version = next_index_version(catalog.get_meta("index_version"))
        catalog.set_meta("index_version", index_version)
        now = utcnow()
        archived = cs.archive_replaced(catalog, tables, name, now, generation)
        versions = _restored_versions(*cs.snapshot_and_known_versions(catalog, tables))
        cs.replace_documents_and_chunks(catalog, tables, versions, index_version, now, generation)
        counts = cs.restore_acronyms_labels_sources(catalog, tables)
        faults.crash_point("restore_before_catalog_commit")
    with store._indexes_follow():
        faults.crash_point("restore_after_catalog_commit")
        store._committed()
        store.rebuild_indexes()
    return RestoreReport(
        name=name, generation=generation, index_version=index_version,
        documents=counts[0], chunks=counts[1], archived=archived,
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
    A version the history already holds is never current again: a document deleted since
    the snapshot comes back after its last version, as an ingest of the deleted id does.
    """
    newest: dict[str, tuple[int, int, int]] = {}
    for doc_id, version in known:
        newest[doc_id] = max(newest.get(doc_id, (0, 0, 0)), _semver(version))
    ids, out, bumped = [], [], []
    for doc_id, version in snapshot:
        top = newest.get(doc_id)
        ids.append(doc_id)
        if top is None or _semver(version) > top:
            out.append(version)
            bumped.append(False)
        else:
            out.append(f"{top[0]}.{top[1] + 1}.0")
            bumped.append(True)
    return {"document_id": cols.objects(ids), "version": cols.objects(out),
            "bumped": np.array(bumped, dtype=bool)}

"""Deleting documents: one catalog transaction archives and removes them, the indexes follow.

``Store.delete_document`` and folder sync (``ingest --prune``) both delete through here, so
a pruned document is archived in ``document_versions`` (``history`` and snapshots keep it)
exactly as a deleted one is, and a kill at any step leaves what the commit protocol
promises: before the catalog commit nothing is deleted, after it the indexes replay the
tombstones at the next open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import faults
from .catalog import utcnow

if TYPE_CHECKING:
    from .core.store_core import StoreCore

DELETED = "deleted"
CANCELLED = ("not ingested: its document was deleted after this job was queued (Retry DLQ "
             "ingests it after all)")


def delete_documents(store: StoreCore, document_ids: Sequence[str], *,
                     change_summary: str = DELETED) -> None:
    """Archive and delete ``document_ids`` (all present: the caller checked) in one commit."""
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        return
    from .jobs import table as jobs_table

    catalog = store._catalog
    now = utcnow()
    with catalog.transaction():
        generation = catalog.bump_generation()
        catalog.archive_documents(ids, change_summary, generation)
        removed = catalog.delete_documents(ids, generation)
        # A job that would ingest one of them again, queued before this delete (an upload
        # waiting for the worker), would bring it back after it: it goes to the DLQ, in this
        # same commit, with the reason (Retry DLQ ingests it after all).
        jobs_table.cancel_queued(catalog.con, [CANCELLED, now, now, ids])
        faults.crash_point("before_catalog_commit")
    with store._indexes_follow():
        faults.crash_point("after_catalog_commit")
        store._committed()
        store._apply_commit(removed, [])
    store.persist()

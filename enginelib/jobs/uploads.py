"""The file of an upload job (kept in the store until its job no longer needs it), removed."""

from __future__ import annotations

import logging
from pathlib import Path

from ..core import layout

_log = logging.getLogger("enginelib.jobs")


def discard_upload(store_path: Path, source: Path) -> None:
    """Remove an upload's file and its own folder once its job is DONE (its text is in the
    catalog now: versions, reindex and snapshots read it there), failed for good, or dropped
    from the DLQ. Kept, every upload stayed on disk for good: a deleted document's file too,
    and every replaced version's. A kill before this leaves the folder to serve's next start
    (``sweep_uploads``).

    Only a file in a folder of the store's uploads is removed: a job row or an inbox entry
    that named any other file as an upload had the worker delete it."""
    uploads = (store_path / layout.UPLOADS_DIR).resolve()
    if source.resolve().parent.parent != uploads:
        _log.warning("enginelib worker: %s is not in %s: an upload job's file is kept there",
                     source, uploads)
        return
    try:
        source.unlink(missing_ok=True)
        source.parent.rmdir()
    except OSError as exc:  # a busy or read-only disk: the sweep at the next start retries
        _log.warning("enginelib worker: could not remove the upload %s: %s", source, exc)

"""Which failures of a job are worth a retry: the one rule the worker follows.

A **permanent** failure is the input's own: the file is gone, over the size a job reads, of
no format a loader takes, not text, a broken PDF, options the ingest refuses. Run again
unchanged it fails the same way, so the job goes to the DLQ at once, its reason said; once
the file is put right, ``enginelib jobs --retry-dlq`` (the console's Retry DLQ) runs it again.

A **transient** failure is the machine's: a lock, a full disk, an I/O error, the catalog or
an index refusing a write, the model failing to load, or any error not known to be the
input's. It is retried on the backoff schedule (``backoff.retry_delay``), then the DLQ.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Any

from ..errors import (
    EngineError,
    IngestError,
    InvalidInputError,
    LoaderError,
    SourceMissingError,
    SourceTooLargeError,
    UnsupportedFormatError,
)
from ..loaders.base import human_size
from ..text import shell_word
from .table import UPLOAD

# Reasons, as JobOutcome.reason names them.
SOURCE_MISSING = "source_missing"
SOURCE_TOO_LARGE = "source_too_large"
UNSUPPORTED_FORMAT = "unsupported_format"
BAD_INPUT = "bad_input"          # the file's content, or the job's options
TRANSIENT = "transient"

# The OS errors a loader wraps that say nothing about the file itself: it may read next time
# (a disk or network hiccup, a file held by a sync tool or a virus scanner, no handle free).
TRANSIENT_ERRNOS = frozenset({
    errno.EIO, errno.EAGAIN, errno.EBUSY, errno.EINTR, errno.ETIMEDOUT, errno.ESTALE,
    errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC, errno.EACCES, errno.EPERM,
    errno.ENXIO, errno.ENODEV, errno.EHOSTDOWN, errno.ECONNRESET,
})

NOT_RETRIED = "not retried: run again unchanged it fails the same way"


@dataclass(frozen=True)
class Failure:
    """How a job's attempt failed: the message recorded, and whether a retry can help."""

    message: str
    permanent: bool
    reason: str


def classify(exc: BaseException, job: dict[str, Any], *, in_memory: bool = False) -> Failure:
    """The failure ``exc`` of ``job``'s attempt, as the queue records it. ``in_memory``: the
    job is an in-memory store's, whose advice is the Python call (it has no folder that a
    command could be given)."""
    source = str(job.get("source", ""))
    if isinstance(exc, SourceMissingError) and job.get("kind") == UPLOAD:
        return Failure(f"the uploaded file {source} no longer exists in the store: upload it "
                       f"again ({NOT_RETRIED})", True, SOURCE_MISSING)
    if isinstance(exc, SourceMissingError):
        retry, queue = (("store.jobs().retry_dlq()", "store.enqueue_paths(PATH)") if in_memory
                        else ("`enginelib jobs --retry-dlq` (Retry DLQ)",
                              "`enginelib ingest --queue`"))
        return Failure(
            f"source {source} no longer exists; re-add it and run {retry}, or queue the file "
            f"where it is now with {queue} ({NOT_RETRIED})", True, SOURCE_MISSING)
    if isinstance(exc, SourceTooLargeError):
        mb = -(-exc.size // (1024 * 1024))
        larger = (f"store.ingest_path({source!r}, max_bytes={mb * 1024 * 1024})" if in_memory
                  else f"`enginelib ingest --max-file-mb {mb} {shell_word(source)}`")
        return Failure(
            f"source {source} is {human_size(exc.size)}, over the {human_size(exc.limit)} a "
            f"queued job reads; ingest it directly with a larger limit ({larger}), or split it "
            f"({NOT_RETRIED})", True, SOURCE_TOO_LARGE)
    text = str(exc) if isinstance(exc, EngineError) else f"{type(exc).__name__}: {exc}"
    # An upload that failed for good is removed (the worker's discard): nothing to retry.
    removed = "; the uploaded file is removed: upload a corrected one" if job.get(
        "kind") == UPLOAD else ""
    if isinstance(exc, UnsupportedFormatError):
        return Failure(f"{text} ({NOT_RETRIED}{removed})", True, UNSUPPORTED_FORMAT)
    if isinstance(exc, LoaderError) and _transient_os_cause(exc):
        return Failure(text, False, TRANSIENT)
    if isinstance(exc, (IngestError, InvalidInputError)):
        return Failure(f"{text} ({NOT_RETRIED}{removed})", True, BAD_INPUT)
    return Failure(text, False, TRANSIENT)


def _transient_os_cause(exc: BaseException) -> bool:
    """Whether a loader's error wraps an OS error that may not happen again."""
    cause = exc.__cause__
    return isinstance(cause, OSError) and cause.errno in TRANSIENT_ERRNOS

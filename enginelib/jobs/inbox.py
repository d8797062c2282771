"""Jobs enqueued while another process holds the store's writer lock (e.g. `serve` runs).

Such a process cannot write the catalog, so it drops one JSON file per request into
``<store>/jobs-inbox/``; the writer's worker moves them into the jobs table on its next
poll. The file is written atomically, then removed in the same step that inserts its jobs
(a crash in between re-imports it: enqueueing is at-least-once, ingesting is idempotent).

A file `drop` did not write (hand-made, cut short by a full disk, a folder or a pipe under
a .json name) is renamed ``*.bad`` and its good entries, if any, are queued; an entry the
catalog would refuse is kept beside it in ``*.bad`` with the reason. Nothing in the inbox may
stop the worker's pass: every later job would wait behind it.
"""

from __future__ import annotations

import json
import logging
import stat
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import faults
from ..core import layout
from ..core.folders import require_folder
from ..durable import write_atomic
from ..errors import InvalidInputError
from ..validation import check_int, check_new_document_id, check_text
from .queue import MAX_ATTEMPTS, NewJob, json_value

if TYPE_CHECKING:
    from .queue import JobQueue

INBOX_DIR = layout.INBOX_DIR
# `drop` writes one entry per file queued, ~300 bytes each: this is ~200,000 files. A bigger
# file was read whole into memory by every poll.
MAX_INBOX_FILE_BYTES = 64 * 1024 * 1024
# Only `drop` writes here, and only file jobs: an upload job's file is deleted once it is
# done, so an inbox entry of that kind deleted whatever file it named.
KINDS = ("file",)

_log = logging.getLogger("enginelib.jobs")


def drop(store_path: Path, jobs: Sequence[NewJob]) -> Path:
    payload = [{"source": j.source, "document_id": j.document_id, "options": j.options,
                "kind": j.kind, **({} if j.max_attempts is None else
                                   {"max_attempts": j.max_attempts})} for j in jobs]
    folder = require_folder(store_path, INBOX_DIR)  # a file there: a bare "File exists (...)"
    path = folder / f"{uuid.uuid4().hex}.json"
    write_atomic(path, json.dumps(payload, default=json_value).encode("utf-8"))
    return path


def pending_files(store_path: Path) -> bool:
    """Cheap: is there anything to import? (one directory listing, no parsing)"""
    folder = store_path / INBOX_DIR
    return folder.is_dir() and any(folder.glob("*.json"))


def pending(store_path: Path) -> int:
    folder = store_path / INBOX_DIR
    if not folder.is_dir():
        return 0
    total = 0
    for path in folder.glob("*.json"):
        try:
            total += len(read_entries(path))
        except InvalidInputError:
            continue
    return total


def set_aside(store_path: Path) -> list[Path]:
    """The files the worker set aside: each holds jobs that were never queued."""
    folder = store_path / INBOX_DIR
    return sorted(folder.glob("*.bad")) if folder.is_dir() else []


def read_entries(path: Path) -> list[Any]:
    """The entries of one inbox file; InvalidInputError (naming the file) when it is no list
    `drop` could have written. Never blocks: a pipe or a device is refused unread."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInputError(f"{path} is not a regular file")
        if info.st_size > MAX_INBOX_FILE_BYTES:
            raise InvalidInputError(f"{path} is {info.st_size:,} bytes, over the "
                                    f"{MAX_INBOX_FILE_BYTES:,} an inbox file may have")
        entries = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        # RecursionError: json's parser recurses once per level of nesting ([[[[...)
        raise InvalidInputError(f"{path} cannot be read as an inbox file: {exc}") from exc
    if not isinstance(entries, list):
        raise InvalidInputError(f"{path} holds {type(entries).__name__}, not a list of jobs")
    return entries


def new_job(entry: Any) -> NewJob:
    """One entry as a job the catalog takes: the checks a direct enqueue makes, so that an
    entry cannot fail the transaction that imports its neighbours (a lone surrogate did, at
    every poll) nor fail all its attempts into the DLQ hours later."""
    from ..ingest import IngestOptions

    if not isinstance(entry, dict):
        raise InvalidInputError(f"an entry is {type(entry).__name__}, not an object")
    missing = {"source", "document_id", "options"} - set(entry)
    if missing:
        raise InvalidInputError(f"an entry lacks {sorted(missing)}")
    options = entry["options"]
    if not isinstance(options, dict):
        raise InvalidInputError(f"an entry's options are {type(options).__name__}, not an object")
    IngestOptions.build(**dict(options))
    kind = entry.get("kind", "file")
    if kind not in KINDS:
        raise InvalidInputError(f"an entry's kind is {kind!r}, not one of {list(KINDS)}")
    check_text("an entry's options", json.dumps(options, default=str, ensure_ascii=False))
    attempts = entry.get("max_attempts")
    if attempts is not None:  # absent: the worker's own --max-attempts
        attempts = check_int("an entry's max_attempts", attempts, minimum=1, maximum=MAX_ATTEMPTS)
    source = check_text("an entry's source", entry["source"], empty=False)
    if not Path(source).is_absolute():  # read from the worker's folder, whatever that is
        raise InvalidInputError(f"an entry's source {source!r} is not an absolute path")
    return NewJob(source, check_new_document_id(entry["document_id"], "an entry's document id"),
                  dict(options), kind, attempts)


def import_into(store_path: Path, queue: JobQueue) -> int:
    folder = store_path / INBOX_DIR
    if not folder.is_dir():
        return 0
    imported = 0
    for path in sorted(folder.glob("*.json")):
        try:
            entries = read_entries(path)
        except InvalidInputError as exc:
            _set_aside(path, str(exc))
            continue
        jobs, refused = _sort_entries(entries)
        # A failure here is the catalog's: the file stays for the next pass. The receipt
        # (the file's name, committed with its jobs) makes that next pass queue nothing when
        # a kill came between this commit and the unlink below: it queued every job again.
        ids = queue.enqueue(jobs, receipt=_receipt(path))
        faults.crash_point("inbox_after_enqueue")
        try:
            if refused:
                _keep_refused(path, refused, len(entries))
        finally:
            # Its jobs are queued: left (a full disk refusing the *.bad), the file was queued
            # again at every pass, a duplicate of each job each time.
            path.unlink()
        queue.forget_receipt(_receipt(path))
        imported += len(ids)
    return imported


def _receipt(path: Path) -> str:
    return f"inbox:{path.name}"


def _sort_entries(entries: list[Any]) -> tuple[list[NewJob], list[dict[str, Any]]]:
    jobs: list[NewJob] = []
    refused: list[dict[str, Any]] = []
    for entry in entries:
        try:
            jobs.append(new_job(entry))
        except (InvalidInputError, ValueError, TypeError) as exc:
            refused.append({"entry": entry, "error": str(exc)})
    return jobs, refused


def _bad_name(path: Path) -> Path:
    """Where to keep what could not be queued: a name the inbox does not read again."""
    bad = path.with_suffix(".bad")
    if bad.exists() or bad.is_symlink():  # an earlier file's, or a folder: keep both
        bad = path.with_name(f"{path.stem}.{uuid.uuid4().hex[:8]}.bad")
    return bad


def _set_aside(path: Path, reason: str) -> None:
    """Rename a file that could not be read as jobs for a person to look at. A failure is
    logged, never raised: the pass goes on (and meets the file again next time)."""
    bad = _bad_name(path)
    _log.warning("enginelib worker: inbox file %s set aside as %s: %s", path, bad.name, reason)
    try:
        path.rename(bad)
    except OSError as exc:
        _log.warning("enginelib worker: could not set aside %s: %s", path, exc)


def _keep_refused(path: Path, refused: list[dict[str, Any]], total: int) -> None:
    """Write the refused entries of ``path``, with their reasons, beside it as ``*.bad``; the
    log has them too, in case that write fails."""
    bad = _bad_name(path)
    text = json.dumps(refused, default=str, ensure_ascii=True)
    _log.warning("enginelib worker: %d of the %d entries of inbox file %s refused, kept as %s: "
                 "%s", len(refused), total, path, bad.name, text[:2000])
    try:
        write_atomic(bad, text.encode("utf-8"))
    except OSError as exc:
        _log.warning("enginelib worker: could not write %s: %s", bad, exc)

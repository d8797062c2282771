"""The worker: claims due jobs and runs each through the store's normal atomic ingest.

The store has one writer at a time (its file lock), and the worker is that writer: only the
process holding the lock claims jobs, so a job never runs twice at once. A worker that dies
mid-job leaves its job RUNNING with a lease; when the lease runs out the next worker puts it
back to PENDING. Re-running a job is harmless: the ingest is atomic per batch and an
unchanged document is a no-op (its fingerprint matches), so nothing is done twice.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import faults
from ..embedders.sharing import readers_admitted, released
from ..errors import IngestError, InvalidInputError, SourceTooLargeError
from ..fair_lock import FairRLock
from ..text import shell_word
from ..validation import (
    CONTROL_CHARS,
    check_float,
    check_new_document_id,
    check_path,
    check_text,
)
from . import inbox
from . import table as t
from .failures import classify
from .queue import MAX_POLL_S, JobQueue, NewJob, wake_on_new_jobs
from .uploads import discard_upload

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..catalog import Catalog
    from ..types import IngestReport, LoadedDocument


_log = logging.getLogger("enginelib.jobs")
MAX_BACKOFF_S = 60.0


def _backoff(poll_s: float, failures: int) -> float:
    """Seconds before the next pass after ``failures`` failed ones in a row."""
    return min(MAX_BACKOFF_S, poll_s * 2 ** min(failures, 16))


class IngestTarget(Protocol):
    """What a worker needs of the store it feeds: the public ingest (with its argument
    checks) of ``enginelib.Store``, the folder and the catalog. A Protocol, so the jobs
    package does not import the facade that composes it."""

    path: Path
    catalog: Catalog

    def ingest_documents(
        self, documents: Iterable[LoadedDocument], **options: Any
    ) -> IngestReport: ...


@dataclass(frozen=True)
class JobOutcome:
    job_id: int
    source: str
    status: str  # DONE | FAILED | DLQ
    attempts: int
    error: str | None = None
    # Why it failed (failures.SOURCE_MISSING, ...; TRANSIENT: retried); None when DONE.
    reason: str | None = None


class Worker:
    """Processes a store's jobs. ``lock`` serializes store access with other threads (serve's
    requests); ``write_lock`` is held for a whole pass, ``lock`` all of it but while a job's
    passages are embedded: readers (serve's searches) go on meanwhile, writers wait for the
    job. Without them, they are the store's own (its catalog's ``calls`` and ``writes``),
    which its calls, its job queue's and its writers' take: a worker run in a thread of its
    own takes turns with them, whichever thread makes them, and the workers of one store
    take turns with each other."""

    def __init__(
        self, store: IngestTarget, queue: JobQueue, *, lock: threading.RLock | None = None,
        write_lock: FairRLock | None = None, owner: str | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        # A lock of the worker's own left the store's calls and the queue's from the user's
        # other threads free to use the one DuckDB connection in the middle of a pass:
        # "connection is busy", a transaction aborted, a fetch that got another call's rows.
        self.lock = lock if lock is not None else store.catalog.calls
        self.write_lock = write_lock if write_lock is not None else store.catalog.writes
        self.owner = owner or _owner_name(self)
        # Set when this process queues a job of the store (through any of its queues) or
        # sends one back from the DLQ, and by whoever wants the worker to look now.
        self.wake = threading.Event()
        wake_on_new_jobs(queue.catalog, self.wake)
        self._idle_until = 0.0  # monotonic time before which no job can fall due
        # What stopped the last pass of run_forever (None once a pass succeeds): shown by
        # serve's /api/jobs, so a console tells why nothing moves.
        self.last_error: str | None = None
        self._reclaimed = False
        _LIVE.add(self)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        # Always the write lock first, as serve's writers take them: never a cycle. Asked
        # for again right after a job, it goes to a writer that waits first (fair_lock.py).
        with self.write_lock, self.lock:
            yield

    def _readers_in(self) -> AbstractContextManager[None]:
        """The store's lock let go while the model embeds (sharing.py); the write lock stays
        held, so nothing changes the documents the job read before."""
        return released(self.lock)

    def run_once(self) -> JobOutcome | None:
        """Process one due job; None when nothing is due."""
        with self._guard():
            inbox.import_into(self.store.path, self.queue)
            if not self._reclaimed:
                # A worker killed mid-job left it RUNNING until its lease (300 s) ran out,
                # though no other process can be running it: see _gone.
                self.queue.reclaim_orphans(_gone)
                self._reclaimed = True
            self.queue.expire_leases()
            job = self.queue.claim(self.owner)
            if job is None:
                self._prune()
                self._sleep_until(self.queue.next_wake())
                self.store.catalog.release()  # let readers in while idle
                return None
            # One wake may stand for several jobs queued together: look again after this one.
            self._idle_until = 0.0
            try:
                return self._run(job)
            except BaseException:  # Ctrl-C too: the job stayed RUNNING under this live
                # worker's name, and its next pass left it there for the whole lease
                self._hand_back()
                raise

    def _run(self, job: dict[str, Any]) -> JobOutcome:
        """Ingest a claimed job and record how it ended."""
        try:
            documents = self._process(job)
        except Exception as exc:  # noqa: BLE001 - any failure is the job's, recorded
            failure = classify(exc, job, in_memory=self.queue.in_memory)
            status = self.queue.fail(job, self.owner, failure.message,
                                     permanent=failure.permanent)
            self.store.catalog.release()
            if job["kind"] == UPLOAD and failure.permanent:
                # Retry DLQ would read the same bytes and fail the same way: kept, each such
                # upload stayed on disk for good (a client could fill it with them).
                discard_upload(self.store.path, Path(job["source"]))
            return JobOutcome(job["job_id"], job["source"], status, job["attempts"],
                              failure.message, failure.reason)
        faults.crash_point("after_job_ingest")
        self.queue.complete(job, self.owner, documents)
        self.store.catalog.release()
        if job["kind"] == UPLOAD:
            discard_upload(self.store.path, Path(job["source"]))
        return JobOutcome(job["job_id"], job["source"], t.DONE, job["attempts"])

    def _prune(self) -> None:
        """Nothing is due: the moment to delete the finished jobs the retention no longer
        keeps. Housekeeping: its failure (a full disk) is logged and never stops the pass."""
        try:
            self.queue.prune_if_due()
        except Exception as exc:  # noqa: BLE001 - the prune's transaction rolled back whole
            _log.warning("enginelib worker: pruning old finished jobs failed: %s", exc)

    def _hand_back(self) -> None:
        """The end of a claimed job could not be written (a full disk, the catalog gone, the
        run interrupted by Ctrl-C): it stays RUNNING under this worker's name, which a live
        worker's lease protects, so serve's worker left it for the whole lease (300 s) once
        the disk had room again. Under a new name, this worker's next pass sees the old one as gone and takes the job
        back at once, its attempt counted as lost."""
        self.owner = _owner_name(self)
        self._reclaimed = False

    def run_until_idle(self) -> list[JobOutcome]:
        """Process every job that is due now (retries scheduled later are left for later)."""
        outcomes: list[JobOutcome] = []
        while (outcome := self.run_once()) is not None:
            outcomes.append(outcome)
        return outcomes

    def run_forever(
        self, stop: threading.Event, poll_s: float = 1.0,
        on_idle: Callable[[], None] | None = None,
    ) -> None:
        """Process jobs as they become due until ``stop`` is set (or the store is closed).

        While idle it opens the catalog only when a job can be due (the earliest retry or
        lease end, an inbox file, or ``wake``, which a job queued in this process sets):
        reopening DuckDB costs tens of milliseconds, which searches served by the same
        process would otherwise pay.
        """
        poll_s = check_float("poll_s", poll_s, minimum=1e-6, maximum=MAX_POLL_S)
        failures = 0
        while not stop.is_set():
            if self._closed(None):  # while idle: nothing else would look at the catalog
                return
            try:
                if self._has_work() and self.run_once() is not None:
                    failures = 0
                    continue
                if on_idle is not None:
                    on_idle()
                failures, self.last_error = 0, None
            except Exception as exc:  # noqa: BLE001 - a job's own failure is recorded in run_once
                if self._closed(exc):
                    return
                # The queue itself failed (a full disk, a catalog another process holds):
                # the loop must outlive it, or serve goes on accepting uploads nobody ingests.
                failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                delay = _backoff(poll_s, failures)
                _log.warning("enginelib worker: %s; retrying in %.0f s", self.last_error, delay)
                self.wake.wait(delay)
                continue
            self.wake.wait(poll_s)

    def _closed(self, exc: Exception | None) -> bool:
        """Whether the store was closed for good (its close waits for the job in hand):
        retried, the loop said "is closed" every minute for ever (or, idle, waited for a job
        that could never come), and a thread not told to stop kept the process from exiting."""
        if not self.queue.catalog.closed:
            return False
        self.last_error = f"{type(exc).__name__}: {exc}" if exc is not None else "store closed"
        _log.warning("enginelib worker: its store was closed; the worker stops")
        return True

    def _has_work(self) -> bool:
        if self.wake.is_set():
            self.wake.clear()
            return True
        return time.monotonic() >= self._idle_until or inbox.pending_files(self.store.path)

    def _sleep_until(self, moment: datetime | None) -> None:
        if moment is None:
            self._idle_until = math.inf
            return
        seconds = (moment - self.queue.clock()).total_seconds()
        self._idle_until = time.monotonic() + max(0.0, seconds)

    def _process(self, job: dict[str, Any]) -> list[str]:
        from ..loaders import stream_file

        options = job["options"]
        if not isinstance(options, dict):  # it failed on a Python TypeError
            raise InvalidInputError(
                f"job {job['job_id']}: its options in the catalog are {str(options)[:60]!r}, not "
                "an object (the jobs table was edited by hand): queue its file again with "
                "`enginelib ingest --queue`")
        if Path(job["source"]).is_dir():
            # stream_file's own advice (iter_load, ingest_path) speaks to Python callers
            raise InvalidInputError(
                f"{job['source']} was a file when queued and is a folder now: queue the folder "
                f"itself (`enginelib ingest --queue {shell_word(job['source'])}`)")
        # Streamed, not loaded whole: a JSONL file is ingested batch by batch as it is read
        # (a gzipped one may inflate to many times its size). A bad line late in it fails
        # the job after the batches before it committed; the error says how many, and the
        # rerun after the fix leaves those unchanged.
        with self._readers_in():  # a long PDF's text is read without the store
            documents = stream_file(job["source"], doc_id=job["document_id"])
        with readers_admitted(self._readers_in):
            report = self.store.ingest_documents(documents, **options)
        if report.skipped:  # a document of the file the ingest refused: the input's fault
            raise IngestError("; ".join(s.reason for s in report.skipped), path=job["source"])
        return [*report.added, *report.updated, *report.unchanged]


UPLOAD = t.UPLOAD


def _owner_name(worker: Worker) -> str:
    """host:pid:tag, the form ``_gone`` reads; a fresh tag each call."""
    return f"{socket.gethostname()}:{os.getpid()}:{id(worker):x}.{uuid.uuid4().hex[:6]}"


# The workers alive in this process: an owner with this process's pid that is none of them
# was a worker of an earlier process with the same pid (a restarted container's pid 1).
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


def _gone(owner: str) -> bool:
    """Whether a job's owner is a worker of another process on this machine (or of an earlier
    process that had this pid). Such a worker cannot be running it: taking, running and
    finishing a job all write the store, which needs its one writer lock, and this process
    holds it. (An owner named by the caller, or another machine's, keeps its lease.)"""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return int(pid) != os.getpid() or owner not in {worker.owner for worker in _LIVE}


def jobs_for_paths(
    paths: Sequence[str | Path], options: dict[str, Any], *, include: Sequence[str] = (),
    exclude: Sequence[str] = (), skip_folders: Sequence[str | Path] = (),
) -> list[NewJob]:
    """One job per file: a file named directly, or each file found walking a folder (never
    inside ``skip_folders``: the store's own), with the same document id a plain ingest
    would give it. Options a direct ingest would refuse
    are refused here, for every way in (the catalog, or the inbox while another process
    writes: there such a job was set aside at import, or failed all its attempts)."""
    from ..errors import UnsupportedFormatError
    from ..ingest import IngestOptions
    from ..loaders.formats import loader_for
    from ..loaders.walk import fail, selected
    from ..types import SkippedInput

    built = IngestOptions.build(**dict(options))
    # Lists as the ingest reads them: a set of tags was kept as given, stored in the jobs
    # table as its str ("{'x', 'y'}"), and the job tagged its document "{'x'" and "'y'}".
    options = {**options, **{key: list(getattr(built, key)) for key in ("tags", "entities")
                             if key in options}}
    jobs: list[NewJob] = []
    for given in paths:
        given = check_path(given)  # "" resolved to the current folder, and queued all of it
        root = Path(given).resolve()
        if not root.exists():
            raise fail(Path(given), "no such file or folder")
        if not root.is_dir():
            if not root.is_file():  # the worker would wait on a pipe forever, holding the queue
                raise fail(Path(given), "not a regular file (a pipe or device)")
            loader_for(Path(given))  # its job could only fail its attempts into the DLQ
            _check_size(Path(given), root.stat().st_size)
            # The path as given, made absolute, not resolved: a symbolic link named directly
            # became a document named (and titled) after its target, where a direct ingest
            # names it after the link, so the two made two documents of one file.
            named = Path(given).absolute()
            jobs.append(NewJob(str(named), named.name, dict(options)))
            continue
        for found in selected(root, include, exclude, skip_folders):
            if isinstance(found, SkippedInput):
                continue
            path, relative = found
            try:
                loader_for(path)
            except UnsupportedFormatError:
                continue  # a logo, a .json beside the documents: a direct ingest skips them too
            jobs.append(NewJob(str(path), relative, dict(options)))
    for job in jobs:  # a queued job fails later, in the DLQ, far from the one who queued it
        _check_queueable(job)
    _refuse_shared_ids(jobs)
    return jobs


def _check_size(given: Path, size: int) -> None:
    """A file named directly that is over the size a job reads: its job could only fail."""
    from ..loaders import DEFAULT_MAX_BYTES
    from ..loaders.base import human_size

    if size > DEFAULT_MAX_BYTES:
        raise SourceTooLargeError(
            f"{given}: file is {human_size(size)}, over the {human_size(DEFAULT_MAX_BYTES)} a "
            f"queued job reads: ingest it directly, without --queue, with a larger limit "
            f"(`enginelib ingest --max-file-mb {-(-size // (1024 * 1024))} "
            f"{shell_word(str(given))}`); nothing was queued",
            path=given, size=size, limit=DEFAULT_MAX_BYTES)


def _check_queueable(job: NewJob) -> None:
    """A file whose path or id the jobs table cannot hold (a name that is not UTF-8, a
    control character) refuses the enqueue naming that file: in a folder of thousands, the
    bare reason (or DuckDB's encoding error, with advice to run `repair`) left it to be
    found by hand."""
    shown = CONTROL_CHARS.sub(lambda m: repr(m.group())[1:-1],  # a newline printed raw
                              os.fsencode(job.source).decode("utf-8", "backslashreplace"))
    try:
        job.source.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{shown}: its path is not valid UTF-8, and the jobs table holds text: rename it "
            "(or leave it out with --exclude); nothing was queued") from exc
    try:
        check_text("its path", job.source)
        check_new_document_id(job.document_id, "its document id")
    except InvalidInputError as exc:
        raise InvalidInputError(f"{shown}: {exc}; nothing was queued") from exc


def _refuse_shared_ids(jobs: Sequence[NewJob]) -> None:
    """Two files given together that would get one document id (README.md in two folders):
    the second job would replace the first's document. Nothing is queued then."""
    first: dict[str, str] = {}
    for job in jobs:
        seen = first.setdefault(job.document_id, job.source)
        if seen != job.source:
            raise InvalidInputError(
                f"{seen} and {job.source} would both be document {job.document_id!r} (a file's "
                "id is its path under the folder given): queue their common parent folder so "
                "that their ids differ; nothing was queued")

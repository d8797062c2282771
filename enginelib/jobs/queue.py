"""The job queue over the catalog: enqueue, claim with a lease, finish, retry, DLQ, drop, cancel."""

from __future__ import annotations

import functools
import json
import random
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import duckdb

from ..catalog import Catalog, utcnow
from ..core.layout import is_memory_store
from ..errors import InvalidInputError, JobNotFoundError, JobStateError, ReadOnlyStoreError
from ..validation import MAX_LIST_OFFSET, MAX_LISTED, check_float, check_int
from . import shape
from . import table as t
from .backoff import DEFAULT_MAX_ATTEMPTS, retry_delay
from .uploads import discard_upload

DEFAULT_LEASE_S = 300.0
# Bounds a setting must fall in: beyond them a delay overflows datetime arithmetic (an
# infinite lease) or a count the jobs table stores as a 32-bit INTEGER.
MAX_ATTEMPTS = 1_000
MAX_LEASE_S = 30 * 86_400.0
MAX_POLL_S = 3_600.0
# A page of the job list when none is asked for; the answer's counts tell what is beyond it.
DEFAULT_LISTED = 1000
# Catalog meta keys recording an enqueue that must not run twice (see JobQueue.enqueue).
_RECEIPT_PREFIX = "jobs.receipt:"
# How long finished jobs are kept (see Retention), and how often a worker prunes them.
DEFAULT_KEEP_DAYS = 30.0
DEFAULT_KEEP_ROWS = 10_000
MAX_KEEP_DAYS = 100 * 365.0
MAX_KEEP_ROWS = 2**31 - 1
PRUNE_EVERY_S = 3600.0


@dataclass(frozen=True)
class Retention:
    """What the jobs tables keep of finished work: a DONE job for ``keep_days`` after it
    finished (in the queue or the history; a CANCELLED one, in the history, after it was
    cancelled), and at most the newest ``keep_rows`` rows of the history; a job's attempts
    go with it. A job in the DLQ, or still waiting or running,
    is never pruned: it stays until a person retries or drops it (or it runs)."""

    keep_days: float = DEFAULT_KEEP_DAYS
    keep_rows: int = DEFAULT_KEEP_ROWS

    def __post_init__(self) -> None:
        check_float("keep_days", self.keep_days, minimum=0.0, maximum=MAX_KEEP_DAYS)
        check_int("keep_rows", self.keep_rows, minimum=0, maximum=MAX_KEEP_ROWS)


@dataclass(frozen=True)
class Pruned:
    """What one prune deleted: DONE jobs of the queue, history rows, attempt rows."""

    jobs: int
    history: int
    attempts: int


@dataclass(frozen=True)
class NewJob:
    """One source to ingest: a file (or an uploaded file) and the options to ingest it with."""

    source: str
    document_id: str
    options: dict[str, Any]
    kind: str = "file"
    # Attempts before the DLQ; None takes the queue's. Carried by the inbox, so a job queued
    # while `serve` runs keeps what `ingest --queue --max-attempts` asked for.
    max_attempts: int | None = None


def _check_new_jobs(jobs: Any) -> None:
    """NewJobs in a list: a str, a dict or a list of dicts failed on their first attribute
    (AttributeError: 'dict' object has no attribute 'max_attempts'), and a kind the worker
    does not know was queued and run as a file."""
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Sequence):
        raise InvalidInputError(f"enqueue() takes a list of NewJob, got {type(jobs).__name__}")
    for i, job in enumerate(jobs):
        if not isinstance(job, NewJob):
            raise InvalidInputError(
                f"enqueue() takes a list of NewJob(source, document_id, options), and item {i} "
                f"is a {type(job).__name__} (enginelib.jobs.jobs_for_paths makes them from "
                "paths)")
        if not isinstance(job.options, dict):
            raise InvalidInputError(f"job {i}: options must be a dict of ingest options, got "
                                    f"{type(job.options).__name__}")
        if job.kind not in (t.FILE, t.UPLOAD):
            raise InvalidInputError(f"job {i}: kind {job.kind!r} is not one of "
                                    f"{[t.FILE, t.UPLOAD]}")


# Why a job in each status is not cancelled, and what to do instead (JobQueue.cancel).
_NOT_CANCELLED = {
    t.RUNNING: "a worker is ingesting it now, and it is not cancelled under its worker; let it "
               "finish, then delete what it ingested if unwanted (a job left RUNNING by a worker "
               "that died goes back to FAILED when its lease runs out, and can be cancelled then)",
    t.DONE: "it has run already; delete what it ingested if unwanted",
    t.CANCELLED: "it was cancelled already",
    t.DLQ: "in the DLQ it no longer waits to run; drop it instead (`enginelib jobs --drop ID`, "
           "DELETE /api/jobs/ID)",
}
# The same for an in-memory store's queue: no command can be given its private folder.
_NOT_CANCELLED_IN_MEMORY = {
    **_NOT_CANCELLED,
    t.DLQ: "in the DLQ it no longer waits to run; drop it instead (store.jobs().drop(ID))",
}
_OVER = "only a job still waiting (PENDING, or FAILED until its retry) is cancelled"


def json_value(value: Any) -> Any:
    """An option value JSON has no type for: a set as the list the ingest reads it as (its
    str, "{'x', 'y'}", was read back as one comma-separated string of tags), else its str
    (a date in metadata, as a direct ingest stores it)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


@dataclass(frozen=True)
class JobPage:
    """A page of jobs; ``next_after`` is the ``after`` of the next page (None: none left)."""

    jobs: list[dict[str, Any]]
    next_after: int | None


def _paging(limit: Any, offset: Any, after: Any) -> tuple[int, int, int | None]:
    """A page's ``limit``, ``offset`` and ``after``, checked: the queue's and the history's
    pages take the same ones."""
    limit = check_int("limit", limit, minimum=1, maximum=MAX_LISTED)
    offset = check_int("offset", offset, minimum=0, maximum=MAX_LIST_OFFSET)
    if after is not None:
        after = check_int("after", after, minimum=-(2**63), maximum=2**63 - 1)
        if offset:
            raise InvalidInputError("give after (the next_after of the page before) or "
                                    "offset, not both")
    return limit, offset, after


def _page_of(rows: list[dict[str, Any]], limit: int) -> JobPage:
    """The first ``limit`` of ``rows`` (read one past it), options parsed, and the cursor."""
    jobs = rows[:limit]
    for job in jobs:
        # the history's column may be NULL (a hand edit); the queue's never is
        job["options"] = None if job["options"] is None else json.loads(job["options"])
    return JobPage(jobs, int(jobs[-1]["job_id"]) if len(rows) > limit else None)


# The wake events of this process's workers, by the catalog they work on: an idle worker
# looks at the catalog again only when a job can be due by its clock (a retry, a lease) or
# an inbox file waits, so a job queued through any queue of that catalog must say so.
_WAKES: weakref.WeakKeyDictionary[Catalog, weakref.WeakSet[threading.Event]] = (
    weakref.WeakKeyDictionary())
_WAKES_GUARD = threading.Lock()


def wake_on_new_jobs(catalog: Catalog, wake: threading.Event) -> None:
    """Set ``wake`` whenever this process queues a job of ``catalog`` or sends one back from
    the DLQ (through any ``JobQueue`` on it), for as long as ``wake`` lives."""
    with _WAKES_GUARD:
        _WAKES.setdefault(catalog, weakref.WeakSet()).add(wake)


def _wake_workers(catalog: Catalog) -> None:
    with _WAKES_GUARD:
        wakes = list(_WAKES.get(catalog, ()))
    for wake in wakes:
        wake.set()


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _in_turn(method: Callable[Concatenate[JobQueue, _P], _R]) -> Callable[Concatenate[JobQueue, _P], _R]:
    """``method`` runs holding its catalog's ``calls``, as the store's own calls and a worker's
    pass do: a queue used in one thread while its store (or a worker) was used in another ran
    on their one DuckDB connection at the same time ("connection is busy", an aborted
    transaction, another call's rows)."""

    @functools.wraps(method)
    def taking_turns(queue: JobQueue, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with queue.catalog.calls:
            return method(queue, *args, **kwargs)

    return taking_turns


def _writing(method: Callable[Concatenate[JobQueue, _P], _R]) -> Callable[Concatenate[JobQueue, _P], _R]:
    """``method`` changes the jobs tables: refused on a read-only catalog (a store opened with
    read_only=True, a snapshot), where DuckDB's own error ("Cannot execute statement of type
    UPDATE on database catalog which is attached in read-only mode!") came out bare."""

    @functools.wraps(method)
    def writing(queue: JobQueue, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if queue.catalog.read_only:
            raise ReadOnlyStoreError(
                f"{method.__name__}(): this store was opened read-only (or is a snapshot), so "
                "its job queue can be listed, not changed: open it without read_only=True",
                path=queue.catalog.path.parent)
        return method(queue, *args, **kwargs)

    return writing


class JobQueue:
    """Jobs of one store. Writers only mutate; ``time_unit`` scales every delay (tests).
    Safe to use from any thread beside the store's own calls: each method takes its turn on
    the catalog (``_in_turn``)."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        lease_s: float = DEFAULT_LEASE_S,
        time_unit: float = 1.0,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
        retention: Retention | None = None,
    ) -> None:
        max_attempts = check_int("max_attempts", max_attempts, minimum=1, maximum=MAX_ATTEMPTS)
        lease_s = check_float("lease_s", lease_s, minimum=1e-6, maximum=MAX_LEASE_S)
        time_unit = check_float("time_unit", time_unit, minimum=1e-9, maximum=1e3)
        # else taken as given, and failed at their first use: an AttributeError at the first
        # prune (a dict for retention), a TypeError at the first claim (a clock not callable)
        if retention is not None and not isinstance(retention, Retention):
            raise InvalidInputError(f"retention must be a Retention(keep_days=..., "
                                    f"keep_rows=...), got {type(retention).__name__}")
        for name, hook in (("clock", clock), ("rand", rand)):
            if not callable(hook):
                raise InvalidInputError(f"{name} must be a function (called with no "
                                        f"argument), got {type(hook).__name__}")
        self.catalog = catalog
        self.max_attempts = max_attempts
        self.lease_s = lease_s
        self.time_unit = time_unit
        self.clock = clock
        self.rand = rand
        self.retention = retention if retention is not None else Retention()
        self._pruned_at: float | None = None  # monotonic time of this queue's last prune
        with catalog.calls:
            if not catalog.read_only:
                with catalog.transaction() as con:
                    t.create_tables(con)
            # A table of another layout failed every statement with DuckDB's binder error.
            shape.require_sound(catalog.con,
                                None if catalog.in_memory_db else catalog.path.parent)

    @property
    def in_memory(self) -> bool:
        """An in-memory store's queue: its messages name the Python call, not a command."""
        return not self.catalog.in_memory_db and is_memory_store(self.catalog.path.parent)

    def _exists(self) -> bool:
        return self.catalog.read_only is False or t.tables_exist(self.catalog.con)

    # -- writing ---------------------------------------------------------------------------

    @_writing
    @_in_turn
    def enqueue(self, jobs: Sequence[NewJob], *, receipt: str | None = None) -> list[int]:
        """Queue ``jobs``; returns their ids. With ``receipt`` (a name never used twice, such
        as an inbox file's), the jobs are queued once: the receipt is recorded in the same
        transaction, and a second enqueue with it queues nothing (``forget_receipt`` clears
        it once what it names is gone)."""
        _check_new_jobs(jobs)
        now = self.clock()
        attempts = [self.max_attempts if job.max_attempts is None else
                    check_int("max_attempts", job.max_attempts, minimum=1, maximum=MAX_ATTEMPTS)
                    for job in jobs]
        columns = ([job.kind for job in jobs], [job.source for job in jobs],
                   [job.document_id for job in jobs],
                   [json.dumps(job.options, default=json_value) for job in jobs], attempts)
        with self.catalog.transaction() as con:
            if receipt is not None:
                key = _RECEIPT_PREFIX + receipt
                if self.catalog.get_meta(key) is not None:
                    return []  # queued by a pass that was killed before it removed the file
                self.catalog.set_meta(key, now.isoformat())
            ids = t.insert_jobs(con, columns, [now, now, now])
        if ids:
            _wake_workers(self.catalog)
        return ids

    @_writing
    @_in_turn
    def forget_receipt(self, receipt: str) -> None:
        """Clear an ``enqueue`` receipt once what it names can no longer be queued again."""
        with self.catalog.transaction():
            self.catalog.delete_meta(_RECEIPT_PREFIX + receipt)

    @_writing
    @_in_turn
    def expire_leases(self) -> list[int]:
        """RUNNING jobs whose lease ran out (their worker died) wait for their retry as a
        failed attempt would, or go to the DLQ when that was their last attempt."""
        now = self.clock()
        with self.catalog.transaction() as con:
            return [int(job_id) for job_id, owner, attempts, most in t.expired_runs(con, now)
                    if self._lose(con, now, (job_id, owner, attempts, most), t.LEASE_EXPIRED)]

    @_writing
    @_in_turn
    def reclaim_orphans(self, gone: Callable[[str], bool]) -> list[int]:
        """RUNNING jobs whose worker ``gone(owner)`` says cannot be running are taken back now
        (their lease not waited out), their attempt counted as lost, as an expired lease's."""
        now = self.clock()
        with self.catalog.transaction() as con:
            return [int(row[0]) for row in t.running_owners(con)
                    if row[1] and gone(row[1]) and self._lose(con, now, row, t.WORKER_GONE)]

    def _lose(self, con: duckdb.DuckDBPyConnection, now: datetime, row: Sequence[Any], reason: str) -> bool:
        job_id, owner, attempts, most = row
        status, next_at = self._after_failure(now, int(attempts), int(most))
        error = reason + (t.LOST_LAST_ATTEMPT if status == t.DLQ else "")
        return t.lose_run(con, now, int(job_id), owner, status, error,
                          None if status == t.DLQ else next_at)

    def _after_failure(self, now: datetime, attempts: int, most: int) -> tuple[str, datetime]:
        """Where a job goes after its ``attempts``-th attempt failed or was lost: FAILED until
        the backoff's delay has passed, or the DLQ when it had no attempt left."""
        if attempts >= most:
            return t.DLQ, now
        delay = retry_delay(max(attempts, 0), self.rand) * self.time_unit
        return t.FAILED, now + timedelta(seconds=delay)

    @_writing
    @_in_turn
    def claim(self, owner: str) -> dict[str, Any] | None:
        """The next due job, now RUNNING under ``owner``'s lease; None when nothing is due."""
        now = self.clock()
        lease_until = now + timedelta(seconds=self.lease_s)
        with self.catalog.transaction() as con:
            due = t.next_due(con, [now])
            if due is None:
                return None
            row = t.claim(con, [owner, lease_until, now, now, due[0]])
            if row is None:
                return None
            job = t.job_row(row)
            t.open_attempt(con, [job["job_id"], job["attempts"], owner, now, job["job_id"]])
        job["options"] = json.loads(job["options"])
        return job

    @_writing
    @_in_turn
    def complete(self, job: dict[str, Any], owner: str, documents: Sequence[str]) -> None:
        now = self.clock()
        with self.catalog.transaction() as con:
            t.finish_done(con, [now, now, list(documents), job["job_id"], owner])
            t.close_attempt(con, [now, t.DONE, None, None, job["job_id"]])
            # An older upload of this document that failed once and waits for its retry would
            # run after this one and put its stale text back: the newer one is in.
            t.supersede_older(con, [
                f"not ingested: job {job['job_id']}, queued later for the same document, is "
                "done (Retry DLQ ingests this one after all)", now, now, job["document_id"],
                job["job_id"]])

    @_writing
    @_in_turn
    def fail(self, job: dict[str, Any], owner: str, error: str, *, permanent: bool = False) -> str:
        """Record a failed attempt: FAILED with the next attempt scheduled, or DLQ when the
        job has used its attempts or the failure is ``permanent`` (a retry would fail the
        same way: see ``failures``). Returns the new status."""
        now = self.clock()
        status, next_at = (t.DLQ, now) if permanent else self._after_failure(
            now, int(job["attempts"]), int(job["max_attempts"]))
        with self.catalog.transaction() as con:
            t.finish_failed(con, [status, error, next_at, now, now, job["job_id"], owner])
            t.close_attempt(con, [
                now, status, error, None if status == t.DLQ else next_at, job["job_id"],
            ])
        return status

    @_writing
    @_in_turn
    def retry_dlq(self) -> int:
        """DLQ jobs back to PENDING with a fresh set of attempts; returns how many."""
        now = self.clock()
        with self.catalog.transaction() as con:
            retried = t.retry_dlq(con, [now, now])
        if retried:
            _wake_workers(self.catalog)
        return retried

    @_writing
    @_in_turn
    def drop(self, job_id: int) -> int:
        """Delete DLQ job ``job_id`` and its attempts for good (one transaction: a kill
        halfway leaves both); an upload's file goes too. Returns 1. JobNotFoundError for an
        id the queue has not, JobStateError for a job not in the DLQ: a silent no-op read as
        done to whoever mistyped the id."""
        job_id = check_int("job_id", job_id, minimum=-(2**63), maximum=2**63 - 1)
        with self.catalog.transaction() as con:
            dropped = t.drop_dlq(con, job_id)
            status = None if dropped else t.job_status(con, job_id)
        if not dropped:
            if status is None:
                raise JobNotFoundError(job_id, in_memory=self.in_memory)
            raise JobStateError(
                f"job {job_id} is {status}, not in the DLQ: only a job that failed for good is "
                "dropped (one still waiting or running would vanish under its worker)",
                job_id=job_id, status=status)
        self._discard_uploads(dropped)
        return len(dropped)

    @_writing
    @_in_turn
    def cancel(self, job_id: int) -> int:
        """Cancel job ``job_id`` while it still waits (PENDING, or FAILED until its retry): it
        leaves the queue for the history as CANCELLED, with its attempts, in one transaction
        (a kill halfway leaves it queued), and an upload's file goes. Returns 1.
        JobNotFoundError for an id neither table has; JobStateError for any other status: a
        RUNNING job is its worker's (it would vanish under it), a DONE one has run, a DLQ one
        is not waiting (``drop`` deletes it)."""
        job_id = check_int("job_id", job_id, minimum=-(2**63), maximum=2**63 - 1)
        with self.catalog.transaction() as con:
            cancelled = t.cancel(con, job_id, self.clock())
            status = None if cancelled else t.job_status(con, job_id)
        if cancelled is None:
            if status is None:
                raise JobNotFoundError(job_id, in_memory=self.in_memory)
            reasons = _NOT_CANCELLED_IN_MEMORY if self.in_memory else _NOT_CANCELLED
            why = reasons.get(status.split(" ")[0], _OVER)  # "DONE (in the history)"
            raise JobStateError(f"job {job_id} is {status}: {why}", job_id=job_id, status=status)
        self._discard_uploads([cancelled])
        return 1

    @_writing
    @_in_turn
    def drop_dlq(self) -> int:
        """Delete every DLQ job and its attempts for good, as ``drop`` does; returns how many."""
        with self.catalog.transaction() as con:
            dropped = t.drop_dlq(con, None)
        self._discard_uploads(dropped)
        return len(dropped)

    def _discard_uploads(self, dropped: Sequence[tuple[int, str, str]]) -> None:
        """The files of dropped upload jobs: nothing will read them now. After the commit, so
        a kill before it leaves a job with its file; a kill after it leaves a folder no job
        needs, which serve's next start sweeps."""
        if self.catalog.in_memory_db:
            return
        for _job_id, kind, source in dropped:
            if kind == t.UPLOAD:
                discard_upload(self.catalog.path.parent, Path(source))

    @_writing
    @_in_turn
    def purge_done(self) -> int:
        """Move DONE jobs to ``jobs_history``, then hold the history to the retention (in the
        same transaction); returns how many moved."""
        now = self.clock()
        with self.catalog.transaction() as con:
            moved = t.purge_done(con, [now])
            self._prune(con, now)
        return moved

    @_writing
    @_in_turn
    def prune(self) -> Pruned:
        """Delete what the retention no longer keeps, in one transaction: a kill halfway
        leaves every row as it was."""
        now = self.clock()
        with self.catalog.transaction() as con:
            pruned = self._prune(con, now)
        self._pruned_at = time.monotonic()
        return pruned

    def prune_if_due(self) -> Pruned | None:
        """``prune`` at most once every ``PRUNE_EVERY_S`` (the worker calls it when idle)."""
        if self._pruned_at is not None and time.monotonic() - self._pruned_at < PRUNE_EVERY_S:
            return None
        self._pruned_at = time.monotonic()  # a prune that fails is tried again in an hour
        return self.prune()

    def _prune(self, con: duckdb.DuckDBPyConnection, now: datetime) -> Pruned:
        before = now - timedelta(days=self.retention.keep_days)
        return Pruned(*t.prune(con, before, self.retention.keep_rows))

    # -- reading ---------------------------------------------------------------------------

    @_in_turn
    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        if self._exists():
            found = t.status_counts(self.catalog.con)
        return {status: found.get(status, 0) for status in t.STATUSES}

    @_in_turn
    def next_wake(self) -> datetime | None:
        """The earliest time a job falls due or a lease runs out; None when nothing waits."""
        if not self._exists():
            return None
        row = t.next_wake(self.catalog.con)
        return row[0] if row else None

    @_in_turn
    def history_count(self) -> int:
        if not self._exists():
            return 0
        row = t.history_count(self.catalog.con)
        return int(row[0]) if row else 0

    def jobs(self, *, status: str | None = None, limit: int = DEFAULT_LISTED, offset: int = 0,
             statuses: Sequence[str] | None = None,
             after: int | None = None) -> list[dict[str, Any]]:
        """A page of the jobs in ``status`` (or any of ``statuses``; all when neither), oldest
        first; ``counts()`` says how many there are in all."""
        return self.page(status=status, limit=limit, offset=offset, statuses=statuses,
                         after=after).jobs

    @_in_turn
    def page(self, *, status: str | None = None, limit: int = DEFAULT_LISTED, offset: int = 0,
             statuses: Sequence[str] | None = None, after: int | None = None) -> JobPage:
        """``jobs``, with the cursor of the next page: ``after`` a job id lists the jobs past
        it, so a page stays right when jobs are purged or queued in between (``offset`` counts
        rows, and skipped or repeated jobs then)."""
        if isinstance(statuses, str):  # its letters were read as statuses: "job status 'P'"
            raise InvalidInputError(f"statuses must be a list such as ['PENDING', 'FAILED'], got "
                                    f"{statuses[:40]!r}: for one, give status={statuses[:40]!r}")
        wanted = statuses if statuses is not None else [status] if status is not None else None
        for name in wanted or ():
            if name not in t.STATUSES:
                raise InvalidInputError(f"job status {name!r} is not one of {list(t.STATUSES)}")
        limit, offset, after = _paging(limit, offset, after)
        if not self._exists():
            return JobPage([], None)
        # one row more than asked: whether a next page exists, without a second query
        rows = t.list_jobs(self.catalog.con, t.STATUSES if wanted is None else wanted, after,
                           limit + 1, offset)
        return _page_of([t.job_row(r) for r in rows], limit)

    @_in_turn
    def history_counts(self) -> dict[str, int]:
        """The history's jobs by status: DONE (moved by ``purge_done``) and CANCELLED, and
        any other a hand edit left there."""
        found: dict[str, int] = {}
        if self._exists():
            found = t.history_counts(self.catalog.con)
        return {**{status: 0 for status in t.HISTORY_STATUSES}, **found}

    @_in_turn
    def history_page(self, *, status: str | None = None, limit: int = DEFAULT_LISTED,
                     offset: int = 0, after: int | None = None) -> JobPage:
        """A page of the history (jobs that left the queue: DONE by a purge, CANCELLED), by
        job id as ``page`` lists the queue, each with its ``purged_at``; ``status`` DONE or
        CANCELLED (None: all). Reads only: a read-only store lists it as it lists the queue."""
        if status is not None and status not in t.HISTORY_STATUSES:
            shown = status[:40] if isinstance(status, str) else type(status).__name__
            where = (" (that status is in the queue: list it with page())"
                     if status in t.STATUSES else "")
            raise InvalidInputError(f"history status {shown!r} is not one of "
                                    f"{list(t.HISTORY_STATUSES)}{where}")
        limit, offset, after = _paging(limit, offset, after)
        if not self._exists():
            return JobPage([], None)
        rows = t.list_history(self.catalog.con, None if status is None else [status], after,
                              limit + 1, offset)
        return _page_of(rows, limit)

    @_in_turn
    def attempts(self, job_id: int) -> list[dict[str, Any]]:
        # "7" or None found no row and answered [], as for a job never retried
        job_id = check_int("job_id", job_id, minimum=-(2**63), maximum=2**63 - 1)
        if not self._exists():
            return []
        return t.attempts_of(self.catalog.con, job_id)

    @_in_turn
    def upload_sources_in_use(self) -> set[str]:
        """The files of upload jobs not DONE yet (pending, running, failed or in the DLQ,
        where Retry DLQ reads them again)."""
        return t.upload_sources_in_use(self.catalog.con)

    @_in_turn
    def waiting_uploads(self) -> list[str]:
        """The files of upload jobs the worker has yet to finish (not DONE, not in the DLQ)."""
        return t.waiting_uploads(self.catalog.con)

    def active(self) -> bool:
        counts = self.counts()
        return bool(counts[t.PENDING] or counts[t.RUNNING] or counts[t.FAILED])

"""The jobs tables in the catalog: every statement the job queue runs, values as parameters.

The tables are created on first use by a writer (``CREATE ... IF NOT EXISTS``), so a store
made before the queue existed needs no migration; a read-only open of such a store simply
sees no jobs. They are operational state, not corpus data: snapshots and the Postgres
export leave them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb

from .. import faults

# Statuses, in the order the console shows their counters.
PENDING, RUNNING, DONE, FAILED, DLQ = "PENDING", "RUNNING", "DONE", "FAILED", "DLQ"
STATUSES: tuple[str, ...] = (PENDING, RUNNING, DONE, FAILED, DLQ)
# A status only the history holds: a job a person cancelled before it ran (see CANCEL_COPY).
CANCELLED = "CANCELLED"
# What the history holds: jobs DONE (moved by a purge) and jobs CANCELLED.
HISTORY_STATUSES: tuple[str, ...] = (DONE, CANCELLED)
# Kinds: a file the user named, or a file uploaded through `serve` (kept in the store).
FILE, UPLOAD = "file", "upload"

JOB_COLUMNS = (
    "job_id", "kind", "source", "document_id", "options", "status", "attempts",
    "max_attempts", "last_error", "next_attempt_at", "lease_owner", "lease_until",
    "created_at", "updated_at", "started_at", "finished_at", "documents",
)

DDL: tuple[str, ...] = (
    "CREATE SEQUENCE IF NOT EXISTS jobs_id_seq START 1",
    """CREATE TABLE IF NOT EXISTS jobs (
        job_id BIGINT PRIMARY KEY DEFAULT nextval('jobs_id_seq'),
        kind VARCHAR NOT NULL,            -- file | upload
        source VARCHAR NOT NULL,          -- absolute path read by the worker
        document_id VARCHAR NOT NULL,     -- the id the loader gives the file's document(s)
        options JSON NOT NULL,            -- ingest options (truth level, tags, metadata...)
        status VARCHAR NOT NULL CHECK (status IN ('PENDING','RUNNING','DONE','FAILED','DLQ')),
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL,
        last_error VARCHAR,
        next_attempt_at TIMESTAMP NOT NULL,
        lease_owner VARCHAR,
        lease_until TIMESTAMP,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL,
        started_at TIMESTAMP,
        finished_at TIMESTAMP,
        documents VARCHAR[])""",
    "CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status)",
    # One row per attempt: the schedule a retry followed stays visible after the fact.
    # seq counts every run of the job; attempt restarts at 1 after a Retry DLQ.
    """CREATE TABLE IF NOT EXISTS job_attempts (
        job_id BIGINT NOT NULL,
        seq INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        lease_owner VARCHAR,
        started_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        outcome VARCHAR,                  -- DONE | FAILED | DLQ; NULL while running or if killed
        error VARCHAR,
        next_attempt_at TIMESTAMP,
        PRIMARY KEY (job_id, seq))""",
    """CREATE TABLE IF NOT EXISTS jobs_history (
        job_id BIGINT PRIMARY KEY,
        kind VARCHAR, source VARCHAR, document_id VARCHAR, options JSON, status VARCHAR,
        attempts INTEGER, max_attempts INTEGER, last_error VARCHAR, next_attempt_at TIMESTAMP,
        lease_owner VARCHAR, lease_until TIMESTAMP, created_at TIMESTAMP, updated_at TIMESTAMP,
        started_at TIMESTAMP, finished_at TIMESTAMP, documents VARCHAR[],
        purged_at TIMESTAMP NOT NULL)""",
)

# Every job of one enqueue in one statement, the columns as lists: a row per statement took
# ~1 ms, so a folder of 100,000 files held the writer lock (and serve's searches) ~100 s.
# The ids are drawn first and inserted with their rows, so each job's id is known for sure.
NEXT_JOB_IDS = "SELECT nextval('jobs_id_seq') FROM range(?)"
INSERT_JOBS = (
    "INSERT INTO jobs (job_id, kind, source, document_id, options, status, attempts, "
    "max_attempts, next_attempt_at, created_at, updated_at) "
    "SELECT job_id, kind, source, document_id, options, 'PENDING', 0, max_attempts, ?, ?, ? "
    "FROM (SELECT unnest(?::BIGINT[]) AS job_id, unnest(?::VARCHAR[]) AS kind, "
    "unnest(?::VARCHAR[]) AS source, unnest(?::VARCHAR[]) AS document_id, "
    "unnest(?::VARCHAR[]) AS options, unnest(?::INTEGER[]) AS max_attempts)"
)

# A RUNNING job whose lease ran out belongs to a worker that died: it goes back to the queue.
# Its attempt stays counted (the work may have been half done), its open attempt row is
# closed, so the history shows the lost run, and it waits the backoff a failed attempt waits:
# taken again at once, a file that kills its worker (a loader out of memory on it) restarted
# it in a tight loop. A lost run that was the job's last attempt sends it to the DLQ: such a
# file was otherwise taken again after every restart, attempt 6, 7, ... of 5, for ever.
LEASE_EXPIRED = "worker lease expired (worker stopped mid-job)"
WORKER_GONE = "its worker stopped mid-job (that process is gone)"
LOST_LAST_ATTEMPT = (
    "; that was its last attempt, so it is in the DLQ (a job that stops its worker every "
    "time: look at its source, then `enginelib jobs --retry-dlq`)"
)
# no lease at all (a row edited by hand) never ran out: the job stayed RUNNING for good
EXPIRED_RUNS = (
    "SELECT job_id, lease_owner, attempts, max_attempts FROM jobs WHERE status = 'RUNNING' "
    "AND (lease_until IS NULL OR lease_until < ?) ORDER BY job_id"
)
# The same for a job whose worker is known to be gone, before its lease runs out.
RUNNING_OWNERS = (
    "SELECT job_id, lease_owner, attempts, max_attempts FROM jobs WHERE status = 'RUNNING' "
    "ORDER BY job_id"
)
LOSE_RUN = (
    "UPDATE jobs SET status = ?, lease_owner = NULL, lease_until = NULL, last_error = ?, "
    "next_attempt_at = ?, updated_at = ? WHERE job_id = ? AND status = 'RUNNING' "
    "AND lease_owner IS NOT DISTINCT FROM ? RETURNING job_id"
)
CLOSE_LOST_ATTEMPT = (
    "UPDATE job_attempts SET finished_at = ?, outcome = 'LOST', error = ?, next_attempt_at = ? "
    "WHERE job_id = ? AND finished_at IS NULL"
)

NEXT_DUE = (
    "SELECT job_id FROM jobs WHERE status IN ('PENDING', 'FAILED') AND next_attempt_at <= ? "
    "ORDER BY next_attempt_at, job_id LIMIT 1"
)
# The status test in the WHERE clause makes the claim a compare-and-set: of two claimers
# only one sees its UPDATE return a row. A negative count (a row edited by hand) starts again
# from 0: the backoff of its failure raised "bug in enginelib" and left the job RUNNING.
CLAIM = (
    "UPDATE jobs SET status = 'RUNNING', attempts = greatest(attempts, 0) + 1, lease_owner = ?, "
    "lease_until = ?, started_at = ?, updated_at = ? "
    "WHERE job_id = ? AND status IN ('PENDING', 'FAILED') RETURNING " + ", ".join(JOB_COLUMNS)
)
OPEN_ATTEMPT = (
    "INSERT INTO job_attempts (job_id, seq, attempt, lease_owner, started_at) "
    "SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ? FROM job_attempts WHERE job_id = ?"
)
FINISH_DONE = (
    "UPDATE jobs SET status = 'DONE', lease_owner = NULL, lease_until = NULL, last_error = NULL, "
    "finished_at = ?, updated_at = ?, documents = ? WHERE job_id = ? AND lease_owner = ?"
)
FINISH_FAILED = (
    "UPDATE jobs SET status = ?, lease_owner = NULL, lease_until = NULL, last_error = ?, "
    "next_attempt_at = ?, finished_at = ?, updated_at = ? WHERE job_id = ? AND lease_owner = ?"
)
CLOSE_ATTEMPT = (
    "UPDATE job_attempts SET finished_at = ?, outcome = ?, error = ?, next_attempt_at = ? "
    "WHERE job_id = ? AND finished_at IS NULL"
)
RETRY_DLQ = (
    "UPDATE jobs SET status = 'PENDING', attempts = 0, next_attempt_at = ?, updated_at = ? "
    "WHERE status = 'DLQ' RETURNING job_id"
)
# Dropping: DLQ jobs deleted for good, with their attempts (a person gave up on them). The
# status test makes each a compare-and-set, as the claim is: a job retried meanwhile stays.
DROP_DLQ_JOB = (
    "DELETE FROM jobs WHERE job_id = ? AND status = 'DLQ' RETURNING job_id, kind, source"
)
DROP_DLQ = "DELETE FROM jobs WHERE status = 'DLQ' RETURNING job_id, kind, source"
# The history keeps its own jobs' attempts (an id there is never a queued job's, but a table
# edited by hand could make it one).
DROP_ATTEMPTS = (
    "DELETE FROM job_attempts WHERE job_id IN (SELECT unnest(?::BIGINT[])) "
    "AND job_id NOT IN (SELECT job_id FROM jobs_history)"
)
# Why a job could not be dropped or cancelled: its status in the queue, or in the history
# (DONE, or CANCELLED).
JOB_STATUS = (
    "SELECT status FROM jobs WHERE job_id = ? UNION ALL "
    "SELECT coalesce(status, 'DONE') || ' (in the history)' FROM jobs_history WHERE job_id = ? "
    "LIMIT 1"
)
# Cancelling: a job still waiting (PENDING, or FAILED until its retry) leaves the queue for the
# history as CANCELLED, its attempts kept, so the record of what was queued and given up on
# stays (the retention prunes it as it prunes DONE ones). Not a status of the jobs table: its
# CHECK constraint, in every store made so far, allows none but the five, and a RUNNING job is
# never cancelled (its worker holds it). The status test makes it a compare-and-set against
# the claim: a job claimed first is RUNNING, and neither statement touches it.
_WAITING = "status IN ('PENDING', 'FAILED')"
# The columns the history's copy takes anew (the rest are copied): a reason, and the times
# now, in the order CANCEL_COPY's parameters give them.
_CANCELLED_VALUES = {
    "status": "'CANCELLED'",
    "last_error": ("'cancelled while ' || status "
                   "|| coalesce('; its last attempt failed: ' || last_error, '')"),
    "updated_at": "?::TIMESTAMP",
    "finished_at": "?::TIMESTAMP",
}
CANCEL_COPY = (
    "INSERT INTO jobs_history (" + ", ".join(JOB_COLUMNS) + ", purged_at) SELECT "
    + ", ".join(_CANCELLED_VALUES.get(column, column) for column in JOB_COLUMNS)
    + ", ? FROM jobs WHERE job_id = ? AND " + _WAITING + " RETURNING job_id"
)
CANCEL_DELETE = (
    "DELETE FROM jobs WHERE job_id = ? AND " + _WAITING + " RETURNING job_id, kind, source"
)
# A job still waiting for a document deleted since: run, it would bring the document back.
# RUNNING counts as waiting: whoever deletes holds the store's one writer lock, so no worker
# is running it; it was left by a dead one and would run again once taken back.
_TO_DLQ = (
    "UPDATE jobs SET status = 'DLQ', last_error = ?, next_attempt_at = ?, updated_at = ?, "
    "lease_owner = NULL, lease_until = NULL "
)
# Jobs a person must look at before they run (see shape._renumber_history).
HOLD = (
    _TO_DLQ + "WHERE job_id IN (SELECT unnest(?::BIGINT[])) "
    "AND status IN ('PENDING', 'FAILED', 'RUNNING') RETURNING job_id"
)
CANCEL_QUEUED = (
    _TO_DLQ + "WHERE document_id IN (SELECT unnest(?::VARCHAR[])) "
    "AND status IN ('PENDING', 'FAILED', 'RUNNING') RETURNING job_id"
)
# Older jobs of a document still waiting when a newer one is DONE: run later (a retry), they
# would put back the content the newer job replaced. RUNNING ones too, as above: the worker
# finishing the newer job is the store's one writer.
SUPERSEDE_OLDER = (
    _TO_DLQ + "WHERE document_id = ? AND job_id < ? "
    "AND status IN ('PENDING', 'FAILED', 'RUNNING') RETURNING job_id"
)
# The open attempt of a job so sent to the DLQ while RUNNING: its run was lost.
CLOSE_CANCELLED_ATTEMPTS = (
    "UPDATE job_attempts SET finished_at = ?, outcome = 'LOST', error = ? "
    "WHERE job_id IN (SELECT unnest(?::BIGINT[])) AND finished_at IS NULL"
)
# Columns named, not by position: a history table whose columns stand in another order (a
# rebuilt or hand-made one) took each value into the wrong column, or failed on a type.
COPY_DONE_TO_HISTORY = (
    "INSERT INTO jobs_history (" + ", ".join(JOB_COLUMNS) + ", purged_at) SELECT "
    + ", ".join(JOB_COLUMNS) + ", ? FROM jobs WHERE status = 'DONE'"
)
DELETE_DONE = "DELETE FROM jobs WHERE status = 'DONE' RETURNING job_id"
# Retention (queue.Retention): a finished job is kept ``keep_days`` after it finished, in the
# queue or the history, and the history keeps its newest ``keep_rows``. Only DONE jobs go:
# a job in the DLQ (or still waiting) stays until a person acts on it. A row without its
# finish time (a hand edit) counts from its last change, or from its purge.
PRUNE_DONE = (
    "DELETE FROM jobs WHERE status = 'DONE' AND coalesce(finished_at, updated_at) < ? "
    "RETURNING job_id"
)
PRUNE_OLD_HISTORY = (
    "DELETE FROM jobs_history WHERE coalesce(finished_at, purged_at) < ? RETURNING job_id"
)
PRUNE_HISTORY_BEYOND = (
    "DELETE FROM jobs_history WHERE job_id IN (SELECT job_id FROM jobs_history "
    "ORDER BY coalesce(finished_at, purged_at) DESC, job_id DESC OFFSET ?) RETURNING job_id"
)
# The attempts of jobs no table holds any more: they went with their job.
PRUNE_ORPHAN_ATTEMPTS = (
    "DELETE FROM job_attempts WHERE job_id NOT IN (SELECT job_id FROM jobs) "
    "AND job_id NOT IN (SELECT job_id FROM jobs_history) RETURNING job_id"
)
COUNTS = "SELECT status, count(*) FROM jobs GROUP BY status"
# ``job_id > after`` is the keyset page: an offset counts rows, so a purge (or a job
# queued) between two pages shifted every later row and the next page skipped or repeated.
LIST_JOBS = (
    "SELECT " + ", ".join(JOB_COLUMNS) + " FROM jobs "
    "WHERE status IN (SELECT unnest(?::VARCHAR[])) AND (?::BIGINT IS NULL OR job_id > ?) "
    "ORDER BY job_id LIMIT ? OFFSET ?"
)
GET_JOB = "SELECT " + ", ".join(JOB_COLUMNS) + " FROM jobs WHERE job_id = ?"
ATTEMPTS_OF = (
    "SELECT job_id, seq, attempt, lease_owner, started_at, finished_at, outcome, error, "
    "next_attempt_at FROM job_attempts WHERE job_id = ? ORDER BY seq"
)
# When the worker next has something to do: a retry falling due, or a lease running out.
NEXT_WAKE = (
    "SELECT min(CASE WHEN status = 'RUNNING' THEN lease_until ELSE next_attempt_at END) "
    "FROM jobs WHERE status IN ('PENDING', 'FAILED', 'RUNNING')"
)
HISTORY_COUNT = "SELECT count(*) FROM jobs_history"
# A history row without a status (a hand edit) is read as DONE, as JOB_STATUS reads it.
_HISTORY_STATUS = "coalesce(status, 'DONE')"
HISTORY_COUNTS = f"SELECT {_HISTORY_STATUS}, count(*) FROM jobs_history GROUP BY 1"
# The history paged as the queue is (LIST_JOBS): by id, keyset ``after`` or an offset; NULL
# statuses (None) list every row, whatever its status.
LIST_HISTORY = (
    "SELECT " + ", ".join(_HISTORY_STATUS if c == "status" else c for c in JOB_COLUMNS)
    + ", purged_at FROM jobs_history "
    f"WHERE (?::VARCHAR[] IS NULL OR {_HISTORY_STATUS} IN (SELECT unnest(?::VARCHAR[]))) "
    "AND (?::BIGINT IS NULL OR job_id > ?) ORDER BY job_id LIMIT ? OFFSET ?"
)
TABLE_EXISTS = (
    "SELECT count(*) FROM information_schema.tables WHERE table_name = 'jobs'"
)


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    for statement in DDL:
        con.execute(statement)


def tables_exist(con: duckdb.DuckDBPyConnection) -> bool:
    rows = con.execute(TABLE_EXISTS).fetchall()
    row = rows[0] if rows else None
    return bool(row and row[0])


def rows_as_dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def job_row(values: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(JOB_COLUMNS, values, strict=True))


def as_naive(moment: datetime) -> datetime:
    """DuckDB TIMESTAMP is naive UTC: drop tzinfo after converting."""
    if moment.tzinfo is not None:
        from datetime import UTC

        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


# -- the statements, run: the queue calls these, never ``execute`` itself ----------------------
# Each takes the connection (inside the queue's transaction where it writes) and the
# statement's parameters in the order the statement above names them.

Params = Sequence[Any]


def insert_jobs(con: duckdb.DuckDBPyConnection, columns: Sequence[Sequence[Any]],
                params: Params) -> list[int]:
    """Insert jobs given as five columns (kinds, sources, document ids, options as JSON,
    max attempts); ``params``: three times now. Returns their ids, in the order given."""
    if not columns[0]:
        return []
    ids = sorted(int(row[0]) for row in con.execute(NEXT_JOB_IDS, [len(columns[0])]).fetchall())
    con.execute(INSERT_JOBS, [*params, ids, *(list(c) for c in columns)])
    return ids


def expired_runs(con: duckdb.DuckDBPyConnection, now: datetime) -> list[tuple[Any, ...]]:
    """RUNNING jobs whose lease ran out before ``now``: (job_id, owner, attempts, max)."""
    return con.execute(EXPIRED_RUNS, [now]).fetchall()


def running_owners(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Every RUNNING job: (job_id, owner, attempts, max)."""
    return con.execute(RUNNING_OWNERS).fetchall()


def lose_run(con: duckdb.DuckDBPyConnection, now: datetime, job_id: int, owner: str | None,
             status: str, error: str, next_at: datetime | None) -> bool:
    """A RUNNING job (still under ``owner``) whose worker stopped: to ``status`` (FAILED until
    ``next_at``, or DLQ), its open attempt closed as LOST. False if it was not running."""
    params = [status, error, now if next_at is None else next_at, now, job_id, owner]
    if not con.execute(LOSE_RUN, params).fetchall():
        return False
    con.execute(CLOSE_LOST_ATTEMPT, [now, error, next_at, job_id])
    return True


def next_due(con: duckdb.DuckDBPyConnection, params: Params) -> tuple[Any, ...] | None:
    rows = con.execute(NEXT_DUE, list(params)).fetchall()
    return rows[0] if rows else None


def claim(con: duckdb.DuckDBPyConnection, params: Params) -> tuple[Any, ...] | None:
    rows = con.execute(CLAIM, list(params)).fetchall()
    return rows[0] if rows else None


def open_attempt(con: duckdb.DuckDBPyConnection, params: Params) -> None:
    con.execute(OPEN_ATTEMPT, list(params))


def finish_done(con: duckdb.DuckDBPyConnection, params: Params) -> None:
    con.execute(FINISH_DONE, list(params))


def supersede_older(con: duckdb.DuckDBPyConnection, params: Params) -> list[int]:
    """Params: reason, now, now, document id, the newer job's id."""
    ids = [int(row[0]) for row in con.execute(SUPERSEDE_OLDER, list(params)).fetchall()]
    _close_cancelled(con, ids, params[1], params[0])
    return ids


def _close_cancelled(con: duckdb.DuckDBPyConnection, ids: list[int], now: Any,
                     reason: Any) -> None:
    if ids:
        con.execute(CLOSE_CANCELLED_ATTEMPTS, [now, reason, ids])


def finish_failed(con: duckdb.DuckDBPyConnection, params: Params) -> None:
    con.execute(FINISH_FAILED, list(params))


def close_attempt(con: duckdb.DuckDBPyConnection, params: Params) -> None:
    con.execute(CLOSE_ATTEMPT, list(params))


def retry_dlq(con: duckdb.DuckDBPyConnection, params: Params) -> int:
    return len(con.execute(RETRY_DLQ, list(params)).fetchall())


def drop_dlq(con: duckdb.DuckDBPyConnection, job_id: int | None) -> list[tuple[int, str, str]]:
    """Delete the DLQ job ``job_id`` (None: every DLQ job) and its attempts, inside the
    caller's transaction; returns (job_id, kind, source) of each job deleted."""
    rows = (con.execute(DROP_DLQ, []) if job_id is None
            else con.execute(DROP_DLQ_JOB, [job_id])).fetchall()
    dropped = [(int(row[0]), str(row[1]), str(row[2])) for row in rows]
    faults.crash_point("mid_job_drop")
    if dropped:
        con.execute(DROP_ATTEMPTS, [[row[0] for row in dropped]])
    return dropped


def cancel(con: duckdb.DuckDBPyConnection, job_id: int, now: datetime
           ) -> tuple[int, str, str] | None:
    """Move job ``job_id``, if still waiting, to the history as CANCELLED, inside the caller's
    transaction; returns its (job_id, kind, source), or None when it was not waiting."""
    if not con.execute(CANCEL_COPY, [now, now, now, job_id]).fetchall():
        return None
    faults.crash_point("mid_job_cancel")
    rows = con.execute(CANCEL_DELETE, [job_id]).fetchall()
    return (int(rows[0][0]), str(rows[0][1]), str(rows[0][2])) if rows else None


def job_status(con: duckdb.DuckDBPyConnection, job_id: int) -> str | None:
    """The status of job ``job_id``; None when neither the queue nor the history has it."""
    rows = con.execute(JOB_STATUS, [job_id, job_id]).fetchall()
    return str(rows[0][0]) if rows else None


def hold(con: duckdb.DuckDBPyConnection, params: Params) -> list[int]:
    """Params: reason, now, now, job ids. Those still waiting (or left RUNNING) go to the DLQ
    with the reason, an open attempt closed as lost."""
    ids = [int(row[0]) for row in con.execute(HOLD, list(params)).fetchall()]
    _close_cancelled(con, ids, params[1], params[0])
    return ids


def cancel_queued(con: duckdb.DuckDBPyConnection, params: Params) -> list[int]:
    """Params: reason, now, now, document ids. A store that never queued has no jobs table."""
    if not tables_exist(con):
        return []
    ids = [int(row[0]) for row in con.execute(CANCEL_QUEUED, list(params)).fetchall()]
    _close_cancelled(con, ids, params[1], params[0])
    return ids


# Upload files a job may still read: its own, until the job is DONE.
UPLOAD_SOURCES_IN_USE = "SELECT source FROM jobs WHERE kind = 'upload' AND status <> 'DONE'"


# Upload files waiting for the worker: queued, running, or failed and waiting for a retry.
WAITING_UPLOADS = (
    "SELECT source FROM jobs WHERE kind = 'upload' AND status IN ('PENDING', 'FAILED', 'RUNNING')"
)


def waiting_uploads(con: duckdb.DuckDBPyConnection) -> list[str]:
    if not tables_exist(con):
        return []
    return [str(row[0]) for row in con.execute(WAITING_UPLOADS).fetchall()]


def upload_sources_in_use(con: duckdb.DuckDBPyConnection) -> set[str]:
    if not tables_exist(con):
        return set()
    return {str(row[0]) for row in con.execute(UPLOAD_SOURCES_IN_USE).fetchall()}


def purge_done(con: duckdb.DuckDBPyConnection, params: Params) -> int:
    """Copy DONE jobs to the history, then delete them; returns how many moved."""
    con.execute(COPY_DONE_TO_HISTORY, list(params))
    return len(con.execute(DELETE_DONE).fetchall())


def prune(con: duckdb.DuckDBPyConnection, before: datetime, keep_rows: int) -> tuple[int, int, int]:
    """Delete the DONE jobs finished before ``before`` (queued or in the history), the history
    past its newest ``keep_rows``, and the attempts of every job so deleted; inside the
    caller's transaction. Returns how many (jobs, history rows, attempt rows) went."""
    done = len(con.execute(PRUNE_DONE, [before]).fetchall())
    history = len(con.execute(PRUNE_OLD_HISTORY, [before]).fetchall())
    faults.crash_point("mid_job_prune")
    history += len(con.execute(PRUNE_HISTORY_BEYOND, [keep_rows]).fetchall())
    attempts = len(con.execute(PRUNE_ORPHAN_ATTEMPTS).fetchall())
    return done, history, attempts


def status_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {s: int(n) for s, n in con.execute(COUNTS).fetchall()}


def next_wake(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    rows = con.execute(NEXT_WAKE).fetchall()
    return rows[0] if rows else None


def history_count(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    rows = con.execute(HISTORY_COUNT).fetchall()
    return rows[0] if rows else None


def history_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {str(s): int(n) for s, n in con.execute(HISTORY_COUNTS).fetchall()}


def list_history(con: duckdb.DuckDBPyConnection, statuses: Sequence[str] | None,
                 after: int | None, limit: int, offset: int) -> list[dict[str, Any]]:
    """History rows in ``statuses`` (None: all) by id, paged as ``list_jobs`` pages; each
    a job row with its ``purged_at`` (when it left the queue)."""
    wanted = None if statuses is None else list(statuses)
    rows = con.execute(LIST_HISTORY, [wanted, wanted, after, after, limit, offset]).fetchall()
    return [dict(zip((*JOB_COLUMNS, "purged_at"), row, strict=True)) for row in rows]


def list_jobs(con: duckdb.DuckDBPyConnection, statuses: Sequence[str], after: int | None,
              limit: int, offset: int) -> list[tuple[Any, ...]]:
    """Jobs in ``statuses`` by id: those past ``after`` (None: from the first), ``offset``
    of them skipped, at most ``limit``."""
    return con.execute(LIST_JOBS, [list(statuses), after, after, limit, offset]).fetchall()


def attempts_of(con: duckdb.DuckDBPyConnection, job_id: int) -> list[dict[str, Any]]:
    return rows_as_dicts(con.execute(ATTEMPTS_OF, [job_id]))

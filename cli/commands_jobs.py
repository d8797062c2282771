"""`enginelib worker` and `enginelib jobs`, and the `--queue` path of `enginelib ingest`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from enginelib import StoreLockedError
from enginelib.core.lock import clear_holder, note_holder
from enginelib.jobs import (
    DEFAULT_LEASE_S,
    DEFAULT_MAX_ATTEMPTS,
    Worker,
    inbox,
    jobs_for_paths,
)
from enginelib.jobs.queue import (
    DEFAULT_KEEP_DAYS,
    DEFAULT_KEEP_ROWS,
    DEFAULT_LISTED,
    MAX_ATTEMPTS,
    MAX_KEEP_DAYS,
    MAX_KEEP_ROWS,
    MAX_LEASE_S,
    MAX_POLL_S,
    Retention,
)
from enginelib.jobs.table import CANCELLED, HISTORY_STATUSES, STATUSES
from enginelib.jobs.times import with_utc_times
from enginelib.validation import MAX_LIST_OFFSET, MAX_LISTED

from .options import (
    CommandError,
    FiniteRange,
    Integer,
    emit_json,
    handle_errors,
    json_option,
    open_store,
    printable,
    store_option_or_argument,
)


def store_argument(func: Any) -> Any:
    """``--store PATH`` or the store as first argument (see ``store_option_or_argument``)."""
    return store_option_or_argument(func)


def retention_options(func: Any) -> Any:
    """``--keep-days`` and ``--keep-rows``: what the prune of finished jobs keeps."""
    func = click.option(
        "--keep-rows", type=Integer(0, MAX_KEEP_ROWS), default=DEFAULT_KEEP_ROWS,
        show_default=True, help="Rows of the jobs history the prune keeps (the newest).")(func)
    return click.option(
        "--keep-days", type=FiniteRange(0, MAX_KEEP_DAYS), default=DEFAULT_KEEP_DAYS,
        show_default=True, help="Days a DONE job is kept after it finished, queued or in the "
        "history, before the prune deletes it (DLQ and waiting jobs are never pruned).")(func)


def enqueue_paths(
    store_path: Path, paths: Sequence[Path], *, include: Sequence[str], exclude: Sequence[str],
    options: dict[str, Any], vector_dim: int | None = None, embedder: str | None = None,
    max_attempts: int | None = None,
) -> dict[str, Any]:
    """Enqueue and return; into the jobs table, or the inbox while another process writes.

    ``vector_dim``/``embedder`` choose the model of a store this creates (the worker embeds
    with the store's), and must match an existing store's, as for a direct ingest.
    ``max_attempts`` None leaves it to the queue (the worker's setting, for the inbox)."""
    try:
        store = open_store(store_path, create=True, vector_dim=vector_dim, embedder=embedder)
    except StoreLockedError:
        jobs = [replace(job, max_attempts=max_attempts)
                for job in jobs_for_paths(paths, options, include=include, exclude=exclude,
                                          skip_folders=(store_path,))]
        inbox.drop(store_path, jobs)
        return {"queued": len(jobs), "job_ids": [], "via": "inbox"}
    with store:
        ids = store.enqueue_paths(*paths, include=include, exclude=exclude,
                                  max_attempts=max_attempts, **options)
    return {"queued": len(ids), "job_ids": ids, "via": "catalog"}


@click.command("worker")
@store_argument
@click.option("--forever", is_flag=True, help="Keep polling for jobs instead of stopping when idle.")
@click.option("--max-attempts", type=Integer(1, MAX_ATTEMPTS), default=DEFAULT_MAX_ATTEMPTS,
              show_default=True, help="Attempts before the DLQ for the jobs it takes from the "
              "inbox that name none; a job keeps the number it was queued with.")
@click.option("--lease", "lease_s", type=FiniteRange(0.01, MAX_LEASE_S), default=DEFAULT_LEASE_S,
              show_default=True, help="Seconds a claimed job stays ours; a dead worker's job "
              "returns to PENDING after it.")
@click.option("--poll", "poll_s", type=FiniteRange(0.01, MAX_POLL_S), default=1.0, show_default=True,
              help="Seconds between polls when idle (--forever).")
@click.option("--time-unit", type=FiniteRange(1e-6, 1e3), default=1.0, hidden=True,
              help="Length of one backoff second (tests shrink it).")
@retention_options
@json_option
@handle_errors
def worker(store_path: Path, forever: bool, max_attempts: int, lease_s: float, poll_s: float,
           time_unit: float, keep_days: float, keep_rows: int, as_json: bool) -> None:
    """Process queued ingestion jobs (until none is due, or --forever).

    When nothing is due it prunes old finished jobs (at most hourly; see --keep-days).
    Exits 1 when a job of this run failed (to be retried later, or moved to the DLQ), so a
    cron line or a script sees it; 0 when every job it took is done."""
    with open_store(store_path) as store:
        queue = store.jobs(max_attempts=max_attempts, lease_s=lease_s, time_unit=time_unit,
                           retention=Retention(keep_days, keep_rows))
        runner = Worker(store, queue)
        if forever:
            stop = threading.Event()
            note_holder(store.path, "`enginelib worker --forever`",
                        "`enginelib ingest --queue` hands it files; stop it for other writes")
            try:
                with _stopped_by_sigterm(stop, runner.wake):
                    runner.run_forever(stop, poll_s)
            except KeyboardInterrupt:
                stop.set()
            finally:
                clear_holder(store.path)
            return
        outcomes = runner.run_until_idle()
        counts = queue.counts()
    failed = sum(1 for o in outcomes if o.status != "DONE")
    if as_json:
        emit_json({"processed": [o.__dict__ for o in outcomes], "counts": counts})
    else:
        for o in outcomes:
            tail = f": {o.error}" if o.error else ""
            click.echo(f"job {o.job_id} {o.status} (attempt {o.attempts}) "
                       f"{printable(o.source + tail)}")
        click.echo(_counts_line(counts))
    if failed:
        # a cron line saw exit 0 while its files went to the DLQ one by one
        if not as_json:
            click.echo(f"{failed} of {len(outcomes)} jobs failed this run (see `enginelib jobs "
                       "--status DLQ`; `--retry-dlq` queues them again)", err=True)
        raise SystemExit(1)


@click.command("jobs")
@store_argument
@click.option("--retry-dlq", is_flag=True, help="Put DLQ jobs back to PENDING (fresh attempts).")
@click.option("--drop-dlq", is_flag=True, help="Delete every DLQ job and its attempts for good "
              "(an uploaded file too); --retry-dlq runs them again instead.")
@click.option("--drop", "drop_id", type=Integer(0, 2**63 - 1), default=None,
              metavar="JOB_ID", help="Delete this DLQ job and its attempts for good (an "
              "uploaded file too); a job not in the DLQ, or no such job, is an error.")
@click.option("--cancel", "cancel_id", type=Integer(0, 2**63 - 1), default=None,
              metavar="JOB_ID", help="Cancel this job before it runs (PENDING, or FAILED "
              "until its retry): it goes to the history as CANCELLED (an uploaded file is "
              "deleted); a job running, DONE or in the DLQ, or no such job, is an error.")
@click.option("--purge-done", is_flag=True, help="Move DONE jobs to the history table.")
@click.option("--prune", is_flag=True, help="Delete the DONE jobs older than --keep-days "
              "(queued or in the history) and history rows past --keep-rows, with their "
              "attempts; the worker does it by itself when idle.")
@click.option("--history", "list_history", is_flag=True, help="List the history (jobs DONE "
              "and moved there by --purge-done, or cancelled) instead of the queue, paged as "
              "the queue is.")
@click.option("--status", type=click.Choice([*STATUSES, CANCELLED]), default=None,
              help="Only jobs with this status (with --history: DONE or CANCELLED).")
@click.option("--limit", type=Integer(1, MAX_LISTED), default=DEFAULT_LISTED,
              show_default=True, help="At most this many jobs, oldest first.")
@click.option("--offset", type=Integer(0, MAX_LIST_OFFSET), default=0, show_default=True,
              help="Skip this many jobs first (the next page: --offset LIMIT); a purge or a "
              "job queued between two pages makes the next skip or repeat jobs: use --after.")
@click.option("--after", type=Integer(-(2**63), 2**63 - 1), default=None,
              metavar="JOB_ID", help="Only jobs with a larger id (the next page: --after the "
              "last id listed, `next_after` in --json); stays right when jobs are purged or "
              "queued between pages (with --history: a job purged or cancelled meanwhile with "
              "a smaller id is on none of the next pages).")
@retention_options
@json_option
@handle_errors
def jobs(store_path: Path, retry_dlq: bool, drop_dlq: bool, drop_id: int | None,
         cancel_id: int | None, purge_done: bool, prune: bool, list_history: bool,
         status: str | None, limit: int, offset: int, after: int | None, keep_days: float,
         keep_rows: int, as_json: bool) -> None:
    """Job counts by status and the jobs (--history: the jobs done or cancelled); --cancel,
    --retry-dlq, --drop-dlq, --drop, --purge-done and --prune act first."""
    _check_status(status, list_history)
    actions: dict[str, int] = {}
    dlq_actions = [name for name, given in (("--retry-dlq", retry_dlq), ("--drop-dlq", drop_dlq),
                                            ("--drop", drop_id is not None)) if given]
    if len(dlq_actions) > 1:  # retried then dropped, or dropped then nothing to retry
        raise click.UsageError(f"give only one of {' and '.join(dlq_actions)}: each acts on the DLQ")
    if cancel_id is not None and dlq_actions:  # a refused cancel would leave the other done
        raise click.UsageError(f"give --cancel alone, not with {dlq_actions[0]}")
    if dlq_actions or cancel_id is not None or purge_done or prune:
        try:
            store = open_store(store_path)
        except StoreLockedError as exc:
            if "worker --forever" in str(exc):  # the holder note says what to do
                raise CommandError(str(exc)) from exc
            raise CommandError(
                f"{exc}; while `enginelib serve` runs, use its console buttons or POST "
                "/api/jobs/retry-dlq, /api/jobs/drop-dlq, /api/jobs/purge-done and "
                "/api/jobs/JOB_ID/cancel, or DELETE /api/jobs/JOB_ID (serve prunes by itself)"
            ) from exc
        with store:
            queue = store.jobs(retention=Retention(keep_days, keep_rows))
            # the drop or cancel first: refused (no such job, or not in a status it takes),
            # it leaves all as it was
            if cancel_id is not None:
                actions["cancelled"] = queue.cancel(cancel_id)
            if drop_id is not None:
                actions["dropped"] = queue.drop(drop_id)
            if drop_dlq:
                actions["dropped"] = queue.drop_dlq()
            if retry_dlq:
                actions["retried"] = queue.retry_dlq()
            if purge_done:
                actions["purged"] = queue.purge_done()
            if prune:
                pruned = queue.prune()
                actions["pruned_jobs"], actions["pruned_history"] = pruned.jobs, pruned.history
    if list_history:
        _list_history(store_path, actions, status, limit, offset, after, as_json)
        return
    with open_store(store_path, read_only=True) as store:
        queue = store.jobs()
        counts, history = queue.counts(), queue.history_count()
        page = queue.page(status=status, limit=limit, offset=offset, after=after)
        rows = page.jobs
    waiting = inbox.pending(store_path)
    # Jobs the worker could not queue from the inbox: nothing else tells whoever queued them.
    refused = [str(path) for path in inbox.set_aside(store_path)]
    total = counts[status] if status else sum(counts.values())
    if as_json:
        emit_json({**actions, "counts": counts, "inbox": waiting, "inbox_set_aside": refused,
                   "history": history, "total": total, "limit": limit, "offset": offset,
                   "after": after, "next_after": page.next_after,
                   "jobs": [with_utc_times(job) for job in rows]})
        return
    for name, value in actions.items():
        click.echo(f"{name} {value}")
    click.echo(_counts_line(counts) + (f" | inbox {waiting}" if waiting else "")
               + f" | history {history}")
    if refused:
        click.echo(printable(
            f"{len(refused)} inbox file(s) set aside, their jobs not queued (the worker logged "
            f"why; queue those files again, then delete these): {', '.join(refused)}"))
    _echo_rows(rows)
    if page.next_after is not None:  # the 1000 listed read as all the jobs there were
        shown = "" if after is not None else f"jobs {offset + 1}-{offset + len(rows)} of {total}; "
        click.echo(f"({shown}the next ones: --after {page.next_after})")


def _check_status(status: str | None, list_history: bool) -> None:
    """``--status`` names a status of the list asked for: the queue's five, or the
    history's DONE and CANCELLED."""
    if list_history and status is not None and status not in HISTORY_STATUSES:
        raise click.UsageError(f"the history holds DONE and CANCELLED jobs only; {status} jobs "
                               f"are queued: leave out --history to list them")
    if not list_history and status == CANCELLED:
        raise click.UsageError("cancelled jobs leave the queue for the history: add --history "
                               "to list them")


def _list_history(store_path: Path, actions: dict[str, int], status: str | None, limit: int,
                  offset: int, after: int | None, as_json: bool) -> None:
    """``jobs --history``: the history's counts and a page of it, as ``jobs`` shows the
    queue's (read-only: a store on a read-only medium lists it too)."""
    with open_store(store_path, read_only=True) as store:
        queue = store.jobs()
        counts = queue.history_counts()
        page = queue.history_page(status=status, limit=limit, offset=offset, after=after)
    rows = page.jobs
    total = counts[status] if status else sum(counts.values())
    if as_json:
        emit_json({**actions, "counts": counts, "total": total, "limit": limit,
                   "offset": offset, "after": after, "next_after": page.next_after,
                   "jobs": [with_utc_times(job) for job in rows]})
        return
    for name, value in actions.items():
        click.echo(f"{name} {value}")
    click.echo("history: " + _counts_line(counts))
    _echo_rows(rows, width=len(CANCELLED))
    if page.next_after is not None:
        shown = "" if after is not None else f"jobs {offset + 1}-{offset + len(rows)} of {total}; "
        click.echo(f"({shown}the next ones: --history --after {page.next_after})")


def _echo_rows(rows: Sequence[dict[str, Any]], width: int = 7) -> None:
    """One line a job: id, status (in ``width`` columns: the history's CANCELLED takes 9),
    attempts, its retry time while FAILED, source and error."""
    for job in rows:
        when = f" next {_utc_time(job['next_attempt_at'])}" if job["status"] == "FAILED" else ""
        error = f"  {job['last_error']}" if job["last_error"] and job["status"] != "DONE" else ""
        tries = f"{job['attempts']}/{job['max_attempts']}"
        click.echo(f"{job['job_id']:>5} {job['status']:<{width}} {tries}"
                   f"{when}  {printable(str(job['source']) + error)}")


@contextmanager
def _stopped_by_sigterm(stop: threading.Event, wake: threading.Event) -> Iterator[None]:
    """SIGTERM (`docker stop`, systemd, kill) ends the loop after the job in hand, as Ctrl-C
    does: by default it killed the worker mid-job, a lost run retried only after its
    backoff, and left its holder note behind."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler (CliRunner in a thread, say)
        return

    def on_term(_signum: int, _frame: object) -> None:
        stop.set()
        wake.set()  # out of an idle wait at once

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _utc_time(moment: datetime) -> str:
    """A retry time, said to be UTC (the catalog's times are): a bare "14:05:00" read as local
    time was hours off, and past midnight the day was missing."""
    today = datetime.now(UTC).date()
    return f"{moment:%H:%M:%S} UTC" if moment.date() == today else f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def _counts_line(counts: dict[str, int]) -> str:
    return "  ".join(f"{status} {count}" for status, count in counts.items())

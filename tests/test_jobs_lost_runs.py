"""A lost run (its worker died mid-job) is retried on the backoff a failed attempt gets."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from enginelib.catalog import utcnow
from enginelib.cli.main import main
from enginelib.jobs import DLQ, DONE, FAILED, RUNNING, Worker, retry_delay
from tests.helpers import Clock, open_test_store, paragraphs


def half() -> float:
    return 0.5


@pytest.mark.parametrize("how", ["lease expired", "worker gone"])
def test_each_lost_run_waits_the_delay_a_failed_attempt_would(tmp_path: Path, how: str) -> None:
    """A job whose worker died went back to PENDING due at once: a file that kills its worker
    (a loader out of memory on it) restarted it in a tight loop, its attempts spent in
    seconds, where a failed attempt waits 30 s, then 60 s, 120 s..."""
    (source := tmp_path / "a.md").write_text("# A\n\n" + paragraphs(2), encoding="utf-8")
    clock = Clock()
    dead = f"{socket.gethostname()}:{os.getpid()}:dead0"  # no live worker of this process
    with open_test_store(tmp_path / "store") as store:
        [job_id] = store.enqueue_paths(source, max_attempts=4)
        queue = store.jobs(clock=clock, rand=half, lease_s=10, time_unit=2.0)
        for attempt in (1, 2, 3):
            assert queue.claim(dead) is not None
            clock.advance(11)
            lost = queue.expire_leases() if how == "lease expired" else queue.reclaim_orphans(
                lambda owner: owner == dead)
            assert lost == [job_id]
            [job] = queue.jobs()
            delay = retry_delay(attempt, half) * 2.0  # time_unit scales it, as for a failure
            assert (job["status"], job["attempts"]) == (FAILED, attempt)
            assert job["next_attempt_at"] == clock.now + timedelta(seconds=delay)
            assert queue.attempts(job_id)[-1]["next_attempt_at"] == job["next_attempt_at"]
            clock.advance(delay - 1)
            assert queue.claim("w2") is None  # not before its time
            clock.advance(1)
        outcome = Worker(store, queue, owner="w2").run_once()
        assert outcome is not None and (outcome.status, outcome.attempts) == (DONE, 4)
        assert [a["outcome"] for a in queue.attempts(job_id)] == ["LOST", "LOST", "LOST", DONE]


def test_a_lost_last_attempt_goes_to_the_dlq_with_no_retry_scheduled(tmp_path: Path) -> None:
    (source := tmp_path / "a.md").write_text("# A\n\n" + paragraphs(2), encoding="utf-8")
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        [job_id] = store.enqueue_paths(source, max_attempts=1)
        queue = store.jobs(clock=clock, lease_s=10)
        assert queue.claim("elsewhere:1:w") is not None
        clock.advance(11)
        assert queue.expire_leases() == [job_id]
        [job] = queue.jobs()
        assert job["status"] == DLQ and "last attempt" in job["last_error"]
        assert queue.attempts(job_id)[-1]["next_attempt_at"] is None


def test_the_job_list_says_when_a_lost_run_is_retried(tmp_path: Path) -> None:
    (source := tmp_path / "a.md").write_text("# A\n\n" + paragraphs(2), encoding="utf-8")
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(source)
        queue = store.jobs(clock=clock, rand=half, lease_s=10)
        assert queue.claim("elsewhere:1:w") is not None
        clock.advance(11)
        queue.expire_leases()
        assert queue.counts()[RUNNING] == 0
        due = queue.jobs()[0]["next_attempt_at"]
    out = CliRunner().invoke(main, ["jobs", str(tmp_path / "store")]).output
    when = f"{due:%H:%M:%S}" if due.date() == utcnow().date() else f"{due:%Y-%m-%d %H:%M:%S}"
    assert f"    1 FAILED  1/5 next {when} UTC  {source}  worker lease expired" in out


def test_a_retry_time_in_the_list_says_utc_and_its_day_when_not_today(tmp_path: Path) -> None:
    """It said "next 14:05:00": read as local time, hours off; for a retry after midnight,
    on the wrong day."""
    (source := tmp_path / "a.md").write_text("# A\n\n" + paragraphs(2), encoding="utf-8")
    clock = Clock()
    clock.now = datetime(2031, 3, 4, 5, 6, 7)
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(source)
        queue = store.jobs(clock=clock, rand=half, lease_s=10)
        assert queue.claim("elsewhere:1:w") is not None
        clock.advance(11)
        queue.expire_leases()  # due 30 + 5 s after 05:06:18
    out = CliRunner().invoke(main, ["jobs", str(tmp_path / "store")]).output
    assert "    1 FAILED  1/5 next 2031-03-04 05:06:53 UTC  " in out

"""Cancelling a job still waiting (PENDING, or FAILED until its retry): it leaves the queue for
the history as CANCELLED with its attempts, an upload's file goes, and no worker runs it; a
job running, done, in the DLQ or unknown is a typed error; a cancel killed halfway cancelled
nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main
from enginelib.errors import JobNotFoundError, JobStateError, ReadOnlyStoreError
from enginelib.jobs import DLQ, DONE, FAILED, PENDING, RUNNING, NewJob, Retention, Worker
from tests.helpers import (
    SMALL_CHUNKS,
    catalog_rows,
    disk_full,
    open_test_store,
    paragraphs,
    write_upload,
)
from tests.test_serve_sharing import WAIT_S, HeldEmbedder

ROOT = Path(__file__).resolve().parents[1]
ENV = {"ENGINELIB_EMBEDDER": "hashing"}
TABLES = ("jobs", "job_attempts", "jobs_history")


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    """1 broken.pdf in the DLQ, 2 done.md DONE, 3 flaky.md FAILED (a full disk, its retry
    later), 4 running.md RUNNING under another worker's lease, 5 waiting.md PENDING."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    for name, topic in (("done", "brakes"), ("flaky", "tyres"), ("running", "lamps"),
                        ("waiting", "wipers")):
        (src / f"{name}.md").write_text(f"# {name}\n\n" + paragraphs(2, topic), encoding="utf-8")
    path = tmp_path / "store"
    with open_test_store(path) as opened:
        queue = opened.jobs()
        opened.enqueue_paths(src / "broken.pdf", src / "done.md")
        Worker(opened, queue).run_until_idle()
        opened.enqueue_paths(src / "flaky.md")
        with disk_full():
            assert [o.status for o in Worker(opened, queue).run_until_idle()] == [FAILED]
        opened.enqueue_paths(src / "running.md")
        assert queue.claim("another-host:1:w")["job_id"] == 4  # type: ignore[index]
        opened.enqueue_paths(src / "waiting.md")
    return path


def statuses(path: Path) -> list[tuple[int, str]]:
    return catalog_rows(path, "SELECT job_id, status FROM jobs ORDER BY job_id")


def history(path: Path) -> list[tuple[Any, ...]]:
    return catalog_rows(path, "SELECT job_id, status, last_error, document_id FROM jobs_history "
                              "ORDER BY job_id")


def tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {table: catalog_rows(path, f"SELECT * FROM {table} ORDER BY ALL")  # noqa: S608
            for table in TABLES}


def test_a_pending_job_goes_to_the_history_as_cancelled_and_the_rest_stay(store: Path) -> None:
    assert statuses(store) == [(1, DLQ), (2, DONE), (3, FAILED), (4, RUNNING), (5, PENDING)]
    with open_test_store(store) as opened:
        queue = opened.jobs()
        assert queue.cancel(5) == 1
        assert queue.counts() == {PENDING: 0, RUNNING: 1, DONE: 1, FAILED: 1, DLQ: 1}
        assert queue.history_count() == 1
    assert statuses(store) == [(1, DLQ), (2, DONE), (3, FAILED), (4, RUNNING)]
    assert history(store) == [(5, "CANCELLED", "cancelled while PENDING", "waiting.md")]
    [(finished, purged)] = catalog_rows(store, "SELECT finished_at, purged_at FROM jobs_history")
    assert finished is not None and finished == purged


def test_a_failed_job_waiting_for_its_retry_is_cancelled_with_its_attempts(store: Path) -> None:
    with open_test_store(store) as opened:
        queue = opened.jobs()
        assert queue.cancel(3) == 1
        assert queue.counts()[FAILED] == 0
    [(job_id, status, error, _)] = history(store)
    assert (job_id, status) == (3, "CANCELLED")
    assert error.startswith("cancelled while FAILED; its last attempt failed: ")
    assert "no space left on the device" in error
    # the attempt that failed stays beside its job's record, as a DONE job's do
    assert catalog_rows(store, "SELECT job_id, attempt, outcome FROM job_attempts "
                               "WHERE job_id = 3") == [(3, 1, FAILED)]


def test_what_is_not_waiting_is_a_typed_error_and_changes_nothing(store: Path) -> None:
    with open_test_store(store) as opened:
        queue = opened.jobs()
        queue.cancel(5)
        queue.purge_done()  # job 2 to the history
    before = tables(store)
    with open_test_store(store) as opened:
        queue = opened.jobs()
        with pytest.raises(JobNotFoundError, match="no job with id 99 ") as missing:
            queue.cancel(99)
        assert missing.value.job_id == 99
        refusals = {
            4: (RUNNING, "job 4 is RUNNING: a worker is ingesting it now, and it is not "
                         "cancelled under its worker"),
            1: (DLQ, "job 1 is DLQ: in the DLQ it no longer waits to run; drop it instead "
                     "(`enginelib jobs --drop ID`"),
            2: ("DONE (in the history)", "job 2 is DONE (in the history): it has run already"),
            5: ("CANCELLED (in the history)",
                "job 5 is CANCELLED (in the history): it was cancelled already"),
        }
        for job_id, (status, words) in refusals.items():
            with pytest.raises(JobStateError) as refused:
                queue.cancel(job_id)
            assert str(refused.value).startswith(words), str(refused.value)
            assert (refused.value.job_id, refused.value.status) == (job_id, status)
    assert tables(store) == before


def test_a_done_job_still_queued_is_refused(store: Path) -> None:
    with open_test_store(store) as opened, pytest.raises(JobStateError, match="job 2 is DONE: "):
        opened.jobs().cancel(2)


def test_a_read_only_store_refuses_to_cancel(store: Path) -> None:
    with enginelib.open(store, read_only=True) as opened, pytest.raises(ReadOnlyStoreError):
        opened.jobs().cancel(5)
    assert statuses(store)[-1] == (5, PENDING)


def test_no_worker_runs_a_cancelled_job(store: Path) -> None:
    with open_test_store(store) as opened:
        queue = opened.jobs(time_unit=1e-6)  # flaky.md's retry falls due at once
        queue.cancel(5)
        queue.cancel(3)
        assert queue.next_wake() is not None  # job 4's lease, nothing else
        ran = Worker(opened, queue).run_until_idle()
        assert [o.job_id for o in ran] == []
        assert {d["document_id"] for d in opened.list_documents()} == {"done.md"}


def test_a_cancelled_upload_takes_its_file_a_cancelled_file_job_leaves_the_users(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    mine = tmp_path / "mine.md"
    mine.write_text("# Mine\n\n" + paragraphs(2), encoding="utf-8")
    with open_test_store(path) as opened:
        upload = write_upload(path, "huge.md", "Huge")
        queue = opened.jobs()
        queue.enqueue([NewJob(str(upload.resolve()), "huge.md", {}, kind="upload"),
                       NewJob(str(mine), "mine.md", {})])
        assert queue.cancel(1) == 1
        assert not upload.parent.exists()
        assert queue.cancel(2) == 1
        assert queue.upload_sources_in_use() == set()
    assert mine.is_file()  # the user's own file is never the queue's to delete
    assert [row[:2] for row in history(path)] == [(1, "CANCELLED"), (2, "CANCELLED")]


def test_the_retention_prunes_a_cancelled_job_with_its_attempts(store: Path) -> None:
    with open_test_store(store) as opened:
        opened.jobs().cancel(3)
        pruned = opened.jobs(retention=Retention(keep_days=0)).prune()
        # DONE job 2 (queued) and cancelled job 3 (in the history), an attempt each
        assert (pruned.jobs, pruned.history, pruned.attempts) == (1, 1, 2)
    assert history(store) == []
    assert catalog_rows(store, "SELECT count(*) FROM job_attempts WHERE job_id = 3") == [(0,)]


def test_a_job_its_worker_is_running_is_refused_and_the_next_one_never_runs(
    tmp_path: Path,
) -> None:
    """The worker holds job 1 mid-embedding: cancelling it is refused; job 2, cancelled
    meanwhile, is not taken when the worker looks for its next job."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("first", "second"):
        (src / f"{name}.md").write_text(f"# {name}\n\n" + paragraphs(2, name), encoding="utf-8")
    held = HeldEmbedder()
    with enginelib.open(tmp_path / "store", embedder=held, chunking=SMALL_CHUNKS) as opened:
        queue = opened.jobs()
        opened.enqueue_paths(src / "first.md", src / "second.md")
        held.armed = True
        outcomes: list[Any] = []
        worker = threading.Thread(
            target=lambda: outcomes.extend(Worker(opened, queue).run_until_idle()), daemon=True)
        worker.start()
        try:
            assert held.entered.wait(WAIT_S)
            with pytest.raises(JobStateError, match="job 1 is RUNNING") as refused:
                queue.cancel(1)
            assert refused.value.status == RUNNING
            assert queue.cancel(2) == 1
        finally:
            held.release.set()
            worker.join(WAIT_S)
        assert [(o.job_id, o.status) for o in outcomes] == [(1, DONE)]
        assert [d["document_id"] for d in opened.list_documents()] == ["first.md"]


def test_cancels_racing_a_worker_cancel_exactly_the_jobs_it_never_ran(tmp_path: Path) -> None:
    """Every other job cancelled while a worker takes them in order: each job either ran
    (its cancel refused) or was cancelled (never run), never both, never neither."""
    src = tmp_path / "src"
    src.mkdir()
    paths = []
    for i in range(24):
        paths.append(src / f"f{i:02}.md")
        paths[-1].write_text(f"# F{i}\n\n" + paragraphs(2, f"topic{i}"), encoding="utf-8")
    with open_test_store(tmp_path / "store") as opened:
        queue = opened.jobs()
        ids = opened.enqueue_paths(*paths)
        outcomes: list[Any] = []
        worker = threading.Thread(
            target=lambda: outcomes.extend(Worker(opened, queue).run_until_idle()), daemon=True)
        worker.start()
        cancelled, refused = set(), {}
        pause = random.Random(7)
        for turn, job_id in enumerate(ids[1::2]):
            # At the worker's front: the job before is taken (the cancel mostly wins) or, every
            # other turn, done, when the worker is claiming this one (it mostly loses then).
            before = [RUNNING, DONE] if turn % 2 else [DONE]
            deadline = time.monotonic() + WAIT_S
            while not queue.jobs(statuses=before, after=job_id - 2, limit=1):
                assert time.monotonic() < deadline, f"job {job_id - 1} never ran"
                time.sleep(0.0005)
            time.sleep(pause.uniform(0, 0.002))
            try:
                queue.cancel(job_id)
                cancelled.add(job_id)
            except JobStateError as exc:
                refused[job_id] = exc.status
        worker.join(WAIT_S)
        assert not worker.is_alive()
        ran = {o.job_id for o in outcomes}
        assert all(o.status == DONE for o in outcomes)
        assert ran | cancelled == set(ids) and not ran & cancelled
        assert set(refused) <= ran and set(refused.values()) <= {RUNNING, DONE}
        documents = {d["document_id"] for d in opened.list_documents()}
        assert documents == {paths[job_id - 1].name for job_id in ran}
    assert {row[0] for row in history(tmp_path / "store")} == cancelled


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=ENV)
    return result.exit_code, result.output


def test_cancel_on_the_command_line(store: Path) -> None:
    code, out = run("jobs", str(store), "--cancel", "5")
    assert code == 0, out
    assert out.splitlines()[:2] == [
        "cancelled 1", "PENDING 0  RUNNING 1  DONE 1  FAILED 1  DLQ 1 | history 1"]
    code, out = run("jobs", str(store), "--cancel", "5")
    assert code == 2 and out.startswith(
        "Error: job 5 is CANCELLED (in the history): it was cancelled already")
    code, out = run("jobs", str(store), "--cancel", "99")
    assert code == 2 and out.startswith("Error: no job with id 99 in this store's queue")
    code, out = run("jobs", str(store), "--cancel", "4")
    assert code == 2 and out.startswith("Error: job 4 is RUNNING: a worker is ingesting it now")
    code, out = run("jobs", str(store), "--cancel", "1")
    assert code == 2 and "drop it instead (`enginelib jobs --drop ID`" in out
    code, out = run("jobs", str(store), "--cancel", "-3")
    assert code == 2 and "--cancel" in out
    code, out = run("jobs", str(store), "--cancel", "3", "--drop", "1")
    assert code == 2 and "give --cancel alone, not with --drop" in out
    assert statuses(store) == [(1, DLQ), (2, DONE), (3, FAILED), (4, RUNNING)]
    code, out = run("jobs", str(store), "--cancel", "3", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["cancelled"] == 1 and data["counts"][FAILED] == 0 and data["history"] == 2
    assert [row[:2] for row in history(store)] == [(3, "CANCELLED"), (5, "CANCELLED")]


def test_a_cancel_killed_halfway_cancelled_nothing(store: Path) -> None:
    before = tables(store)
    script = ("import sys; from pathlib import Path; from tests.helpers import open_test_store; "
              "open_test_store(Path(sys.argv[1])).jobs().cancel(5)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), **ENV, "ENGINELIB_CRASH_AT": "mid_job_cancel"}
    killed = subprocess.run([sys.executable, "-c", script, str(store)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_test_store(store) as opened:  # the next writer: the cancel rolled back
        queue = opened.jobs()
        assert (queue.counts()[PENDING], queue.history_count()) == (1, 0)
    assert tables(store) == before
    with open_test_store(store) as opened:
        assert opened.jobs().cancel(5) == 1
    assert history(store)[0][:2] == (5, "CANCELLED")

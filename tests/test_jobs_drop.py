"""Dropping DLQ jobs for good: one by id or all, with their attempts and an upload's file; a
job not in the DLQ, or no job at all, is an error; a drop killed halfway dropped nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from enginelib.errors import JobNotFoundError, JobStateError
from enginelib.jobs import DLQ, DONE, PENDING, NewJob, Worker
from tests.helpers import catalog_rows, disk_full, open_test_store, paragraphs, write_upload

ROOT = Path(__file__).resolve().parents[1]
ENV = {"ENGINELIB_EMBEDDER": "hashing"}


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    """Two DLQ jobs (broken PDFs, one attempt each), one DONE job, one PENDING job."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a.pdf", "b.pdf"):
        (src / name).write_bytes(b"%PDF-1.4 this is not a pdf")
    (src / "done.md").write_text("# Done\n\n" + paragraphs(2), encoding="utf-8")
    (src / "later.md").write_text("# Later\n\n" + paragraphs(2, "tyres"), encoding="utf-8")
    path = tmp_path / "store"
    with open_test_store(path) as opened:
        opened.enqueue_paths(src / "a.pdf", src / "b.pdf", src / "done.md")
        Worker(opened, opened.jobs()).run_until_idle()
        opened.enqueue_paths(src / "later.md")
    return path


def statuses(path: Path) -> list[tuple[int, str]]:
    return catalog_rows(path, "SELECT job_id, status FROM jobs ORDER BY job_id")


def attempt_jobs(path: Path) -> list[int]:
    return [row[0] for row in catalog_rows(
        path, "SELECT DISTINCT job_id FROM job_attempts ORDER BY job_id")]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=ENV)
    return result.exit_code, result.output


def test_one_dlq_job_goes_with_its_attempts_the_others_stay(store: Path) -> None:
    assert statuses(store) == [(1, DLQ), (2, DLQ), (3, DONE), (4, PENDING)]
    with open_test_store(store) as opened:
        assert opened.jobs().drop(1) == 1
    assert statuses(store) == [(2, DLQ), (3, DONE), (4, PENDING)]
    assert attempt_jobs(store) == [2, 3]


def test_all_dlq_jobs_go_and_nothing_else(store: Path) -> None:
    with open_test_store(store) as opened:
        queue = opened.jobs()
        assert queue.drop_dlq() == 2
        assert queue.drop_dlq() == 0  # an empty DLQ: nothing to drop, and no error
    assert statuses(store) == [(3, DONE), (4, PENDING)]
    assert attempt_jobs(store) == [3]


def test_a_job_not_in_the_dlq_or_no_job_is_a_typed_error_and_changes_nothing(
    store: Path,
) -> None:
    with open_test_store(store) as opened:
        queue = opened.jobs()
        queue.purge_done()  # job 3 to the history
        with pytest.raises(JobNotFoundError, match="no job with id 99 ") as missing:
            queue.drop(99)
        assert missing.value.job_id == 99 and isinstance(missing.value, KeyError)
        with pytest.raises(JobStateError, match="job 4 is PENDING, not in the DLQ") as waiting:
            queue.drop(4)
        assert (waiting.value.job_id, waiting.value.status) == (4, PENDING)
        with pytest.raises(JobStateError, match=r"job 3 is DONE \(in the history\)"):
            queue.drop(3)
    assert statuses(store) == [(1, DLQ), (2, DLQ), (4, PENDING)]
    assert attempt_jobs(store) == [1, 2, 3]


def test_a_dropped_upload_takes_its_file_a_dropped_file_job_leaves_the_users(
    tmp_path: Path,
) -> None:
    """An upload in the DLQ keeps its file for Retry DLQ; dropped, nothing reads it again."""
    path = tmp_path / "store"
    mine = tmp_path / "mine.md"
    mine.write_text("# Mine\n\n" + paragraphs(2), encoding="utf-8")
    with open_test_store(path) as opened:
        upload = write_upload(path, "kept.md", "Kept")
        queue = opened.jobs()
        queue.enqueue([NewJob(str(upload.resolve()), "kept.md", {}, kind="upload", max_attempts=1),
                       NewJob(str(mine), "mine.md", {}, max_attempts=1)])
        with disk_full():  # a transient failure at the last attempt: to the DLQ, file kept
            assert [o.status for o in Worker(opened, queue).run_until_idle()] == [DLQ, DLQ]
        assert upload.is_file()
        assert queue.drop(1) == 1
        assert not upload.parent.exists()
        assert queue.drop_dlq() == 1
    assert mine.is_file()  # the user's own file is never the queue's to delete


def test_drop_on_the_command_line(store: Path) -> None:
    code, out = run("jobs", str(store), "--drop", "1")
    assert code == 0 and out.splitlines()[:2] == [
        "dropped 1", "PENDING 1  RUNNING 0  DONE 1  FAILED 0  DLQ 1 | history 0"]
    code, out = run("jobs", str(store), "--drop", "1")
    assert code == 2 and out.startswith("Error: no job with id 1 in this store's queue")
    code, out = run("jobs", str(store), "--drop", "4")
    assert code == 2 and "Error: job 4 is PENDING, not in the DLQ" in out
    code, out = run("jobs", str(store), "--drop", "-3")
    assert code == 2 and "--drop" in out
    code, out = run("jobs", str(store), "--retry-dlq", "--drop-dlq")
    assert code == 2 and "give only one of --retry-dlq and --drop-dlq" in out
    assert statuses(store) == [(2, DLQ), (3, DONE), (4, PENDING)]
    code, out = run("jobs", str(store), "--drop-dlq", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["dropped"] == 1 and data["counts"][DLQ] == 0 and data["counts"][PENDING] == 1
    assert attempt_jobs(store) == [3]


@pytest.mark.parametrize("args", [["--drop", "2"], ["--drop-dlq"]])
def test_a_drop_killed_halfway_dropped_nothing(store: Path, args: list[str]) -> None:
    before = {table: catalog_rows(store, f"SELECT * FROM {table} ORDER BY job_id")  # noqa: S608
              for table in ("jobs", "job_attempts")}
    env = {**os.environ, "PYTHONPATH": str(ROOT), **ENV, "ENGINELIB_CRASH_AT": "mid_job_drop"}
    killed = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "jobs", "--store", str(store), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_test_store(store) as opened:  # the next writer: the drop rolled back
        assert opened.jobs().counts()[DLQ] == 2
    for table, rows in before.items():
        assert catalog_rows(store, f"SELECT * FROM {table} ORDER BY job_id") == rows  # noqa: S608

"""The retention of finished jobs: DONE jobs and the history are pruned, the DLQ never, and a
prune killed halfway leaves every row as it was."""

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
from enginelib.jobs import DLQ, DONE, PENDING, Retention, Worker
from enginelib.jobs.queue import PRUNE_EVERY_S
from tests.helpers import Clock, catalog_rows, open_test_store, paragraphs

ROOT = Path(__file__).resolve().parents[1]
DAY = 86_400


@pytest.fixture()
def files(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "src"
    folder.mkdir()
    made = []
    for name in ("a.md", "b.md", "c.md", "d.md"):
        (path := folder / name).write_text(f"# {name}\n\n" + paragraphs(2, name), encoding="utf-8")
        made.append(path)
    (broken := folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    made.append(broken)
    return made



def test_done_jobs_past_their_days_go_with_their_attempts_the_dlq_stays(
    tmp_path: Path, files: list[Path]
) -> None:
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs(clock=clock, retention=Retention(keep_days=30, keep_rows=100))
        store.enqueue_paths(files[0], files[1], files[4])  # a, b; broken.pdf to the DLQ
        worker = Worker(store, queue)
        worker.run_until_idle()
        assert queue.purge_done() == 2  # a and b to the history
        clock.advance(20 * DAY)
        store.enqueue_paths(files[2])
        worker.run_until_idle()  # c DONE, 20 days after the others
        assert queue.counts()[DONE] == 1 and queue.history_count() == 2
        clock.advance(11 * DAY)  # a, b and broken are 31 days old, c 11
        pruned = queue.prune()
        assert (pruned.jobs, pruned.history) == (0, 2)
        assert queue.history_count() == 0
        assert [(j["document_id"], j["status"]) for j in queue.jobs()] == [
            ("broken.pdf", DLQ), ("c.md", DONE)]
        clock.advance(30 * DAY)
        assert queue.prune().jobs == 1  # c too, from the queue itself
        [job] = queue.jobs()
        assert job["status"] == DLQ  # kept until someone retries it
        assert len(queue.attempts(job["job_id"])) == 1
    # Every attempt left belongs to a job still held.
    assert catalog_rows(tmp_path / "store", "SELECT DISTINCT job_id FROM job_attempts") == [
        (job["job_id"],)]


def test_the_history_keeps_its_newest_rows_at_each_purge(tmp_path: Path, files: list[Path]) -> None:
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs(clock=clock, retention=Retention(keep_rows=2))
        for path in files[:4]:
            store.enqueue_paths(path)
            Worker(store, queue).run_until_idle()
            clock.advance(60)
        assert queue.purge_done() == 4
        assert queue.history_count() == 2
    assert catalog_rows(tmp_path / "store", "SELECT document_id FROM jobs_history ORDER BY job_id") == [
        ("c.md",), ("d.md",)]
    assert catalog_rows(tmp_path / "store", "SELECT DISTINCT job_id FROM job_attempts ORDER BY 1") == [
        (3,), (4,)]


def test_the_worker_prunes_by_itself_when_idle_at_most_hourly(
    tmp_path: Path, files: list[Path]
) -> None:
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs(clock=clock, retention=Retention(keep_days=1))
        store.enqueue_paths(files[0])
        worker = Worker(store, queue)
        assert [o.status for o in worker.run_until_idle()] == [DONE]  # idle: prunes nothing
        clock.advance(2 * DAY)
        assert worker.run_once() is None  # pruned an hour ago (by the monotonic clock)
        assert queue.counts()[DONE] == 1
        queue._pruned_at = (queue._pruned_at or 0.0) - PRUNE_EVERY_S
        assert worker.run_once() is None
        assert queue.counts()[DONE] == 0


def test_prune_on_the_command_line(tmp_path: Path, files: list[Path]) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(files[0], files[1])
        Worker(store, store.jobs()).run_until_idle()
        store.jobs().purge_done()
        store.enqueue_paths(files[2])
    runner = CliRunner()
    result = runner.invoke(main, ["jobs", "--store", str(tmp_path / "store"), "--prune",
                                  "--keep-days", "0", "--json"], env={"ENGINELIB_EMBEDDER": "hashing"})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["pruned_jobs"], data["pruned_history"], data["history"]) == (0, 2, 0)
    assert data["counts"][PENDING] == 1  # waiting jobs are never pruned
    result = runner.invoke(main, ["jobs", "--store", str(tmp_path / "store"), "--prune",
                                  "--keep-days", "-1"])
    assert result.exit_code == 2 and "--keep-days" in result.output


def test_a_prune_killed_halfway_changes_nothing(tmp_path: Path, files: list[Path]) -> None:
    store = tmp_path / "store"
    with open_test_store(store) as opened:
        opened.enqueue_paths(files[0], files[1], files[2])
        queue = opened.jobs()
        Worker(opened, queue).run_until_idle()
        queue.purge_done()
    before = {table: catalog_rows(store, f"SELECT count(*) FROM {table}")  # noqa: S608 - fixed names
              for table in ("jobs", "jobs_history", "job_attempts")}
    assert before["jobs_history"] == [(3,)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ENGINELIB_EMBEDDER": "hashing",
           "ENGINELIB_CRASH_AT": "mid_job_prune"}
    killed = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "jobs", "--store", str(store), "--prune",
         "--keep-days", "0", "--keep-rows", "0"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_test_store(store) as opened:  # the next writer: the rolled-back prune is gone
        queue = opened.jobs(retention=Retention(keep_days=0, keep_rows=0))
        assert queue.history_count() == 3
        for table, count in before.items():
            assert rows_of(opened, table) == count[0][0]
        assert queue.prune().history == 3
        assert rows_of(opened, "job_attempts") == 0


def rows_of(store: object, table: str) -> int:
    con = store.catalog.con  # type: ignore[attr-defined]
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608

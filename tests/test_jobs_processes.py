"""The job queue with real processes: the CLI's worker retrying on schedule, the DLQ, a
worker SIGKILLed mid-job, and two workers on one store."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from enginelib.jobs import delay_bounds
from tests.helpers import catalog_rows, paragraphs
from tests.test_loaders import pdf_bytes

pytestmark = pytest.mark.slow  # real worker processes, killed and racing

ROOT = Path(__file__).resolve().parents[1]
UNIT = 0.01  # one backoff second lasts 10 ms here: the schedule's shape, 100x faster
LOST_UNIT = 0.001  # a lost run's retry waits 30..39 ms here


def cli(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "ENGINELIB_CRASH_AT"}
    full_env.update({"ENGINELIB_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT), **(env or {})})
    result = subprocess.run([sys.executable, "-m", "enginelib.cli.main", *args], cwd=ROOT,
                            env=full_env, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}: {result.stderr}")
    return result


def work_until_done(store: Path, done: int) -> None:
    """Run workers until ``done`` jobs are DONE: a lost run is retried after its backoff, as a
    failed attempt is, so the first worker may find it not due yet."""
    deadline = time.monotonic() + 60
    while jobs_json(store)["counts"]["DONE"] < done:
        assert time.monotonic() < deadline, "the lost run was never retried"
        cli("worker", str(store), "--time-unit", str(LOST_UNIT))
        time.sleep(0.05)


def jobs_json(store: Path, *flags: str) -> dict[str, Any]:
    return json.loads(cli("jobs", str(store), "--json", *flags).stdout)  # type: ignore[no-any-return]



@pytest.fixture()
def sources(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 truncated, not a PDF")
    (folder / "brakes.md").write_text("# Brakes\n\n" + paragraphs(6), encoding="utf-8")
    (folder / "tyres.md").write_text("# Tyres\n\n" + paragraphs(5, "tyres"), encoding="utf-8")
    return folder


def test_failing_source_retried_on_schedule_then_dlq_then_back(tmp_path: Path, sources: Path) -> None:
    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "brakes.md"))
    full = {"ENGINELIB_ENOSPC_AT": "before_catalog_commit"}  # a disk full at each commit
    deadline = time.monotonic() + 120
    while jobs_json(store)["counts"]["DLQ"] == 0:
        assert time.monotonic() < deadline, "the job never reached the DLQ"
        ran = cli("worker", str(store), "--time-unit", str(UNIT), env=full, check=False)
        # a run whose job failed exits 1 (a cron line must see it); one with nothing due, 0
        failed = "FAILED (attempt" in ran.stdout or "DLQ (attempt" in ran.stdout
        assert ran.returncode == (1 if failed else 0), ran.stdout + ran.stderr
        assert ("jobs failed this run" in ran.stderr) == failed
        time.sleep(0.05)
    attempts = catalog_rows(store, "SELECT attempt, started_at, finished_at, outcome, "
                                   "next_attempt_at, error FROM job_attempts ORDER BY seq")
    assert [a[3] for a in attempts] == ["FAILED"] * 4 + ["DLQ"]
    assert all("no space left" in a[5] for a in attempts)
    for before, after in itertools.pairwise(attempts):
        low, high = delay_bounds(before[0])
        waited = before[4] - before[2]
        assert timedelta(seconds=low * UNIT) <= waited <= timedelta(seconds=high * UNIT)
        assert after[1] >= before[4], "a retry ran before its scheduled time"
    job = jobs_json(store)["jobs"][0]
    assert (job["status"], job["attempts"], job["max_attempts"]) == ("DLQ", 5, 5)

    data = jobs_json(store, "--retry-dlq")
    assert data["retried"] == 1 and data["counts"]["PENDING"] == 1
    out = cli("worker", str(store), "--time-unit", str(UNIT)).stdout
    assert "DONE" in out
    data = jobs_json(store, "--purge-done")
    assert data["purged"] == 1 and data["history"] == 1 and data["counts"]["DONE"] == 0
    assert catalog_rows(store, "SELECT count(*) FROM documents") == [(1,)]


def test_a_broken_source_goes_to_the_dlq_at_its_first_attempt(tmp_path: Path,
                                                               sources: Path) -> None:
    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "broken.pdf"))
    ran = cli("worker", str(store), "--json", check=False)
    assert ran.returncode == 1
    [outcome] = json.loads(ran.stdout)["processed"]
    assert (outcome["status"], outcome["attempts"], outcome["reason"]) == ("DLQ", 1, "bad_input")
    assert "cannot read PDF" in outcome["error"] and "not retried" in outcome["error"]
    (sources / "broken.pdf").write_bytes(pdf_bytes([["Brake fluid boils at 230 degrees."]]))
    jobs_json(store, "--retry-dlq")
    assert "DONE" in cli("worker", str(store)).stdout


@pytest.mark.parametrize("crash_at", ["before_catalog_commit", "after_catalog_commit",
                                      "after_job_ingest"])
def test_worker_killed_mid_job_loses_nothing_and_does_nothing_twice(
    tmp_path: Path, sources: Path, crash_at: str
) -> None:
    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "brakes.md"),
        str(sources / "tyres.md"))
    killed = cli("worker", str(store), "--lease", "1", env={"ENGINELIB_CRASH_AT": crash_at},
                 check=False)
    assert killed.returncode == -signal.SIGKILL
    counts = jobs_json(store)["counts"]
    assert (counts["RUNNING"], counts["PENDING"]) == (1, 1)
    time.sleep(1.2)  # the dead worker's lease runs out
    work_until_done(store, 2)
    data = jobs_json(store)
    assert data["counts"]["DONE"] == 2 and data["counts"]["RUNNING"] == 0
    assert sorted(j["attempts"] for j in data["jobs"]) == [1, 2]
    outcomes = catalog_rows(store, "SELECT outcome FROM job_attempts WHERE job_id = 1 ORDER BY seq")
    assert outcomes == [("LOST",), ("DONE",)]
    # Each document once, first version, no archived copy, its chunks once.
    docs = catalog_rows(store, "SELECT document_id, version, total_chunks FROM documents "
                               "ORDER BY 1")
    assert [(d, v) for d, v, _ in docs] == [("brakes.md", "1.0.0"), ("tyres.md", "1.0.0")]
    assert catalog_rows(store, "SELECT count(*) FROM document_versions") == [(0,)]
    chunks = catalog_rows(store, "SELECT count(*) FROM chunks")[0][0]
    assert chunks == sum(n for _, _, n in docs)
    assert "is healthy" in cli("check", "--store", str(store)).stdout


def test_a_restarted_worker_takes_back_a_dead_workers_job_at_once(
    tmp_path: Path, sources: Path
) -> None:
    """The killed worker's job stayed RUNNING for the whole lease (300 s by default) though
    its process was gone: the next worker holds the one writer lock, so no other can run it."""
    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "brakes.md"),
        str(sources / "tyres.md"))
    killed = cli("worker", str(store), env={"ENGINELIB_CRASH_AT": "after_job_ingest"},
                 check=False)
    assert killed.returncode == -signal.SIGKILL
    assert jobs_json(store)["counts"]["RUNNING"] == 1
    work_until_done(store, 2)  # well within the default lease (300 s): taken back at once
    data = jobs_json(store)
    assert (data["counts"]["DONE"], data["counts"]["RUNNING"]) == (2, 0)
    assert sorted(j["attempts"] for j in data["jobs"]) == [1, 2]
    lost = catalog_rows(store, "SELECT outcome, error FROM job_attempts WHERE job_id = 1 "
                               "ORDER BY seq")
    assert lost == [("LOST", "its worker stopped mid-job (that process is gone)"), ("DONE", None)]
    docs = catalog_rows(store, "SELECT document_id, version FROM documents ORDER BY 1")
    assert docs == [("brakes.md", "1.0.0"), ("tyres.md", "1.0.0")]


def _worker_forever(store: Path, *, poll: str) -> subprocess.Popen[str]:
    """`enginelib worker --forever` in its own process, on the hashing embedder."""
    # PYTHONFAULTHANDLER: a worker that does not stop is made to print every thread's
    # stack (``_stopped``), so the failure says where it waits
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT),
           "PYTHONFAULTHANDLER": "1"}
    env.pop("ENGINELIB_CRASH_AT", None)
    return subprocess.Popen(
        [sys.executable, "-m", "enginelib.cli.main", "worker", str(store), "--forever",
         "--poll", poll], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    # A suite started in the background of a script (`bash .ci/run &`) hands its processes
    # SIGINT ignored, and Python then never turns it into KeyboardInterrupt: the worker went
    # on polling. The test is of what Ctrl-C at a terminal does, so the worker gets the
    # default disposition whatever the suite was started from.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stopped(worker: subprocess.Popen[str], timeout: float = 30) -> str:
    """The stderr of a worker sent SIGINT or SIGTERM once it has exited; one still running
    after ``timeout`` is aborted (its stack printed by the fault handler) and fails the test."""
    try:
        return worker.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        worker.send_signal(signal.SIGABRT)
        stack = worker.communicate(timeout=30)[1]
        pytest.fail(f"the worker did not stop within {timeout} s; its threads:\n{stack[-6000:]}")


def test_one_worker_at_a_time_and_enqueue_while_it_runs(tmp_path: Path, sources: Path) -> None:
    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "brakes.md"))
    forever = _worker_forever(store, poll="0.1")
    try:
        deadline = time.monotonic() + 60
        while jobs_json(store)["counts"]["DONE"] < 1:
            assert time.monotonic() < deadline and forever.poll() is None
            time.sleep(0.2)
        second = cli("worker", str(store), check=False)
        assert second.returncode == 2  # told which process holds the store and what to do
        assert f"held by `enginelib worker --forever` (pid {forever.pid})" in second.stderr
        assert "`enginelib ingest --queue` hands it files" in second.stderr
        queued = json.loads(cli("ingest", "--store", str(store), "--queue", "--json",
                                str(sources / "tyres.md")).stdout)
        assert queued == {"queued": 1, "job_ids": [], "via": "inbox"}
        while jobs_json(store)["counts"]["DONE"] < 2:
            assert time.monotonic() < deadline and forever.poll() is None
            time.sleep(0.2)
        refused = cli("jobs", str(store), "--purge-done", check=False)
        assert refused.returncode == 2 and "held by `enginelib worker --forever`" in refused.stderr
        assert "/api/jobs" not in refused.stderr  # no serve to send it to
    finally:
        forever.send_signal(signal.SIGINT)
        errors = _stopped(forever)
    assert forever.returncode == 0, errors
    assert jobs_json(store, "--purge-done")["purged"] == 2


def test_a_job_that_kills_every_worker_that_takes_it_ends_in_the_dlq(
    tmp_path: Path, sources: Path
) -> None:
    """A file that kills its worker (here at the catalog commit, every time) was taken again
    by each restarted worker for ever: attempt 6, 7, 8... of 5. The lost last attempt now
    sends it to the DLQ, and the next worker does the other jobs."""
    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "brakes.md"))
    kills, deadline = 0, time.monotonic() + 60
    while kills < 5:  # each lost run waits its backoff: a worker may find nothing due yet
        assert time.monotonic() < deadline
        ran = cli("worker", str(store), "--time-unit", str(LOST_UNIT),
                  env={"ENGINELIB_CRASH_AT": "before_catalog_commit"}, check=False)
        assert ran.returncode in (0, -signal.SIGKILL), ran.stderr
        kills += ran.returncode == -signal.SIGKILL
    cli("ingest", "--store", str(store), "--queue", str(sources / "tyres.md"))
    assert "job 2 DONE" in cli("worker", str(store)).stdout
    jobs = {j["job_id"]: j for j in jobs_json(store)["jobs"]}
    assert (jobs[1]["status"], jobs[1]["attempts"], jobs[2]["status"]) == ("DLQ", 5, "DONE")
    assert "that was its last attempt" in jobs[1]["last_error"]
    assert catalog_rows(store, "SELECT document_id FROM documents") == [("tyres.md",)]


def test_sigterm_stops_a_forever_worker_cleanly(tmp_path: Path, sources: Path) -> None:
    """`docker stop` and systemd send SIGTERM: it killed the worker where it stood (mid-job,
    a lost run then retried only after its backoff) and left its holder note behind. It now
    stops the loop as Ctrl-C does, after the job in hand."""
    from enginelib.core.lock import HOLDER_NAME

    store = tmp_path / "store"
    cli("ingest", "--store", str(store), "--queue", str(sources / "brakes.md"))
    forever = _worker_forever(store, poll="5")
    try:
        deadline = time.monotonic() + 60
        while not (store / HOLDER_NAME).exists() or catalog_done(store) < 1:
            assert time.monotonic() < deadline and forever.poll() is None
            time.sleep(0.1)
        forever.send_signal(signal.SIGTERM)  # idle now, in a 5 s poll wait: out of it at once
        errors = _stopped(forever)
    finally:
        if forever.poll() is None:
            forever.kill()
    assert forever.returncode == 0, errors
    assert not (store / HOLDER_NAME).exists()


def catalog_done(store: Path) -> int:
    try:
        return int(catalog_rows(store, "SELECT count(*) FROM jobs WHERE status = 'DONE'")[0][0])
    except duckdb.Error:  # the worker holds the file this moment
        return 0

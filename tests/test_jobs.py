"""The job queue in process: backoff formula, retry schedule, DLQ, retry, purge, leases."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from enginelib.cli.main import main
from enginelib.errors import InvalidInputError, LoaderError
from enginelib.jobs import (
    DLQ,
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    JobQueue,
    NewJob,
    Retention,
    Worker,
    delay_bounds,
    inbox,
    retry_delay,
)
from enginelib.jobs.failures import BAD_INPUT, SOURCE_MISSING, SOURCE_TOO_LARGE, TRANSIENT
from tests.helpers import Clock, disk_full, open_test_store, paragraphs


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    (folder / "guides").mkdir(parents=True)
    (folder / "guides" / "brakes.md").write_text("# Brakes\n\n" + paragraphs(4), encoding="utf-8")
    (folder / "tyres.txt").write_text(paragraphs(3, "tyres"), encoding="utf-8")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    return folder


def test_retry_delay_is_the_seed_formula() -> None:
    assert retry_delay(1, lambda: 0.0) == 30
    assert retry_delay(1, lambda: 0.999) == 39
    assert retry_delay(2, lambda: 0.5) == 65
    assert retry_delay(8, lambda: 0.0) == 3600  # 15 * 256 = 3840, capped
    assert retry_delay(20, lambda: 0.99) == 3600  # doublings stop at 8
    assert retry_delay(0, lambda: 0.0) == 15
    for attempts in range(0, 12):
        low, high = delay_bounds(attempts)
        samples = {retry_delay(attempts) for _ in range(200)}
        assert all(low <= s <= high for s in samples)
    with pytest.raises(ValueError):
        retry_delay(-1)


def test_folder_becomes_one_job_per_file_with_plain_ingest_ids(tmp_path: Path, corpus: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        ids = store.enqueue_paths(corpus, truth_level="L1", tags=["car"])
        jobs = store.jobs().jobs()
    assert len(ids) == 3
    assert [j["document_id"] for j in jobs] == ["broken.pdf", "guides/brakes.md", "tyres.txt"]
    assert all(j["status"] == PENDING and j["attempts"] == 0 for j in jobs)
    assert jobs[0]["options"] == {"truth_level": "L1", "tags": ["car"]}


def test_bad_options_and_missing_paths_are_refused_at_enqueue(tmp_path: Path, corpus: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match="truth level"):
            store.enqueue_paths(corpus, truth_level="L9")
        with pytest.raises(LoaderError, match="no such file"):
            store.enqueue_paths(corpus / "missing.md")
        assert store.jobs().counts()[PENDING] == 0


def test_failures_follow_the_schedule_then_dlq_then_retry(tmp_path: Path, corpus: Path) -> None:
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt", max_attempts=4)
        queue = store.jobs(clock=clock)
        worker = Worker(store, queue, owner="w1")
        statuses = []
        with disk_full():  # a transient failure: each attempt may be the one that works
            for attempt in range(1, 5):
                outcome = worker.run_once()
                assert outcome is not None and outcome.attempts == attempt
                assert outcome.reason == TRANSIENT
                statuses.append(outcome.status)
                job = queue.jobs()[0]
                if outcome.status == FAILED:
                    # Not due before its time, due exactly at it.
                    delay = (job["next_attempt_at"] - clock.now).total_seconds()
                    low, high = delay_bounds(attempt)
                    assert low <= delay <= high
                    clock.advance(delay - 1)
                    assert worker.run_once() is None
                    clock.advance(1)
        assert statuses == [FAILED, FAILED, FAILED, DLQ]
        job = queue.jobs()[0]
        assert job["status"] == DLQ and "no space left" in job["last_error"]
        history = queue.attempts(job["job_id"])
        assert [a["outcome"] for a in history] == [FAILED, FAILED, FAILED, DLQ]
        for before, after in itertools.pairwise(history):
            low, high = delay_bounds(before["attempt"])
            assert low <= (before["next_attempt_at"] - before["finished_at"]).total_seconds() <= high
            assert after["started_at"] >= before["next_attempt_at"]
        clock.advance(10_000)
        assert worker.run_once() is None  # DLQ is never picked up by itself

        assert queue.retry_dlq() == 1
        job = queue.jobs()[0]
        assert (job["status"], job["attempts"]) == (PENDING, 0)
        outcome = worker.run_once()
        assert outcome is not None and outcome.status == DONE
        assert store.get_document("tyres.txt")["total_chunks"] >= 1


def test_a_file_that_cannot_be_read_goes_to_the_dlq_at_once_and_back_once_mended(
    tmp_path: Path, corpus: Path
) -> None:
    """A broken PDF failed the same way at each of its five attempts, minutes apart, before
    it reached the DLQ: bad input is now failed for good at its first attempt, saying so."""
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "broken.pdf")
        queue = store.jobs(clock=Clock())
        worker = Worker(store, queue, owner="w1")
        outcome = worker.run_once()
        assert outcome is not None
        assert (outcome.status, outcome.attempts, outcome.reason) == (DLQ, 1, BAD_INPUT)
        job = queue.jobs()[0]
        assert "cannot read PDF" in job["last_error"] and "not retried" in job["last_error"]
        assert [a["outcome"] for a in queue.attempts(job["job_id"])] == [DLQ]

        assert queue.retry_dlq() == 1
        from tests.test_loaders import pdf_bytes

        (corpus / "broken.pdf").write_bytes(pdf_bytes([["Brake fluid boils at 230 degrees."]]))
        outcome = worker.run_once()
        assert outcome is not None and outcome.status == DONE
        assert store.get_document("broken.pdf")["total_chunks"] == 1


def test_purge_done_moves_rows_to_history_and_counts(tmp_path: Path, corpus: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus)
        queue = store.jobs()
        Worker(store, queue).run_until_idle()
        assert queue.counts() == {PENDING: 0, RUNNING: 0, DONE: 2, FAILED: 0, DLQ: 1}
        assert queue.purge_done() == 2
        assert queue.purge_done() == 0
        assert queue.counts()[DONE] == 0 and queue.history_count() == 2
        assert [j["status"] for j in queue.jobs()] == [DLQ]
        rows = store.catalog.con.execute(
            "SELECT document_id, status FROM jobs_history ORDER BY job_id").fetchall()
    assert rows == [("guides/brakes.md", DONE), ("tyres.txt", DONE)]


def test_an_expired_lease_returns_the_job_and_the_rerun_changes_nothing(
    tmp_path: Path, corpus: Path
) -> None:
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        queue = store.jobs(clock=clock, lease_s=60)
        job = queue.claim("dead-worker")
        assert job is not None
        # The dead worker had ingested the file but not recorded it.
        store.ingest_documents(
            __import__("enginelib.loaders", fromlist=["load_file"]).load_file(
                job["source"], doc_id=job["document_id"]))
        clock.advance(59)
        assert queue.expire_leases() == [] and queue.claim("w2") is None
        clock.advance(2)
        assert queue.expire_leases() == [job["job_id"]]
        worker = Worker(store, queue, owner="w2")
        clock.advance(delay_bounds(1)[1])  # a lost run waits its backoff (test_jobs_lost_runs)
        outcome = worker.run_once()
        assert outcome is not None and (outcome.status, outcome.attempts) == (DONE, 2)
        assert [a["outcome"] for a in queue.attempts(job["job_id"])] == ["LOST", DONE]
        doc = store.get_document("tyres.txt")
        assert doc["version"] == "1.0.0"
        assert store.catalog.versions("tyres.txt") == []


def test_a_claimed_job_cannot_be_claimed_again(tmp_path: Path, corpus: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        queue = store.jobs()
        assert queue.claim("a") is not None
        assert queue.claim("b") is None
        assert queue.counts()[RUNNING] == 1


def test_inbox_jobs_are_imported_by_the_worker(tmp_path: Path, corpus: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        inbox.drop(store.path, [NewJob(str(corpus / "tyres.txt"), "tyres.txt", {})])
        assert inbox.pending(store.path) == 1
        outcomes = Worker(store, store.jobs()).run_until_idle()
        assert [o.status for o in outcomes] == [DONE]
        assert inbox.pending(store.path) == 0


@pytest.mark.parametrize("content", ['[{"x": 1}]', '{"source": "a"}', '[1, 2]',
                                     '[{"source": "a", "document_id": "a", "options": 5}]'])
def test_an_inbox_file_of_the_wrong_shape_is_set_aside_and_the_rest_imported(
    tmp_path: Path, corpus: Path, content: str
) -> None:
    # valid JSON of another shape raised KeyError/TypeError out of the worker's loop (in
    # serve, its worker thread stopped and no job ran again)
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0-hand-made.json").write_text(content, encoding="utf-8")
        inbox.drop(store.path, [NewJob(str(corpus / "tyres.txt"), "tyres.txt", {})])
        outcomes = Worker(store, store.jobs()).run_until_idle()
        assert [o.status for o in outcomes] == [DONE]
        assert (folder / "0-hand-made.bad").exists() and inbox.pending(store.path) == 0


def test_an_inbox_entry_that_cannot_be_read_is_set_aside_and_the_rest_imported(
    tmp_path: Path, corpus: Path
) -> None:
    # a folder (or a file this user cannot read) raised OSError out of every poll
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        (folder / "0-a-folder.json").mkdir(parents=True)
        inbox.drop(store.path, [NewJob(str(corpus / "tyres.txt"), "tyres.txt", {})])
        outcomes = Worker(store, store.jobs()).run_until_idle()
        assert [o.status for o in outcomes] == [DONE]
        assert (folder / "0-a-folder.bad").is_dir() and inbox.pending(store.path) == 0


def test_the_worker_loop_outlives_a_failing_queue_and_says_why(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an error of the queue itself (not a job's) ended run_forever: in serve the worker thread
    # died and uploads were accepted that nothing ingested
    import threading
    import time

    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        queue.enqueue([NewJob(str(corpus / "tyres.txt"), "tyres.txt", {})])
        lock = threading.RLock()  # serve's: the catalog connection is not shared unguarded
        worker = Worker(store, queue, lock=lock)
        real_claim, failures = queue.claim, []

        def flaky_claim(owner: str):  # type: ignore[no-untyped-def]
            if len(failures) < 2:
                failures.append(owner)
                raise OSError(28, "No space left on device")
            return real_claim(owner)

        monkeypatch.setattr(queue, "claim", flaky_claim)
        seen: list[str | None] = []
        stop = threading.Event()
        thread = threading.Thread(target=worker.run_forever, args=(stop, 0.01), daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while True:
                with lock:
                    done = queue.counts()[DONE]
                seen.append(worker.last_error)
                if done:
                    break
                assert thread.is_alive() and time.monotonic() < deadline, seen[-1]
                time.sleep(0.01)
        finally:
            stop.set()
            worker.wake.set()
            thread.join(timeout=30)
        assert len(failures) == 2 and any(e and "No space left" in e for e in seen)
        assert store.list_documents()[0]["document_id"] == "tyres.txt"


def test_queue_validates_its_settings(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError):
            JobQueue(store.catalog, max_attempts=0)
        with pytest.raises(InvalidInputError, match="job status"):
            store.jobs().jobs(status="LOST")


@pytest.mark.parametrize(("setting", "value", "message"), [
    ("max_attempts", 10**23, "max_attempts must be within 1..1000"),  # a 32-bit column
    ("max_attempts", 2.0, "max_attempts must be an integer"),
    ("lease_s", float("inf"), "lease_s must be a finite number"),  # overflowed timedelta
    ("lease_s", float("nan"), "lease_s must be a finite number"),
    ("lease_s", 1e308, "lease_s must be a finite number within"),
    ("time_unit", 0, "time_unit must be a finite number within"),
])
def test_queue_settings_out_of_range_are_named(
    tmp_path: Path, setting: str, value: object, message: str
) -> None:
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match=message):
            JobQueue(store.catalog, **{setting: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "message"), [
    ({"max_attempt": 3}, r"unknown job queue option\(s\) \['max_attempt'\] \(did you mean "
                         "'max_attempts'"),
    ({"lease": 30}, "did you mean 'lease_s'"),
    # taken, then failed at their first use: an AttributeError at the first prune, a
    # TypeError at the first claim
    ({"retention": {"keep_days": 1}}, r"retention must be a Retention\(keep_days=..."),
    ({"clock": "2024-01-01"}, "clock must be a function"),
    ({"rand": 0.5}, "rand must be a function"),
])
def test_a_job_queue_option_misnamed_or_of_the_wrong_kind_is_refused(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    # store.jobs(max_attempt=3) was a bare TypeError from JobQueue.__init__
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match=message):
            store.jobs(**options)
        assert store.jobs(max_attempts=2, retention=Retention(keep_days=1)).max_attempts == 2


def test_a_worker_refuses_a_poll_that_is_not_a_number_of_seconds(tmp_path: Path) -> None:
    import threading

    with open_test_store(tmp_path / "store") as store:
        worker = Worker(store, store.jobs())
        for poll in (float("nan"), float("inf"), 0):
            with pytest.raises(InvalidInputError, match="poll_s must be a finite number"):
                worker.run_forever(threading.Event(), poll)


def test_update_changes_metadata_without_reembedding(tmp_path: Path, corpus: Path) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.ingest_path(corpus / "tyres.txt", truth_level="L2")
        before = store.catalog.con.execute(
            "SELECT label, embedding FROM chunks ORDER BY label").fetchall()
        doc = store.update_document("tyres.txt", truth_level="L1", tags=["winter"],
                                    metadata={"reviewed": "yes"})
        after = store.catalog.con.execute(
            "SELECT label, embedding FROM chunks ORDER BY label").fetchall()
        assert (doc["truth_level"], doc["tags"], doc["custom"], doc["version"]) == (
            "L1", ["winter"], {"reviewed": "yes"}, "1.0.1")
        assert before == after
        hits = store.search("tyres wear", truth_levels=["L1"], answerability_threshold=None)
        assert hits.hits and {h.truth_level for h in hits} == {"L1"}
        rows = store.list_documents(truth_levels=["L1"], tag="winter")
        assert [r["document_id"] for r in rows] == ["tyres.txt"]
        assert rows[0]["tier"] == "gold" and rows[0]["word_count"] > 10
        assert store.list_documents(truth_levels=["L2"]) == []
        # the version cited before the update stays readable and listed (it was lost: a
        # citation naming 1.0.0 could no longer be resolved)
        history = store.history("tyres.txt")
        assert [(h["version"], h["truth_level"], h["current"]) for h in history] == [
            ("1.0.0", "L2", False), ("1.0.1", "L1", True)]
        assert history[0]["change_summary"] == (
            "updated: truth level L2 -> L1; tags; metadata reviewed")
        assert store.version_text("tyres.txt", "1.0.0") == store.version_text("tyres.txt", "1.0.1")


def test_an_update_to_the_values_a_document_has_is_not_a_new_version(tmp_path: Path,
                                                                      corpus: Path) -> None:
    """Each one bumped the version and archived a copy ("updated: nothing changed"); setting
    the same tag again even said "tags"."""
    with open_test_store(tmp_path / "store") as store:
        store.ingest_path(corpus / "tyres.txt", truth_level="L2")
        store.update_document("tyres.txt", tags=["winter"], metadata={"team": "ops"})
        generation = store.generation
        for same in ({"truth_level": "L2"}, {"tags": ["winter"]}, {"tags": "winter"},
                     {"metadata": {"team": "ops"}},
                     {"truth_level": "L2", "tags": ["winter"], "metadata": {"team": "ops"}}):
            assert store.update_document("tyres.txt", **same)["version"] == "1.0.1", same
        assert store.generation == generation
        assert [h["version"] for h in store.history("tyres.txt")] == ["1.0.0", "1.0.1"]
        assert store.update_document("tyres.txt", metadata={"team": "qa"})["version"] == "1.0.2"
        assert store.history("tyres.txt")[1]["change_summary"] == "updated: metadata team"
    out = CliRunner().invoke(main, ["update", "tyres.txt", "--tag", "winter", "--store",
                                    str(tmp_path / "store")])
    assert out.exit_code == 0 and out.output.startswith("unchanged"), out.output


def test_two_files_that_would_share_an_id_are_not_queued(tmp_path: Path) -> None:
    # one job per file and each job its own ingest: README.md of two folders queued together
    # became one document, the second job replacing the first
    for folder in ("en", "fr"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text(f"{folder} text about brakes", encoding="utf-8")
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match="would both be document 'README.md'"):
            store.enqueue_paths(tmp_path / "en", tmp_path / "fr")
        assert store.jobs().jobs() == []  # nothing was queued
        ids = store.enqueue_paths(tmp_path, include=["*/README.md"])
        assert len(ids) == 2


def test_update_reads_tags_and_metadata_as_ingest_does(tmp_path: Path, corpus: Path) -> None:
    # tags="winter" became ['w', 'i', 'n', ...]; an object was stored as its repr; a
    # truth_level in metadata was kept as a custom field while the column stayed L2
    with open_test_store(tmp_path / "store") as store:
        store.ingest_path(corpus / "tyres.txt", truth_level="L2")
        assert store.update_document("tyres.txt", tags="winter, snow")["tags"] == ["winter", "snow"]
        doc = store.update_document("tyres.txt", metadata={"truth_level": "L1", "team": "ops"})
        assert (doc["truth_level"], doc["custom"]) == ("L1", {"team": "ops"})
        for metadata, message in (({"k": object()}, "has type object"),
                                  ({"domain": "auto"}, "set document columns at ingest")):
            with pytest.raises(InvalidInputError, match=message):
                store.update_document("tyres.txt", metadata=metadata)
        with pytest.raises(InvalidInputError, match="given twice"):
            store.update_document("tyres.txt", tags=["a"], metadata={"tags": ["b"]})
        assert store.get_document("tyres.txt")["tags"] == ["winter", "snow"]  # unchanged


def test_a_source_gone_before_its_turn_fails_once_for_good_saying_so(
    tmp_path: Path, corpus: Path
) -> None:
    """Deleted between its queue and its turn, a file failed "no such file" five times over
    eight minutes into the DLQ: it cannot come back by waiting, so its one attempt says so."""
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        (corpus / "tyres.txt").unlink()
        queue = store.jobs(clock=clock)
        outcome = Worker(store, queue).run_once()
        assert outcome is not None
        assert (outcome.status, outcome.attempts, outcome.reason) == (DLQ, 1, SOURCE_MISSING)
        job = queue.jobs()[0]
        assert job["last_error"].startswith(
            f"source {corpus / 'tyres.txt'} no longer exists; re-add it and run "
            "`enginelib jobs --retry-dlq`")
        assert [a["outcome"] for a in queue.attempts(job["job_id"])] == [DLQ]
        clock.advance(10_000)
        assert Worker(store, queue).run_once() is None


def test_a_file_over_the_size_a_job_reads_is_refused_named_and_failed_once_in_a_folder(
    tmp_path: Path, corpus: Path
) -> None:
    """A file over the loader's 64 MiB was read, failed and retried five times into the DLQ,
    its advice a flag (--max-file-mb) that `ingest --queue` refuses."""
    import os

    from enginelib.errors import SourceTooLargeError
    from enginelib.loaders import DEFAULT_MAX_BYTES

    big = corpus / "big.txt"
    big.write_text("brake pads " * 10, encoding="utf-8")
    with open_test_store(tmp_path / "store") as store:
        os.truncate(big, DEFAULT_MAX_BYTES + 1)  # sparse: nothing is written
        with pytest.raises(SourceTooLargeError, match=r"without --queue.*--max-file-mb 65"):
            store.enqueue_paths(big)  # named, it is refused at once, nothing queued
        assert store.jobs().counts()[PENDING] == 0
        big.write_text("brake pads " * 10, encoding="utf-8")
        store.enqueue_paths(corpus / "big.txt")
        os.truncate(big, DEFAULT_MAX_BYTES + 1)  # grew past the limit before its turn
        queue = store.jobs(clock=Clock())
        outcome = Worker(store, queue).run_once()
        assert outcome is not None
        assert (outcome.status, outcome.attempts, outcome.reason) == (DLQ, 1, SOURCE_TOO_LARGE)
        error = queue.jobs()[0]["last_error"]
        assert "over the 64.0 MiB a queued job reads" in error
        assert f"`enginelib ingest --max-file-mb 65 {big}`" in error


def test_a_pipe_is_never_queued_and_a_file_turned_pipe_fails_its_job(tmp_path: Path,
                                                                     corpus: Path) -> None:
    """A queued FIFO blocked the worker for good on its read (in serve, every later job
    waited behind it); a direct ingest already skipped it."""
    import os
    import threading

    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    swapped = corpus / "tyres.txt"
    outcomes: list[Any] = []
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(LoaderError, match="not a regular file"):
            store.enqueue_paths(fifo)
        store.enqueue_paths(swapped)
        swapped.unlink()
        os.mkfifo(swapped)  # replaced by a pipe between the queue and the worker
        worker = threading.Thread(daemon=True, target=lambda: outcomes.extend(
            Worker(store, store.jobs()).run_until_idle()))
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "the worker is blocked on a pipe"
        assert [o.status for o in outcomes] == [DLQ]  # a pipe is not read by waiting
        assert "not a regular file" in (store.jobs().jobs()[0]["last_error"] or "")


def test_a_queued_file_that_became_a_folder_fails_saying_to_queue_the_folder(
        tmp_path: Path, corpus: Path) -> None:
    # the job failed with load_file's advice for Python callers ("use iter_load()")
    swapped = corpus / "tyres.txt"
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(swapped)
        swapped.unlink()
        swapped.mkdir()
        outcomes = Worker(store, store.jobs()).run_until_idle()
        assert [o.status for o in outcomes] == [DLQ]
        error = store.jobs().jobs()[0]["last_error"] or ""
        assert "is a folder now" in error and "ingest --queue" in error and "iter_load" not in error


def test_files_no_loader_reads_are_not_queued(tmp_path: Path, corpus: Path) -> None:
    """A logo or a .json beside the documents became a job that could never succeed: it
    failed five times over hours of backoff into the DLQ, where a direct ingest of the same
    folder skipped it. Walking a folder now leaves them out; naming one is refused at once."""
    from enginelib.errors import UnsupportedFormatError

    (corpus / "logo.png").write_bytes(b"\x89PNG\r\n")
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus)
        queued = [Path(job["source"]).name for job in store.jobs().jobs()]
        assert "logo.png" not in queued and queued
        with pytest.raises(UnsupportedFormatError, match="unsupported format .png"):
            store.enqueue_paths(corpus / "logo.png")


def test_a_job_left_running_by_an_earlier_process_with_this_pid_is_taken_back_at_once(
    tmp_path: Path, corpus: Path
) -> None:
    """A restarted container runs `serve` under the same pid (1) and hostname as the one that
    was killed: its job was not taken back, because an owner with this process's pid passed
    for this process, and it waited out the 300 s lease. An owner naming this pid but no
    worker alive in this process is a previous life of the pid."""
    import os
    import socket

    clock = Clock()
    with open_test_store(tmp_path / "s") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        queue = store.jobs(clock=clock)
        old = f"{socket.gethostname()}:{os.getpid()}:dead0"  # the killed process's worker
        assert queue.claim(old) is not None
        worker = Worker(store, queue)
        assert worker.run_once() is None  # taken back, then its retry waits the backoff
        assert queue.counts()[RUNNING] == 0
        clock.advance(delay_bounds(1)[1])
        outcome = worker.run_once()
        assert outcome is not None and outcome.status == DONE


def test_a_delete_cancels_the_jobs_that_would_bring_its_document_back(tmp_path: Path) -> None:
    # `ingest --queue`, then `delete`, then `worker`: the job queued before the delete ran
    # after it and the document came back (serve's delete and prune delete the same way)
    source = tmp_path / "brakes.md"
    source.write_text("# Brakes\n\n" + paragraphs(2), encoding="utf-8")
    store = open_test_store(tmp_path / "s")
    store.ingest_path(source)
    source.write_text("# Brakes\n\n" + paragraphs(3), encoding="utf-8")
    (other := tmp_path / "tyres.md").write_text("# Tyres\n\n" + paragraphs(2, "tyres"),
                                                encoding="utf-8")
    queued = store.enqueue_paths(source, other)
    store.delete_document("brakes.md")
    outcomes = Worker(store, store.jobs()).run_until_idle()
    assert [o.source for o in outcomes] == [str(other.resolve())]
    assert [d["document_id"] for d in store.list_documents()] == ["tyres.md"]
    cancelled = [j for j in store.jobs().jobs() if j["job_id"] == queued[0]][0]
    assert cancelled["status"] == "DLQ" and "deleted after this job was queued" in cancelled["last_error"]
    store.close()


def test_an_older_job_waiting_for_its_retry_does_not_undo_a_newer_one(tmp_path: Path) -> None:
    # upload v1 failed once (retry scheduled), upload v2 of the same document is done; the
    # retry of v1 then ran and put v1's text back over v2
    clock = Clock()
    first, second = tmp_path / "v1" / "pads.md", tmp_path / "v2" / "pads.md"
    for path in (first, second):
        path.parent.mkdir()
    first.write_text("# Pads\n\nVersion one: replace under 2 mm.", encoding="utf-8")
    second.write_text("# Pads\n\nVersion two: replace under 3 mm.", encoding="utf-8")
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs(clock=clock)
        old, new = queue.enqueue([NewJob(str(first), "pads.md", {}, kind="upload"),
                                  NewJob(str(second), "pads.md", {}, kind="upload")])
        worker = Worker(store, queue, owner="w1")
        with disk_full():  # v1 fails, and is retried later
            assert [o.status for o in [worker.run_once()] if o] == [FAILED]
        assert [o.status for o in worker.run_until_idle()] == [DONE]
        clock.advance(10_000)
        assert worker.run_until_idle() == []
        assert "Version two" in store.get_document("pads.md")["content"]
        superseded = [j for j in queue.jobs() if j["job_id"] == old][0]
        assert superseded["status"] == DLQ and f"job {new}" in superseded["last_error"]


@pytest.mark.parametrize("how", ["lease expired", "worker gone"])
def test_a_job_that_stops_its_worker_every_time_reaches_the_dlq(
    tmp_path: Path, corpus: Path, how: str
) -> None:
    """A source that kills its worker (a loader out of memory on it) came back to PENDING after
    every lost run, past its attempts (6 of 5, 7 of 5...): each restart took it again, for ever."""
    import os
    import socket

    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt", max_attempts=2)
        queue = store.jobs(clock=clock, lease_s=10)
        dead = f"{socket.gethostname()}:{os.getpid()}:dead0"  # no live worker of this process
        for _ in range(2):
            assert queue.claim(dead) is not None
            clock.advance(11)
            lost = queue.expire_leases() if how == "lease expired" else queue.reclaim_orphans(
                lambda owner: owner == dead)
            assert len(lost) == 1
            clock.advance(delay_bounds(1)[1])
        job = queue.jobs()[0]
        assert (job["status"], job["attempts"]) == (DLQ, 2)
        assert "last attempt" in job["last_error"] and "--retry-dlq" in job["last_error"]
        assert [a["outcome"] for a in queue.attempts(job["job_id"])] == ["LOST", "LOST"]
        assert queue.claim("w2") is None
        assert queue.retry_dlq() == 1
        assert [o.status for o in Worker(store, queue).run_until_idle()] == [DONE]


def _damage_inbox(folder: Path, damage: str) -> None:
    import os

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "0-damaged.json"
    if damage == "pipe":  # read, it blocked the worker (and `enginelib jobs`) for good
        os.mkfifo(target)
    elif damage == "nested":  # json's parser raised RecursionError out of every pass
        target.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    elif damage == "bad name taken":  # the rename to *.bad raised out of every pass
        target.write_text("[{truncated", encoding="utf-8")
        (folder / "0-damaged.bad").mkdir()
        (folder / "0-damaged.bad" / "kept").write_text("x", encoding="utf-8")
    elif damage == "oversized":
        target.write_bytes(b" " * (inbox.MAX_INBOX_FILE_BYTES + 1))


@pytest.mark.parametrize("damage", ["pipe", "nested", "bad name taken", "oversized"])
def test_an_inbox_file_that_cannot_be_imported_never_stops_the_worker(
    tmp_path: Path, corpus: Path, damage: str
) -> None:
    import threading

    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        _damage_inbox(folder, damage)
        inbox.drop(store.path, [NewJob(str(corpus / "tyres.txt"), "tyres.txt", {})])
        outcomes: list[Any] = []
        counted: list[int] = []
        worker = threading.Thread(daemon=True, target=lambda: (
            counted.append(inbox.pending(store.path)),
            outcomes.extend(Worker(store, store.jobs()).run_until_idle())))
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "the worker is blocked on the inbox"
        assert counted == [1] and [o.status for o in outcomes] == [DONE]
        assert not list(folder.glob("*.json"))
        assert len(list(folder.glob("0-damaged*.bad"))) == (2 if damage == "bad name taken" else 1)


def test_an_inbox_entry_the_catalog_would_refuse_is_kept_with_its_reason_and_the_rest_queued(
    tmp_path: Path, corpus: Path
) -> None:
    """A lone surrogate in one entry failed the insert of the whole file at every poll, so
    no job of the store ran again; a bad option failed its job five times into the DLQ."""
    import json

    good = {"source": str(corpus / "tyres.txt"), "document_id": "tyres.txt", "options": {}}
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir(parents=True)
        (folder / "mixed.json").write_text(
            json.dumps([{**good, "document_id": "\ud800"}, good,
                        {**good, "document_id": "x.txt", "options": {"truth_level": "L9"}}]),
            encoding="utf-8")
        outcomes = Worker(store, store.jobs()).run_until_idle()
        assert [(o.status, o.source) for o in outcomes] == [(DONE, good["source"])]
        kept = json.loads((folder / "mixed.bad").read_text(encoding="utf-8"))
        assert [k["entry"]["document_id"] for k in kept] == ["\ud800", "x.txt"]
        assert "lone surrogate" in kept[0]["error"] and "L9" in kept[1]["error"]
        assert not (folder / "mixed.json").exists()


def test_a_job_whose_end_could_not_be_written_is_taken_back_at_once_when_the_disk_has_room(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk as the worker wrote DONE left the job RUNNING under serve's live worker,
    whose lease kept it from being run again for 300 s after the disk had room."""
    from enginelib import faults

    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        queue = store.jobs(clock=clock)
        worker = Worker(store, queue)
        monkeypatch.setattr(faults, "_hits", {})
        monkeypatch.setenv(faults.ENOSPC_VAR, "after_job_ingest")
        with pytest.raises(OSError, match="No space left"):
            worker.run_once()
        monkeypatch.delenv(faults.ENOSPC_VAR)
        assert worker.run_until_idle() == []  # taken back; its retry waits the backoff
        assert queue.counts()[RUNNING] == 0
        clock.advance(delay_bounds(1)[1])
        assert [(o.status, o.attempts) for o in worker.run_until_idle()] == [(DONE, 2)]
        job = queue.jobs()[0]
        assert [a["outcome"] for a in queue.attempts(job["job_id"])] == ["LOST", DONE]
        assert store.get_document("tyres.txt")["version"] == "1.0.0"  # ingested once


@pytest.mark.parametrize("attempts", [0, False, -1, 1.5, float("nan")])
def test_enqueue_refuses_a_number_of_attempts_that_is_not_one_or_more(
    tmp_path: Path, corpus: Path, attempts: object
) -> None:
    # 0 and False were read as "not given" and queued the job with 5 attempts
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(InvalidInputError, match="max_attempts must be"):
            store.enqueue_paths(corpus / "tyres.txt", max_attempts=attempts)  # type: ignore[arg-type]
        assert store.jobs().jobs() == []


def test_a_running_job_without_a_lease_is_taken_back(tmp_path: Path, corpus: Path) -> None:
    clock = Clock()
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        queue = store.jobs(clock=clock)
        assert queue.claim("elsewhere:1:w") is not None  # another machine's worker
        with store.catalog.transaction() as con:  # its lease lost from the row
            con.execute("UPDATE jobs SET lease_until = NULL")
        worker = Worker(store, queue)
        assert worker.run_until_idle() == [] and queue.counts()[RUNNING] == 0
        clock.advance(delay_bounds(1)[1])
        assert [o.status for o in worker.run_until_idle()] == [DONE]


def test_a_large_enqueue_holds_the_store_for_a_moment_not_a_minute(tmp_path: Path) -> None:
    """One INSERT per job: 50,000 files queued (a folder, or an inbox file serve's worker
    imports under the lock every search waits on) took ~40 s here; one statement ~0.3 s."""
    import time

    jobs = [NewJob(f"/docs/{i}.md", f"{i}.md", {"tags": ["t"]}) for i in range(50_000)]
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        first = queue.enqueue(jobs[:1])
        started = time.monotonic()
        ids = queue.enqueue(jobs[1:])
        assert time.monotonic() - started < 5.0
        assert ids == list(range(first[0] + 1, first[0] + 50_000))
        listed = queue.jobs(offset=49_998)
        assert [(j["job_id"], j["document_id"], j["options"]) for j in listed] == [
            (ids[-2], "49998.md", {"tags": ["t"]}), (ids[-1], "49999.md", {"tags": ["t"]})]
        assert queue.enqueue([]) == []


def test_a_job_row_with_a_negative_attempt_count_fails_as_its_first_attempt(
    tmp_path: Path, corpus: Path
) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        with store.catalog.transaction() as con:  # edited by hand
            con.execute("UPDATE jobs SET attempts = -3")
        with disk_full():
            outcome = Worker(store, store.jobs()).run_once()
        assert outcome is not None and (outcome.status, outcome.attempts) == (FAILED, 1)
        assert store.jobs().counts()[RUNNING] == 0


def test_only_a_file_in_the_stores_uploads_is_deleted_when_its_upload_job_is_done(
    tmp_path: Path, corpus: Path
) -> None:
    """An upload's file is removed once its job is DONE. An inbox entry (or any job) of kind
    upload naming a file elsewhere had the worker delete that file, and its folder."""
    import json

    victim = corpus / "tyres.txt"
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir(parents=True)
        (folder / "x.json").write_text(json.dumps([{
            "source": str(victim), "document_id": "tyres.txt", "options": {}, "kind": "upload"}]),
            encoding="utf-8")
        assert Worker(store, store.jobs()).run_until_idle() == []  # never queued
        assert "'upload'" in (folder / "x.bad").read_text(encoding="utf-8")
        store.jobs().enqueue([NewJob(str(victim), "tyres.txt", {}, kind="upload")])
        assert [o.status for o in Worker(store, store.jobs()).run_until_idle()] == [DONE]
        assert victim.is_file()


def test_an_inbox_file_whose_refused_entries_cannot_be_kept_is_queued_once(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk refusing the *.bad left the inbox file in place after its good jobs were
    queued: every pass queued them again."""
    import errno
    import json

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    good = {"source": str(corpus / "tyres.txt"), "document_id": "tyres.txt", "options": {}}
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir(parents=True)
        (folder / "mixed.json").write_text(json.dumps([good, {"source": 5}]), encoding="utf-8")
        monkeypatch.setattr(inbox, "write_atomic", full)
        queue = store.jobs()
        assert inbox.import_into(store.path, queue) == 1
        assert inbox.import_into(store.path, queue) == 0
        assert len(queue.jobs()) == 1 and not list(folder.iterdir())


def test_an_inbox_file_whose_import_was_killed_before_its_removal_is_queued_once(
    tmp_path: Path, corpus: Path
) -> None:
    """SIGKILL between the commit of an inbox file's jobs and the file's removal (reproduced:
    a worker killed at a random moment while importing, and at the crash point there) left
    the file in the inbox: the next pass queued every job of it a second time."""
    import json
    import os
    import signal
    import subprocess
    import sys

    good = {"source": str(corpus / "tyres.txt"), "document_id": "tyres.txt", "options": {}}
    with open_test_store(tmp_path / "store") as store:
        folder = store.path / inbox.INBOX_DIR
        folder.mkdir(parents=True)
        (folder / "one.json").write_text(json.dumps([good]), encoding="utf-8")
    root = Path(__file__).resolve().parent.parent
    script = ("import sys; from tests.helpers import open_test_store; from enginelib.jobs import inbox\n"
              "store = open_test_store(sys.argv[1]); inbox.import_into(store.path, store.jobs())")
    killed = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "store")], cwd=root, timeout=120,
        env={**os.environ, "PYTHONPATH": str(root), "ENGINELIB_CRASH_AT": "inbox_after_enqueue"},
        capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        assert len(queue.jobs()) == 1  # committed before the kill
        assert inbox.import_into(store.path, queue) == 0
        assert len(queue.jobs()) == 1 and not list(folder.iterdir())
        assert store._catalog.con.execute(
            "SELECT count(*) FROM meta WHERE key LIKE 'jobs.receipt:%'").fetchone() == (0,)
        assert [o.status for o in Worker(store, queue).run_until_idle()] == [DONE]


def test_the_job_list_takes_a_set_of_statuses_and_an_empty_one_lists_none(
    tmp_path: Path, corpus: Path
) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt", corpus / "guides" / "brakes.md")
        queue = store.jobs()
        assert len(queue.jobs(statuses=[PENDING, DLQ])) == 2
        assert queue.jobs(statuses=[]) == [] and queue.jobs(statuses=[DONE]) == []
        with pytest.raises(InvalidInputError, match="'LOST'"):
            queue.jobs(statuses=[PENDING, "LOST"])


def test_one_status_given_as_statuses_says_to_give_status(tmp_path: Path, corpus: Path) -> None:
    # its letters were read as statuses: "job status 'P' is not one of [...]"
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(corpus / "tyres.txt")
        queue = store.jobs()
        with pytest.raises(InvalidInputError, match=r"statuses must be a list .* for one, give "
                                                    r"status='PENDING'"):
            queue.jobs(statuses=PENDING)  # type: ignore[arg-type]
        assert len(queue.jobs(status=PENDING)) == 1


def test_a_queued_jsonl_file_is_streamed_into_the_ingest_batch_by_batch(tmp_path: Path) -> None:
    """The job read its whole file into memory before ingesting any of it (a gzipped JSONL may
    inflate to many times its size). Streamed, the batches before a bad line are in the
    store before that line is read, and the error says so and names the line."""
    import json

    from enginelib.store import DEFAULT_BATCH

    total, bad = 2 * DEFAULT_BATCH + 50, 2 * DEFAULT_BATCH + 40  # bad: a 0-based index
    records = [json.dumps({"id": f"r{i}", "text": f"Record {i} on brake pads."})
               for i in range(total)]
    path = tmp_path / "records.jsonl"
    broken = [*records[:bad], '{"id": "torn", "text": ', *records[bad + 1:]]
    path.write_text("\n".join(broken) + "\n", encoding="utf-8")
    with open_test_store(tmp_path / "store") as store:
        store.enqueue_paths(path)
        queue = store.jobs()
        worker = Worker(store, queue)
        outcome = worker.run_once()
        assert outcome is not None and (outcome.status, outcome.reason) == (DLQ, BAD_INPUT)
        assert outcome.error is not None
        assert f"{path} line {bad + 1}: invalid JSON" in outcome.error
        # two whole batches committed; the third was being read when the bad line failed it
        committed = 2 * DEFAULT_BATCH
        assert f"{committed} document(s) from earlier batches were committed" in outcome.error
        assert store.stats()["documents"] == committed

        path.write_text("\n".join(records) + "\n", encoding="utf-8")  # the line mended
        assert queue.retry_dlq() == 1
        outcome = worker.run_once()
        assert outcome is not None and outcome.status == DONE
        assert store.stats()["documents"] == total
        [job] = queue.jobs()
        assert len(job["documents"]) == total

"""A write (a delete) made while a worker drains a queue waits for the job in progress, not
for the queue: between two jobs the worker gives the store's writers their turn.

The worker let go of its write lock after each job and took it straight back, and a plain
lock goes to whichever thread asks first when it is free, mostly the one that just let go
of it: a delete sent while 50 jobs waited came after a few of them, or after all of them.
Order is read from the embedder's journal: each job's passages, and each write once done.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

import enginelib
from enginelib.embedders import HashingEmbedder
from enginelib.jobs import DONE, NewJob, Worker
from enginelib.web import Service, create_app
from tests.helpers import SMALL_CHUNKS, doc, open_test_store, paragraphs
from tests.test_jobs_threads import WorkerThread, _wait_for

WRITES = 8
JOBS = WRITES + 2
WAIT_S = 60.0  # the longest a step may take before the test calls it hung
# Long enough for the first write to reach the lock the held job keeps it from.
HOLD_S = 0.5
_JOB = re.compile(r"\bjob(\d+)\b")


class JournalEmbedder(HashingEmbedder):
    """The hashing embedder, writing down which job's passages it embeds; the first job's
    first embedding stops until ``release`` is set, so a write can be sent while it runs."""

    def __init__(self) -> None:
        super().__init__(64)
        self.journal: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        jobs = sorted({f"job{m}" for text in texts for m in _JOB.findall(text)})
        self.journal.extend(jobs)
        if jobs and not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(WAIT_S), "the test never released the first job"
        return super().embed(texts, progress)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A store with WRITES documents to delete, and JOBS files to queue beside it."""
    path = tmp_path / "store"
    with open_test_store(path) as store:
        store.ingest_documents([doc(f"old{i}.md", paragraphs(2, f"old{i}")) for i in range(WRITES)])
    for n in range(JOBS):
        (tmp_path / f"file{n}.md").write_text(f"# File {n}\n\n" + paragraphs(2, f"job{n}"),
                                              encoding="utf-8")
    return path


def _jobs(store_path: Path) -> list[NewJob]:
    return [NewJob(str(store_path.parent / f"file{n}.md"), f"file{n}.md", {})
            for n in range(JOBS)]


def _write_while_the_first_job_runs(embedder: JournalEmbedder, write: Callable[[int], None]) -> None:
    """``write(0)``, ..., ``write(WRITES - 1)`` one after the other in a thread of their own,
    the first sent while the first job is held in its embedding; each is journaled once done."""
    out: dict[str, BaseException] = {}

    def writes() -> None:
        try:
            for i in range(WRITES):
                write(i)
                embedder.journal.append(f"write{i}")
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out["error"] = exc

    assert embedder.entered.wait(WAIT_S), "the first job never reached its embedding"
    writer = threading.Thread(target=writes, daemon=True)
    writer.start()
    writer.join(HOLD_S)
    held_meanwhile = writer.is_alive()
    embedder.release.set()
    writer.join(WAIT_S)
    assert not writer.is_alive(), "the writes never returned"
    assert "error" not in out, out
    assert held_meanwhile, "the first write did not wait for the job in progress"


def _jobs_before_each_write(journal: list[str]) -> list[int]:
    """For each write, how many jobs had begun embedding when it was done."""
    seen: set[str] = set()
    before = []
    for entry in journal:
        if entry.startswith("job"):
            seen.add(entry)
        else:
            before.append(len(seen))
    return before


def _assert_one_job_at_most_per_write(journal: list[str]) -> None:
    # Write i waits for the job running when it was sent, and that job only: i + 1 jobs
    # (the held first one, then one per write before it) at most have begun before it is done.
    before = _jobs_before_each_write(journal)
    steps = " ".join(dict.fromkeys(journal))
    assert len(before) == WRITES, steps
    assert all(count <= i + 1 for i, count in enumerate(before)), (
        f"jobs begun before each write was done: {before}, at most {list(range(1, WRITES + 1))}"
        f" expected; in order: {steps}")


def test_each_delete_a_library_user_makes_waits_for_one_job_of_a_draining_queue(
    store_path: Path,
) -> None:
    embedder = JournalEmbedder()
    with enginelib.open(store_path, embedder=embedder, chunking=SMALL_CHUNKS) as store:
        try:
            queue = store.jobs()
            queue.enqueue(_jobs(store_path))
            with WorkerThread(Worker(store, queue)):
                _write_while_the_first_job_runs(
                    embedder, lambda i: store.delete_document(f"old{i}.md"))
                _wait_for(lambda: queue.counts()[DONE] == JOBS, "the queued jobs")
        finally:
            embedder.release.set()
        _assert_one_job_at_most_per_write(embedder.journal)
        assert {d["document_id"] for d in store.list_documents()} == {
            f"file{n}.md" for n in range(JOBS)}


@pytest.fixture
def served(store_path: Path) -> Iterator[tuple[TestClient, Service, JournalEmbedder]]:
    embedder = JournalEmbedder()
    service = Service(enginelib.open(store_path, embedder=embedder, chunking=SMALL_CHUNKS),
                      poll_s=0.005)
    with service.lock:
        service.queue.enqueue(_jobs(store_path))
    try:
        # TestClient's default Host, "testserver", is not this machine: the app refuses it.
        with TestClient(create_app(service), base_url="http://127.0.0.1:8765") as client:
            yield client, service, embedder
    finally:
        embedder.release.set()


def test_each_delete_sent_to_serve_waits_for_one_job_of_a_draining_queue(
    served: tuple[TestClient, Service, JournalEmbedder],
) -> None:
    client, service, embedder = served

    def delete(i: int) -> None:
        response = client.delete(f"/api/documents/old{i}.md")
        assert response.status_code == 200, response.text

    _write_while_the_first_job_runs(embedder, delete)
    _wait_for(lambda: service.jobs()["counts"][DONE] == JOBS, "the queued jobs")
    _assert_one_job_at_most_per_write(embedder.journal)
    listed = {d["document_id"] for d in client.get("/api/documents").json()}
    assert listed == {f"file{n}.md" for n in range(JOBS)}

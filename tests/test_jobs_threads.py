"""A Worker run in a library user's own thread, made without locks (``Worker(store, queue)``),
beside that user's Store and JobQueue calls in another thread.

Its default locks were its own: the store's calls and the queue's, made in the user's
thread, ran on the store's one DuckDB connection in the middle of the worker's pass
("connection is busy", an aborted transaction, a fetch that got another call's rows), and
the store's writers got in while a job embedded. A job the user queued never woke it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import enginelib
from enginelib import Store
from enginelib.jobs import DLQ, DONE, FAILED, JobQueue, NewJob, Worker
from tests.helpers import SMALL_CHUNKS, doc, open_test_store, paragraphs
from tests.test_serve_sharing import HeldEmbedder

ROUNDS = 12
WAIT_S = 60.0  # the longest a step may take before the test calls it hung
# How long a call from the caller's thread is given to get in while a job embeds: one that
# must wait for the job is let go after it, one that did not wait returned long before.
HOLD_S = 1.0


@pytest.fixture
def sources(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "src"
    folder.mkdir()
    made = []
    for i in range(ROUNDS):
        path = folder / f"file{i}.md"
        path.write_text(f"# File {i}\n\n" + paragraphs(3 + i % 3, f"topic{i}"), encoding="utf-8")
        made.append(path)
    return made


class WorkerThread:
    """``worker.run_forever`` in a daemon thread, stopped (and joined) on exit; ``idle`` is
    set each time a pass of it found nothing due."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.stop = threading.Event()
        self.idle = threading.Event()
        self.thread = threading.Thread(target=worker.run_forever,
                                       args=(self.stop, 0.005, self.idle.set), daemon=True)

    def __enter__(self) -> WorkerThread:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.worker.wake.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "the worker thread did not stop"


def _wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"{what}: still not done after {WAIT_S:.0f} s"
        time.sleep(0.01)


def test_a_worker_thread_takes_turns_with_the_store_and_queue_calls_of_another(
    tmp_path: Path, sources: list[Path]
) -> None:
    failures: list[str] = []
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("base.md", "Brake pads squeal when worn.\n\n" + paragraphs(4))])
        queue = store.jobs()
        worker = Worker(store, queue)
        with WorkerThread(worker):
            for i, source in enumerate(sources):
                steps: list[tuple[str, Callable[[], Any]]] = [
                    ("enqueue", lambda s=source: queue.enqueue([NewJob(str(s), s.name, {})])),
                    ("wake", worker.wake.set),
                    ("search", lambda: _found(store, "brake pads squeal", "base.md")),
                    ("ingest", lambda i=i: store.ingest_documents(
                        [doc(f"note{i}.md", paragraphs(2 + i % 3, f"note{i}"))])),
                    ("counts", queue.counts),
                    ("list", store.list_documents),
                    ("delete", lambda i=i: store.delete_document(f"note{i}.md")),
                    ("page", lambda: queue.jobs(limit=5)),
                ]
                for name, step in steps:
                    try:
                        step()
                    except Exception as exc:  # noqa: BLE001 - every collision is reported
                        failures.append(f"round {i} {name}: {type(exc).__name__}: {exc}")
            _wait_for(lambda: _settled(queue), "the queued jobs")
            counts = queue.counts()
        assert failures == []
        assert (counts[DONE], counts[FAILED], counts[DLQ]) == (ROUNDS, 0, 0), counts
        assert worker.last_error is None
        documents = {row["document_id"] for row in store.list_documents()}
        assert documents == {"base.md", *(s.name for s in sources)}


def _found(store: Store, query: str, document_id: str) -> None:
    response = store.search(query, answerability_threshold=None)
    assert document_id in {hit.document_id for hit in response.hits}, response


def _settled(queue: JobQueue) -> bool:
    counts = queue.counts()
    return counts[DONE] + counts[FAILED] + counts[DLQ] >= ROUNDS


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Store, HeldEmbedder, Path]]:
    path = tmp_path / "store"
    with open_test_store(path) as store:
        store.ingest_documents([doc("pads.md", "Brake pads squeal when worn.\n\n" + paragraphs(4))])
    embedder = HeldEmbedder()
    source = tmp_path / "rotors.md"
    source.write_text("Rotors warp under heat.\n\n" + paragraphs(6, "rotors"), encoding="utf-8")
    with enginelib.open(path, embedder=embedder, chunking=SMALL_CHUNKS) as store:
        try:
            yield store, embedder, source
        finally:
            embedder.release.set()


def test_the_callers_thread_searches_and_reads_the_queue_while_a_default_worker_embeds(
    held: tuple[Store, HeldEmbedder, Path],
) -> None:
    store, embedder, source = held
    queue = store.jobs()
    worker = Worker(store, queue)
    # Its query vector is now in the store's query cache: the search below needs no model.
    _found(store, "brake pads squeal", "pads.md")
    with WorkerThread(worker):
        embedder.armed = True
        queue.enqueue([NewJob(str(source), "rotors.md", {})])
        worker.wake.set()
        assert embedder.entered.wait(WAIT_S), "the job never reached its embedding"
        # the job holds the model: the search and the queue's reads go on meanwhile
        outcome: dict[str, Any] = {}

        def read() -> None:
            outcome["hits"] = {h.document_id for h in store.search(
                "brake pads squeal", answerability_threshold=None).hits}
            outcome["running"] = queue.counts()["RUNNING"]

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(WAIT_S)
        held_meanwhile = not embedder.release.is_set()
        embedder.release.set()
        assert not reader.is_alive(), "the search waited for the job's embedding"
        assert held_meanwhile and outcome == {"hits": {"pads.md"}, "running": 1}
        _wait_for(lambda: queue.counts()[DONE] == 1, "the job")
    assert store.get_document("rotors.md")["title"]


def _while_the_job_embeds(
    store: Store, embedder: HeldEmbedder, job: NewJob, call: Callable[[], Any], *,
    closes: bool = False,
) -> tuple[JobQueue, dict[str, Any]]:
    """``call`` made in another thread while a worker made without locks embeds ``job``;
    the embedding goes on once ``call`` returned or HOLD_S passed, whichever comes first.
    Then the job is waited for, unless ``call`` ``closes`` the store."""
    queue = store.jobs()
    worker = Worker(store, queue)
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out["error"] = exc

    with WorkerThread(worker):
        embedder.armed = True
        queue.enqueue([job])
        worker.wake.set()
        assert embedder.entered.wait(WAIT_S), "the job never reached its embedding"
        caller = threading.Thread(target=run, daemon=True)
        caller.start()
        caller.join(HOLD_S)  # long enough for the call to get in, had it not to wait
        embedder.release.set()
        caller.join(WAIT_S)
        assert not caller.is_alive(), "the call never returned"
        if not closes:
            _wait_for(lambda: _settled_one(queue), "the job")
    return queue, out



def _settled_one(queue: JobQueue) -> bool:
    counts = queue.counts()
    return counts[DONE] + counts[FAILED] + counts[DLQ] >= 1


def test_a_delete_from_the_callers_thread_waits_for_the_job_a_default_worker_embeds(
    held: tuple[Store, HeldEmbedder, Path],
) -> None:
    """The delete got in while the job embedded the document's new text: the job's write
    then put the document back, and the job went to the DLQ as "not ingested"."""
    store, embedder, source = held
    pads = source.with_name("pads.md")
    pads.write_text("Brake pads, new text.\n\n" + paragraphs(7, "pads"), encoding="utf-8")
    queue, out = _while_the_job_embeds(store, embedder, NewJob(str(pads), "pads.md", {}),
                                       lambda: store.delete_document("pads.md"))
    assert "error" not in out, out
    [job] = queue.jobs()
    # the job, then the delete: as if one had come after the other
    assert (job["status"], job["last_error"]) == (DONE, None)
    assert store.list_documents() == []
    assert [(v["version"], v["change_summary"]) for v in store.history("pads.md")] == [
        ("1.0.0", "content changed"), ("1.1.0", "deleted")]


def test_closing_the_store_from_the_callers_thread_waits_for_the_job_a_default_worker_embeds(
    held: tuple[Store, HeldEmbedder, Path],
) -> None:
    """Closed under the job's embedding, the job was left RUNNING, its document not ingested,
    for the next open to take back as a lost attempt."""
    store, embedder, source = held
    _queue, out = _while_the_job_embeds(store, embedder, NewJob(str(source), "rotors.md", {}),
                                        store.close, closes=True)
    assert "error" not in out, out
    with open_test_store(store.path) as again:
        [job] = again.jobs().jobs()
        assert (job["status"], job["attempts"]) == (DONE, 1)
        assert {d["document_id"] for d in again.list_documents()} == {"pads.md", "rotors.md"}


def test_a_job_queued_in_the_worker_process_wakes_it_from_idle(
    tmp_path: Path, sources: list[Path]
) -> None:
    """An idle worker looks at the catalog again only when a job can be due (a retry's time,
    an inbox file, ``wake``): a job queued by the process's own thread, which nothing woke
    it for, waited for good."""
    missing = tmp_path / "later.md"
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        with WorkerThread(Worker(store, queue)) as running:
            assert running.idle.wait(WAIT_S), "the worker never went idle"
            store.enqueue_paths(sources[0])
            _wait_for(lambda: queue.counts()[DONE] == 1, "the job queued by enqueue_paths")
            running.idle.clear()
            assert running.idle.wait(WAIT_S), "the worker never went idle again"
            queue.enqueue([NewJob(str(missing), missing.name, {}, max_attempts=1)])
            _wait_for(lambda: queue.counts()[DLQ] == 1, "the job queued by JobQueue.enqueue")
            missing.write_text("Now it is here.\n\n" + paragraphs(2), encoding="utf-8")
            running.idle.clear()
            assert running.idle.wait(WAIT_S), "the worker never went idle again"
            assert queue.retry_dlq() == 1
            _wait_for(lambda: queue.counts()[DONE] == 2, "the job sent back by retry_dlq")
        assert {d["document_id"] for d in store.list_documents()} == {sources[0].name, missing.name}


@pytest.mark.parametrize("busy", [True, False])
def test_a_worker_whose_store_is_closed_stops(tmp_path: Path, sources: list[Path],
                                              busy: bool) -> None:
    """Closed while a worker thread ran (its stop event never set: an exception out of the
    `with` block), the loop retried the closed catalog every minute for ever, logging "is
    closed" (idle, it waited for a job that could never come), and the thread kept the
    process from exiting."""
    store = open_test_store(tmp_path / "store")
    worker = Worker(store, store.jobs())
    thread = threading.Thread(target=worker.run_forever, args=(threading.Event(), 0.01),
                              daemon=True)
    thread.start()
    if busy:
        store.enqueue_paths(*sources[:2])
    else:
        time.sleep(0.2)  # idle: nothing due, nothing to wake it
    store.close()  # waits for the job in hand
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the worker went on after its store was closed"
    assert worker.last_error is not None and "closed" in worker.last_error
    with open_test_store(tmp_path / "store") as again:  # nothing was left RUNNING
        assert again.jobs().counts()["RUNNING"] == 0

"""A store writer is refused inside another call on the same store (a search's rewriter or
reranker hook, a method of the store calling a writer), instead of deadlocking.

The locks go write lock, then call lock (store_guard.WRITERS). A writer entered from inside
a reader holds the call lock and asks for the write lock: the other way round. With a worker
holding the write lock over a job and waiting for the call lock when its embedding ends,
the two waited for each other for good, and every later call on the store with them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import enginelib
from enginelib import errors
from enginelib.errors import RewriterError
from enginelib.jobs import DONE, NewJob, Worker
from enginelib.store_guard import CHECKS, WRITERS
from tests.helpers import SMALL_CHUNKS, doc, open_test_store, paragraphs
from tests.test_jobs_threads import WorkerThread, _wait_for
from tests.test_serve_sharing import HeldEmbedder

# How long the test waits for a search before it calls the search and the worker deadlocked.
DEADLOCK_S = 15.0
WAIT_S = 60.0
PADS = "Brake pads squeal when worn.\n\n" + paragraphs(4)


def _deleting_rewriter(store: enginelib.Store) -> Callable[[str], list[str]]:
    def rewriter(question: str) -> list[str]:
        store.delete_document("pads.md")  # a hook that changes the store it searches
        return [question]

    return rewriter


def test_a_search_hook_that_deletes_while_a_worker_embeds_is_refused_not_deadlocked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store"
    with open_test_store(path) as store:
        store.ingest_documents([doc("pads.md", PADS)])
    source = tmp_path / "rotors.md"
    source.write_text("Rotors warp under heat.\n\n" + paragraphs(6, "rotors"), encoding="utf-8")
    embedder = HeldEmbedder()
    store = enginelib.open(path, embedder=embedder, chunking=SMALL_CHUNKS)
    queue = store.jobs()
    worker = WorkerThread(Worker(store, queue)).__enter__()
    embedder.armed = True
    queue.enqueue([NewJob(str(source), "rotors.md", {})])
    worker.worker.wake.set()
    assert embedder.entered.wait(WAIT_S), "the job never reached its embedding"
    out: dict[str, BaseException] = {}

    def search() -> None:
        try:
            store.search("brake pads squeal", rewriter=_deleting_rewriter(store),
                         answerability_threshold=None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out["error"] = exc

    searcher = threading.Thread(target=search, daemon=True)
    searcher.start()
    searcher.join(1.0)  # its hook's delete reaches the write lock the job holds
    embedder.release.set()  # the job goes on: it asks for the call lock the search holds
    searcher.join(DEADLOCK_S)
    # Deadlocked, the two threads and the store stay stuck: nothing more can be closed.
    assert not searcher.is_alive(), (
        "deadlock: the search's hook waits for the write lock the worker holds, the worker for "
        "the call lock the search holds")
    try:
        assert isinstance(out.get("error"), RewriterError), out
        assert isinstance(out["error"].__cause__, errors.NestedWriteError)
        assert str(out["error"].__cause__).startswith(
            "delete_document() was called inside search() on the same store")
        _wait_for(lambda: queue.counts()[DONE] == 1, "the job")
    finally:
        worker.__exit__(None, None, None)
        store.close()
    with open_test_store(path) as again:
        assert {d["document_id"] for d in again.list_documents()} == {"pads.md", "rotors.md"}


def test_a_writer_inside_another_call_on_the_store_is_refused_saying_what_to_do(
    tmp_path: Path,
) -> None:
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("pads.md", PADS)])
        with pytest.raises(RewriterError) as caught:
            store.search("brake pads squeal", rewriter=_deleting_rewriter(store))
        refused = caught.value.__cause__
        assert isinstance(refused, errors.NestedWriteError) and isinstance(refused, RuntimeError)
        assert str(refused) == (
            "delete_document() was called inside search() on the same store (from a hook it "
            "runs, such as a rewriter or a reranker): a writer waits there for a worker's job "
            "while holding the lock that job waits for, a deadlock. Call delete_document() "
            "after search() has returned (if none of your code ran inside it, report this "
            "enginelib bug)")
        # The store's call lock held by the caller itself (a JobQueue call holds it too).
        with store.catalog.calls, pytest.raises(errors.NestedWriteError,
                                                match=r"^close\(\) was called while this thread"):
            store.close()
        assert store.get_document("pads.md")["document_id"] == "pads.md"
        store.update_document("pads.md", tags=["brakes"])  # outside any call: a writer as ever


# Each public method that is not a writer, called once on a real store: none may enter a
# writer of the same store (the refusal above would fail it). A new public method must be
# added here, as it is to store_guard.CHECKS.
def _walk(store: enginelib.Store, folder: Path) -> dict[str, Callable[[], Any]]:
    (folder / "queued.md").write_text("Queued.\n\n" + paragraphs(2), encoding="utf-8")
    return {
        "search": lambda: store.search("brake pads squeal"),
        "search_batch": lambda: store.search_batch(["brake pads", "rotors"]),
        "get_document": lambda: store.get_document("pads.md"),
        "present_documents": lambda: store.present_documents(["pads.md", "gone.md"]),
        "show": lambda: store.show("pads.md"),
        "history": lambda: store.history("pads.md"),
        "version_text": lambda: store.version_text("pads.md", "1.0.0"),
        "list_documents": lambda: store.list_documents(),
        "add_source": lambda: store.add_source("manual", name="Workshop manual", tier="gold"),
        "save_search_preset": lambda: store.save_search_preset("wide", rrf_k=30),
        "set_default_search_preset": lambda: store.set_default_search_preset("wide"),
        "search_presets": lambda: store.search_presets(),
        "default_search_preset": lambda: store.default_search_preset(),
        "logged_queries": lambda: store.logged_queries(),
        "stats": lambda: store.stats(),
        "create_snapshot": lambda: store.create_snapshot("before"),
        "list_snapshots": lambda: store.list_snapshots(),
        "pin_snapshot": lambda: store.pin_snapshot("before", False),
        "diff": lambda: store.diff("before"),
        "delete_snapshot": lambda: store.delete_snapshot("before"),
        "check": lambda: store.check(),
        "enqueue_paths": lambda: store.enqueue_paths(folder / "queued.md"),
        "export_postgres": lambda: store.export_postgres("postgresql://nobody@127.0.0.1:1/none"),
        "to_sql": lambda: store.to_sql(folder / "store.sql"),
        "persist": lambda: store.persist(),
        "refresh": lambda: store.refresh(),
        "view": lambda: store.view(),
    }


def test_no_public_method_but_a_writer_enters_a_writer_of_its_store(tmp_path: Path) -> None:
    refused = []
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("pads.md", PADS), doc("rotors.md", paragraphs(3, "rotors"))])
        walk = _walk(store, tmp_path)
        assert set(walk) == set(CHECKS) - WRITERS
        for name, call in walk.items():
            try:
                call()
            except errors.NestedWriteError as exc:
                refused.append(f"{name}: {exc}")
            except errors.EngineError:  # export_postgres: no server there, or no psycopg
                assert name == "export_postgres"
    assert refused == []

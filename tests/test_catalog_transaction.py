"""A catalog write DuckDB refuses comes out as an enginelib error, and is never lost silently."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

from enginelib.errors import InvalidInputError, StoreError
from enginelib.jobs import NewJob
from tests.helpers import doc, open_test_store


@pytest.mark.parametrize("bad, said, cause", [
    (NewJob("/docs/b.md", None, {}), "needs a value for jobs.document_id",  # type: ignore[arg-type]
     duckdb.ConstraintException),
    (NewJob("/docs/\ud800.md", "b.md", {}), "cannot be stored in the catalog",
     duckdb.InvalidInputException),
])
def test_a_job_the_catalog_refuses_is_a_typed_error_and_queues_nothing(
    tmp_path: Path, bad: NewJob, said: str, cause: type[Exception]
) -> None:
    """JobQueue.enqueue let DuckDB's own exception out (ConstraintException: NOT NULL
    constraint failed: jobs.document_id), past every `except EngineError`."""
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        with pytest.raises(InvalidInputError, match=said) as info:
            queue.enqueue([NewJob("/docs/a.md", "a.md", {}), bad])
        assert "nothing of this write was committed" in str(info.value)
        assert isinstance(info.value.__cause__, cause)
        assert queue.jobs() == []  # all or nothing: a.md was not queued either
        [job_id] = queue.enqueue([NewJob("/docs/a.md", "a.md", {})])  # the queue still works
        assert [j["job_id"] for j in queue.jobs()] == [job_id]


def test_a_write_begun_from_another_thread_is_refused_and_the_open_one_not_lost(
    tmp_path: Path,
) -> None:
    """A second thread's BEGIN on the same connection made DuckDB abort the open write,
    whose COMMIT then rolled it back and returned as if it had written."""
    with open_test_store(tmp_path / "store") as store:
        queue = store.jobs()
        refused: list[BaseException] = []

        def enqueue() -> None:
            try:
                queue.enqueue([NewJob("/docs/b.md", "b.md", {})])
            except BaseException as exc:  # whatever it is, the assertion below names it
                refused.append(exc)

        with pytest.raises(StoreError, match="one thread at a time"):
            with store.catalog.transaction():
                store.catalog.set_meta("probe", "written")
                other = threading.Thread(target=enqueue)
                other.start()
                other.join()
        assert len(refused) == 1 and isinstance(refused[0], StoreError), refused
        assert "one thread at a time" in str(refused[0])
        assert store.catalog.get_meta("probe") is None and queue.jobs() == []
        with store.catalog.transaction():  # the connection is usable again
            store.catalog.set_meta("probe", "written")
        assert store.catalog.get_meta("probe") == "written"


def test_a_statement_the_catalog_refuses_inside_a_write_is_named_not_hidden(
    tmp_path: Path,
) -> None:
    """A failed INSERT from a registered table aborted the transaction, and the unregister
    after it failed too: the user read "a write to the catalog began while another was open
    on it ... use the catalog from one thread at a time" instead of the duplicate key."""
    with open_test_store(tmp_path / "store") as store:
        store.ingest_documents([doc("a", "Brake pads wear out.")])
    con = duckdb.connect(str(tmp_path / "store" / "catalog.duckdb"))
    con.execute("UPDATE meta SET value = '0' WHERE key = 'next_label'")  # a hand edit
    con.close()
    with open_test_store(tmp_path / "store") as store:
        with pytest.raises(StoreError, match="already holds the key label: 0") as info:
            store.ingest_documents([doc("b", "Oil filter change interval.")])
        assert "began while another" not in str(info.value)
        assert isinstance(info.value.__cause__, duckdb.ConstraintException)
        # the store stays usable: reads, and writes that need no new key
        assert [d["document_id"] for d in store.list_documents()] == ["a"]
        assert store.search("brake pads", strategy="fulltext").hits[0].document_id == "a"
        store.delete_document("a")
        store.ingest_documents([doc("b", "Oil filter change interval.")])
        assert [d["document_id"] for d in store.list_documents()] == ["b"]

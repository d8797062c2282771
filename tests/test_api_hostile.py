"""A careless or hostile user of the Python API: odd arguments and odd call orders."""

from __future__ import annotations

import copy
import pickle
import re
import threading
from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder, InvalidInputError, StoreError, maintenance
from enginelib.errors import StoreLockedError
from enginelib.testing import enginelib_store, enginelib_store_factory  # noqa: F401
from tests.helpers import doc, open_test_store, paragraphs

NO_GATE = {"answerability_threshold": None}


@pytest.fixture
def ram(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "ram"
    folder.mkdir()
    monkeypatch.setenv("ENGINELIB_MEMORY_DIR", str(folder))
    return folder


def test_metadata_calls_share_one_store_with_searching_threads(tmp_path: Path) -> None:
    # update_document and list_documents ran outside the per-store lock, so a thread pool
    # mixing them with searches got DuckDB's "connection is busy" (raw, and as BackendError
    # from the searches), "Connection already closed" and TypeErrors from half-read results
    with open_test_store(tmp_path / "s") as store:
        store.ingest_documents([doc(f"d{i}", paragraphs(2, f"topic{i}")) for i in range(12)])
        errors: list[str] = []

        def run(call) -> None:  # type: ignore[no-untyped-def]
            for i in range(40):
                try:
                    call(i)
                except Exception as exc:  # noqa: BLE001 - any failure is the finding
                    errors.append(f"{type(exc).__name__}: {exc}")

        calls = [
            lambda i: store.update_document(f"d{i % 12}", tags=[f"t{i}"]),
            lambda i: store.list_documents(limit=5),
            lambda i: store.search(f"topic{i % 12} checking", cache=False, **NO_GATE),
        ]
        threads = [threading.Thread(target=run, args=(call,)) for call in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert store.check().ok


def test_update_document_with_a_non_string_id_says_so(ram: Path) -> None:
    # was DuckDB's ConversionException "Could not convert string 'a' to INT32"
    store = enginelib.memory([{"id": "a", "text": "Brake pads wear out."}],
                             embedder=HashingEmbedder(64))
    with store:
        with pytest.raises(InvalidInputError, match="document id must be a string, got int"):
            store.update_document(123, tags=["x"])  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="domain"):
            store.update_document("a", domain="x")  # type: ignore[call-arg]
        with pytest.raises(InvalidInputError, match="foo"):
            store.list_documents(foo=1)
        assert store.get_document("a")["tags"] == []


def test_save_refuses_paths_that_would_lose_the_copy(ram: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # save(":memory:") wrote a folder named ':memory:' in the working directory, which
    # open(":memory:") never reads (it starts empty); a path inside the store's own folder
    # was removed with it on close; save(None) was a bare TypeError
    monkeypatch.chdir(tmp_path)
    store = enginelib.memory([{"id": "a", "text": "Brake pads wear out."}],
                             embedder=HashingEmbedder(64))
    with store:
        with pytest.raises(InvalidInputError, match="names no folder"):
            store.save(":memory:")
        with pytest.raises(InvalidInputError, match="inside the store's own folder"):
            store.save(store.path / "copy")
        with pytest.raises(InvalidInputError, match="must be a str or Path, got NoneType"):
            store.save(None)  # type: ignore[arg-type]
        assert not (tmp_path / ":memory:").exists()
        saved = store.save(tmp_path / "saved")
    with enginelib.open(saved, embedder=HashingEmbedder(64)) as reopened:
        assert [d["document_id"] for d in reopened.list_documents()] == ["a"]


def test_ingest_documents_given_dicts_says_to_give_loaded_documents(enginelib_store) -> None:
    # memory() takes dicts, so ingest_documents got them too: a bare AttributeError
    # "'dict' object has no attribute 'id'"
    with pytest.raises(InvalidInputError, match="document 2 is a dict, not a LoadedDocument"):
        enginelib_store.ingest_documents([enginelib.LoadedDocument(id="a", text="Brake pads."),
                                          {"id": "b", "text": "Brake fluid."}])
    assert enginelib_store.list_documents() == []
    enginelib_store.ingest_documents([enginelib.LoadedDocument(id="b", text="Brake fluid.")])
    assert [d["document_id"] for d in enginelib_store.list_documents()] == ["b"]


@pytest.mark.parametrize(("vectors", "reason"), [
    ("abc", "vectors must be real numbers .*got text"),  # was numpy's "could not convert string to float"
    (np.ones((1, 1, 64)), r"got shape \(1, 1, 64\)"),  # was "of 64 dimensions; takes 64"
])
def test_a_document_with_unusable_own_vectors_is_skipped_by_name(enginelib_store, vectors,
                                                                 reason) -> None:
    report = enginelib_store.ingest_documents([
        enginelib.LoadedDocument(id="bad", text="Brake pads.", vectors=vectors),
        enginelib.LoadedDocument(id="good", text="Brake fluid."),
    ])
    assert report.added == ("good",)
    assert [s.path for s in report.skipped] == ["bad"]
    assert re.search(reason, report.skipped[0].reason)


@pytest.mark.parametrize("pages", ["abc", ((0, 0),), ((1, 0), (2, 999)), ((2, 9), (1, 0))])
def test_a_document_with_bad_pages_is_skipped_by_name(enginelib_store, pages) -> None:
    # a string stopped the whole call with "not enough values to unpack"; page 0, offsets
    # past the text or out of order were taken and gave chunks wrong page numbers
    report = enginelib_store.ingest_documents([
        enginelib.LoadedDocument(id="bad", text="Brake pads wear out.", pages=pages),
        enginelib.LoadedDocument(id="good", text="Brake fluid.", pages=((1, 0), (2, 6))),
    ])
    assert report.added == ("good",)
    assert [s.path for s in report.skipped] == ["bad"]
    assert "pages" in report.skipped[0].reason


@pytest.mark.parametrize("how", [pickle.dumps, copy.copy, copy.deepcopy])
def test_a_store_is_not_copied_or_pickled(enginelib_store_factory, how) -> None:
    # pickle said "cannot pickle '_thread.RLock' object"; copy.copy gave an alias whose
    # close() closed the original and removed its in-memory folder
    store = enginelib_store_factory(records=[{"id": "a", "text": "Brake pads wear out."}])
    with pytest.raises(StoreError, match="cannot be pickled or copied.*enginelib.open"):
        how(store)
    assert store.search("brake pads", **NO_GATE).hits[0].document_id == "a"


def test_a_second_writer_in_the_same_process_is_told_it_is_this_one(tmp_path: Path) -> None:
    """It said "another process is writing to ...": the user looked for a process that was
    not there (a notebook cell run twice, a fixture that did not close)."""
    path = tmp_path / "s"
    first = open_test_store(path)
    with pytest.raises(StoreLockedError, match=r"this process already writes to .*close\(\) it"):
        open_test_store(path)
    with pytest.raises(StoreLockedError, match="this process already writes"):
        maintenance.check(path)  # the path, not the Store: a second lock
    assert maintenance.check(first).ok  # the Store itself is the way
    first.close()
    open_test_store(path).close()  # closed: the lock is free again


def test_a_store_closed_from_another_thread_releases_its_writer_lock(tmp_path: Path) -> None:
    # filelock's lock is thread-local by default: a Store opened in one thread (a web
    # server's lifespan, a pool worker) and closed in another kept the lock, and this process
    # could never write to that store again ("this process already writes to ...").
    opened: list[enginelib.Store] = []
    worker = threading.Thread(target=lambda: opened.append(open_test_store(tmp_path / "s")))
    worker.start()
    worker.join()
    opened[0].close()
    again = open_test_store(tmp_path / "s")
    again.ingest_documents([doc("a", "Brake pads wear.")])
    again.close()


def test_a_reader_beside_this_process_writer_is_told_what_to_do(tmp_path: Path) -> None:
    # DuckDB's own words ("a different configuration than existing connections") said
    # nothing of the Store this process holds open for writing
    writer = open_test_store(tmp_path / "s")
    writer.ingest_documents([doc("a", "Brake pads wear.")])
    writer.stats()  # the writer's catalog connection stays open
    with pytest.raises(StoreError, match="this process already has it open another way"):
        enginelib.open(tmp_path / "s", read_only=True)
    assert writer.search("brake pads").total == 1
    writer.close()


@pytest.mark.parametrize("options, names", [
    ({"embedder": -1}, "embedder"), ({"embedder": object()}, "embedder"),
    ({"chunking": ""}, "chunking"), ({"chunking": {"max_tokens": 100}}, "chunking"),
    ({"read_only": None}, "read_only"), ({"create": "yes"}, "create"),
    ({"lock_timeout": None}, "lock_timeout"), ({"lock_timeout": float("nan")}, "lock_timeout"),
    ({"lock_timeout": -1}, "lock_timeout"),
])
def test_open_options_of_the_wrong_kind_are_named_before_anything_is_created(
        tmp_path: Path, options: dict, names: str) -> None:
    # An int embedder or a str chunking failed deep in the open with AttributeError, a None
    # read_only inside DuckDB's connect with its TypeError, a NaN wait inside filelock.
    with pytest.raises(InvalidInputError, match=names):
        enginelib.open(tmp_path / "s", **options)
    assert not (tmp_path / "s").exists()


def test_reindex_snapshot_sql_file_and_id_list_arguments_of_the_wrong_kind_are_named(tmp_path: Path) -> None:
    with open_test_store(tmp_path / "s") as store:
        store.ingest_documents([doc("a", "Brake pads wear out.")])
        store.create_snapshot("v1")
        for options, names in (({"embedder": -1}, "embedder"), ({"chunking": " "}, "chunking"),
                               ({"progress": 2}, "progress")):
            with pytest.raises(InvalidInputError, match=names):
                store.reindex(**options)
        for ids in (None, 5):  # a TypeError from iterating it
            with pytest.raises(InvalidInputError, match="list of document ids"):
                store.present_documents(ids)
        with pytest.raises(InvalidInputError, match="File name too long"):
            store.to_sql(tmp_path / ("a" * 5000))  # an OSError from deep in pathlib
        assert [h.document_id for h in store.search("brake pads", **NO_GATE).hits] == ["a"]
    with pytest.raises(InvalidInputError, match="embedder"):
        enginelib.open(tmp_path / "s", snapshot="v1", embedder=-1)


def test_memory_store_records_and_save_path_of_the_wrong_kind_are_named(ram: Path, tmp_path: Path) -> None:
    # memory(records=-1) raised "'int' object is not iterable"; save() of an over-long path
    # an OSError from pathlib
    with pytest.raises(InvalidInputError, match="records must be a list"):
        enginelib.memory(records=-1, embedder=HashingEmbedder(8))
    store = enginelib.memory(records=[{"id": "a", "text": "Brake pads wear out."}],
                             embedder=HashingEmbedder(8))
    with pytest.raises(InvalidInputError, match="File name too long"):
        store.save(tmp_path / ("a" * 5000))
    assert store.save(tmp_path / "copy") == tmp_path / "copy"
    store.close()


def test_open_for_maintenance_answers_bad_paths_and_waits_with_enginelib_errors(tmp_path: Path) -> None:
    # an over-long path was a raw OSError from reading the manifest, None a TypeError
    from enginelib.errors import StorageError
    from enginelib.store import open_for_maintenance

    with pytest.raises(StorageError, match="File name too long"):
        open_for_maintenance(tmp_path / ("a" * 5000))
    with pytest.raises(InvalidInputError, match="store path"):
        open_for_maintenance(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="lock_timeout"):
        open_for_maintenance(tmp_path, lock_timeout=float("nan"))


def test_a_file_path_with_a_nul_is_an_input_error_not_a_bare_value_error() -> None:
    # load_file("a\x00b") and read_qrels("a\x00b") raised os.stat's bare ValueError
    # ("embedded null byte"), outside the error tree
    from enginelib import evaluation, loaders

    for function in (loaders.load_file, loaders.stream_file, loaders.iter_load, loaders.loader_for,
                     evaluation.read_qrels, evaluation.read_queries):
        with pytest.raises(InvalidInputError, match=r"contains a NUL character"):
            function("notes\x00.md")


def test_module_functions_taking_a_store_check_it_first(tmp_path: Path) -> None:
    # maintenance.check(None) was a TypeError from pathlib, snapshots.list_snapshots of an
    # over-long name a raw OSError, maintenance.reindex(embedder=-1) an AttributeError
    from enginelib import EngineError, snapshots

    long_name = tmp_path / ("a" * 5000)
    for function in (maintenance.check, maintenance.repair, snapshots.list_snapshots,
                     snapshots.retention):
        with pytest.raises(InvalidInputError, match="store path"):
            function(None)  # type: ignore[arg-type]
        with pytest.raises(EngineError, match="File name too long"):
            function(long_name)
    with pytest.raises(InvalidInputError, match="lock_timeout"):
        maintenance.check(tmp_path, lock_timeout=float("nan"))
    with pytest.raises(InvalidInputError, match="embedder"):
        maintenance.reindex(tmp_path, embedder=-1)  # type: ignore[arg-type]

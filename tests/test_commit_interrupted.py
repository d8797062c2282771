"""A failure between a catalog commit and the in-memory indexes catching up (a full disk
reported there, Ctrl-C at that instant) while the same Store object stays in use: the
committed documents must still become searchable."""

from __future__ import annotations

from pathlib import Path

import pytest

from enginelib.errors import EngineError
from tests.helpers import doc, open_test_store


def searchable(store, word: str) -> set[str]:  # type: ignore[no-untyped-def]
    response = store.search(word, strategy="fulltext", answerability_threshold=None)
    return {h.document_id for h in response.hits}


@pytest.mark.parametrize("operation", ["ingest", "delete", "restore"])
def test_a_commit_interrupted_before_the_indexes_caught_up_is_still_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    # The indexes were saved stamped with the new generation without the commit's chunks
    # (or with the deleted ones still in): the document stayed unsearchable, or a deleted one
    # searchable, even after a reopen; only `check` saw it.
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", "zircadium brake pads wear."), doc("b", "tyres wear.")])
    if operation == "restore":
        store.create_snapshot("before")
        store.ingest_documents([doc("c", "zircadium rotors glow.")])
    step = "restore_after_catalog_commit" if operation == "restore" else "after_catalog_commit"
    monkeypatch.setenv("ENGINELIB_ENOSPC_AT", step)
    with pytest.raises((EngineError, OSError)):
        if operation == "ingest":
            store.ingest_documents([doc("c", "zircadium rotors glow.")])
        elif operation == "delete":
            store.delete_document("a")
        else:
            store.restore_snapshot("before")
    monkeypatch.delenv("ENGINELIB_ENOSPC_AT")
    expected = {"ingest": {"a", "c"}, "delete": set(), "restore": {"a"}}[operation]
    assert searchable(store, "zircadium") == expected
    store.ingest_documents([doc("d", "plain wipers.")])  # the next write persists
    assert searchable(store, "zircadium") == expected
    assert store.check().ok
    store.close()
    reopened = open_test_store(tmp_path / "s")
    assert searchable(reopened, "zircadium") == expected
    assert reopened.check().ok
    reopened.close()


def test_a_failure_inside_the_text_index_write_is_caught_up_not_stamped_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C inside the text index's add (reproduced: `enginelib ingest` of 3000 files, SIGINT
    # mid-batch; exit 130, then check: "text index lacks 1536 catalog chunk(s)", for good):
    # the writer stayed alive in the traceback's frames with tantivy's lock, the catch-up's
    # replay into the reloaded index failed on it, the failure was taken as caught up, and
    # the close's save stamped the short text index current. The fault raises at the same
    # place (and again in the replay, while it is set); the caught error keeps its frames.
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", "zircadium brake pads wear."), doc("b", "tyres wear.")])
    monkeypatch.setenv("ENGINELIB_ENOSPC_AT", "after_text_add")
    with pytest.raises((EngineError, OSError)) as failed:
        store.ingest_documents([doc("c", "zircadium rotors glow.")])
    monkeypatch.delenv("ENGINELIB_ENOSPC_AT")
    assert failed.value is not None  # held: its traceback holds the writer of the failed add
    assert searchable(store, "zircadium") == {"a", "c"}
    store.ingest_documents([doc("d", "plain wipers.")])
    assert searchable(store, "zircadium") == {"a", "c"}
    assert store.check().ok, store.check().problems
    store.close()
    reopened = open_test_store(tmp_path / "s")
    assert searchable(reopened, "zircadium") == {"a", "c"}
    assert reopened.check().ok, reopened.check().problems
    reopened.close()


def _interrupted_query() -> None:
    """A real DuckDB query that a SIGINT stops half a second in: DuckDB takes the
    KeyboardInterrupt and raises RuntimeError('Query interrupted') in its place."""
    import os
    import signal
    import threading

    import duckdb

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        duckdb.connect().execute("SELECT sum(hash(i)) FROM range(10000000000000) t(i)").fetchall()
    finally:
        timer.cancel()


def test_ctrl_c_in_a_duckdb_query_is_a_keyboard_interrupt_and_exit_130(tmp_path: Path) -> None:
    # Reproduced: `enginelib ingest` of 3000 files, SIGINT mid-batch; by where it landed the
    # command said "Error: unexpected RuntimeError: Query interrupted (this is a bug in
    # enginelib ...)" or "ingest failed in the catalog (DuckDB): 'KeyboardInterrupt: '; run
    # `enginelib check` and `enginelib repair`", exit 2, where a Ctrl-C exits 130 saying what
    # was committed; a Python caller got a RuntimeError for its own Ctrl-C.
    import click
    from click.testing import CliRunner

    from enginelib.cli.options import INTERRUPTED_EXIT, handle_errors
    from enginelib.edge import guard
    from enginelib.ingest_run import _raise_with_report
    from enginelib.types import IngestReport

    with pytest.raises(KeyboardInterrupt) as stopped:
        with guard("search"):
            _interrupted_query()
    assert isinstance(stopped.value.__cause__, RuntimeError)  # DuckDB's, kept as the cause

    @click.command()
    @handle_errors
    def long_query() -> None:
        _interrupted_query()

    result = CliRunner().invoke(long_query, [])
    assert result.exit_code == INTERRUPTED_EXIT, result.output
    assert result.output.startswith("interrupted: the store keeps what was committed")
    assert "bug" not in result.output and "Error" not in result.output

    # an ingest says what it had committed, as for a KeyboardInterrupt of its own
    store = open_test_store(tmp_path / "s")
    report = IngestReport(added=("a", "b"))
    try:
        _interrupted_query()
    except RuntimeError as exc:
        with pytest.raises(KeyboardInterrupt) as noted:
            _raise_with_report(exc, report, "ingest", store, saved=False)  # type: ignore[arg-type]
    assert "2 document(s) of this ingest were committed" in " ".join(noted.value.__notes__)
    assert noted.value.report is report  # type: ignore[attr-defined]
    store.close()

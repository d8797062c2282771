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

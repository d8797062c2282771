"""Snapshots: time travel, portability, retention and pins, diff, restore, history, crashes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import enginelib
from enginelib import HashingEmbedder, Store, snapshots
from enginelib.errors import InvalidInputError, ReadOnlyStoreError, SnapshotError
from tests.helpers import doc, open_test_store, paragraphs

REPO = Path(__file__).resolve().parent.parent
QUERIES = ("caliper torque", "piston wear noise", "fluid rotor months")


def _corpus() -> list[enginelib.LoadedDocument]:
    return [doc(f"d{i}", paragraphs(4 + i, f"topic{i}"), title=f"Doc {i}") for i in range(6)]


def _results(store: Store) -> list[list[tuple[Any, ...]]]:
    """Everything a caller sees of a search, per strategy and query."""
    out = []
    for strategy in ("fulltext", "vector", "hybrid"):
        for query in QUERIES:
            response = store.search(query, strategy=strategy, limit=8, answerability_threshold=None)
            out.append([(h.document_id, h.chunk_index, h.start_offset, h.end_offset, h.content,
                         h.citation.document_version, round(h.scores.fused, 9))
                        for h in response.hits])
    return out


def _open_snapshot(path: Path, name: str) -> Store:
    return enginelib.open(path, snapshot=name, embedder=HashingEmbedder(64))


def _tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents(_corpus())
    yield store
    store.close()


def test_manifest_records_format_generation_versions_model_and_chunking(store: Store) -> None:
    data = json.loads((store.path / "manifest.json").read_text())
    assert data["format_version"] == 1 and data["generation"] == store.generation >= 1
    assert data["index_version"] == store.index_version != ""
    assert (data["embedding_model"], data["embedding_dim"]) == ("hashing-64", 64)
    assert len(data["chunking_hash"]) == 64


def test_round_trip_same_results_after_ingests_and_after_copying_the_store(
    store: Store, tmp_path: Path
) -> None:
    before = _results(store)
    info = store.create_snapshot("s1")
    assert (info.name, info.generation, info.documents) == ("s1", store.generation, 6)

    store.ingest_documents([doc("d0", paragraphs(7, "rewritten")), doc("new", paragraphs(5))])
    store.delete_document("d3")
    assert _results(store) != before  # the live store did move on

    with _open_snapshot(store.path, "s1") as snap:
        assert snap.snapshot == "s1" and snap.read_only and snap.generation == info.generation
        assert _results(snap) == before
    store.close()

    copy = tmp_path / "elsewhere" / "copied"
    shutil.copytree(store.path, copy)
    shutil.rmtree(store.path)  # nothing may point back at the original folder
    with _open_snapshot(copy, "s1") as snap:
        assert _results(snap) == before


def test_snapshot_is_read_only_and_its_files_never_change(store: Store) -> None:
    store.create_snapshot("frozen")
    folder = store.path / "snapshots" / "frozen"
    digest = _tree_digest(folder)
    with _open_snapshot(store.path, "frozen") as snap:
        _results(snap)
        with pytest.raises(ReadOnlyStoreError, match="snapshot 'frozen'"):
            snap.ingest_documents([doc("x", "some text to add here")])
        assert snap.stats()["snapshot"] == "frozen"
    assert _tree_digest(folder) == digest
    assert not list((store.path / "snapshots").glob(".tmp-*"))


def test_citation_from_a_snapshot_resolves_after_the_live_document_changed(store: Store) -> None:
    store.create_snapshot("cite")
    with _open_snapshot(store.path, "cite") as snap:
        hit = snap.search("caliper torque", strategy="hybrid", limit=1,
                          filters={"document_id": ["d2"]}, answerability_threshold=None).hits[0]
    store.ingest_documents([doc("d2", "Completely new text. " + paragraphs(3, "other"))])
    assert store.get_document("d2")["content"][hit.start_offset:hit.end_offset] != hit.content

    with _open_snapshot(store.path, "cite") as snap:
        text = snap.get_document("d2")["content"]
        assert text[hit.start_offset:hit.end_offset] == hit.content
    # The live store keeps the archived text of the version the citation names.
    archived = store.version_text("d2", hit.citation.document_version)
    assert archived[hit.start_offset:hit.end_offset] == hit.content
    versions = store.history("d2")
    assert [v["version"] for v in versions] == ["1.0.0", "1.1.0"]
    assert versions[0]["change_summary"] == "content changed" and versions[-1]["current"]


def test_default_names_count_up_and_bad_names_are_refused(store: Store) -> None:
    first = store.create_snapshot()
    second = store.create_snapshot()
    assert first.name == snapshots.next_name(store.path).rsplit(".", 1)[0] + ".0"
    assert second.name.endswith(".1") and second.name[:7] == first.name[:7]
    with pytest.raises(SnapshotError, match="already exists"):
        store.create_snapshot(first.name)
    for bad in ("../up", ".hidden", "live", "a/b", ""):
        with pytest.raises(InvalidInputError):
            store.create_snapshot(bad)
    with pytest.raises(SnapshotError, match="no snapshot 'nope'"):
        _open_snapshot(store.path, "nope")


def test_retention_keeps_three_newest_and_never_deletes_a_pinned_one(store: Store) -> None:
    store.create_snapshot("a", pin=True)
    for name in ("b", "c", "d", "e"):
        store.create_snapshot(name)
    assert [s.name for s in store.list_snapshots()] == ["a", "c", "d", "e"]
    assert [s.pinned for s in store.list_snapshots()] == [True, False, False, False]

    with pytest.raises(SnapshotError, match="pinned"):
        store.delete_snapshot("a")
    assert snapshots.set_retention(store, 1) == ["c", "d"]
    store.create_snapshot("f", keep=2)
    assert [s.name for s in store.list_snapshots()] == ["a", "e", "f"]
    assert snapshots.retention(store.path) == 2

    store.pin_snapshot("a", pinned=False)
    store.delete_snapshot("a")
    assert [s.name for s in store.list_snapshots()] == ["e", "f"]
    with pytest.raises(InvalidInputError, match="keep"):
        store.create_snapshot("g", keep=0)


@pytest.mark.parametrize("pinned", ["no", 0, None])
def test_the_module_pin_refuses_what_is_not_true_or_false(store: Store, pinned: object) -> None:
    # snapshots.pin_snapshot(path, name, "no") pinned the snapshot (a truthy string)
    store.create_snapshot("a")
    with pytest.raises(InvalidInputError, match="pinned must be True or False"):
        snapshots.pin_snapshot(store, "a", pinned)  # type: ignore[arg-type]
    assert [s.pinned for s in store.list_snapshots()] == [False]


@pytest.mark.parametrize("keep", [0, 10**20, True, 2.5])
def test_retention_refuses_what_is_not_a_count_of_snapshots(store: Store, keep: object) -> None:
    with pytest.raises(InvalidInputError, match=r"keep must be an int within 1\.\.100,000"):
        snapshots.set_retention(store, keep)  # type: ignore[arg-type]
    assert snapshots.retention(store.path) == snapshots.DEFAULT_KEEP


@pytest.mark.parametrize("text", ['{"keep": "three"}', '{"keep": 0}', '[3]', '{"pinned": "a"}'])
def test_a_hand_edited_retention_setting_is_named_not_a_traceback(store: Store, text: str) -> None:
    store.create_snapshot("a")
    settings = store.path / snapshots.SNAPSHOTS_DIR / snapshots.SETTINGS_NAME
    settings.write_text(text, encoding="utf-8")
    with pytest.raises(SnapshotError, match="is not a retention setting") as caught:
        store.create_snapshot("b")
    assert "delete it to return to the default" in str(caught.value)
    assert not (settings.parent / "b").exists()  # refused before anything was written
    settings.unlink()
    store.create_snapshot("b")
    assert [s.name for s in store.list_snapshots()] == ["a", "b"]


def test_diff_between_snapshots_and_live(store: Store) -> None:
    store.create_snapshot("before")
    store.ingest_documents([doc("d1", paragraphs(9, "longer")), doc("extra", paragraphs(2))])
    store.ingest_documents([doc("d4", paragraphs(8, "topic4"), title="Renamed 4")])
    store.delete_document("d5")
    store.create_snapshot("after")

    d = store.diff("before", "after")
    assert [c.document_id for c in d.added] == ["extra"]
    assert [c.document_id for c in d.removed] == ["d5"]
    assert {c.document_id: c.content_changed for c in d.changed} == {"d1": True, "d4": False}
    changed = {c.document_id: c for c in d.changed}
    assert (changed["d1"].version_a, changed["d1"].version_b) == ("1.0.0", "1.1.0")
    assert changed["d1"].chunks_b > changed["d1"].chunks_a
    assert d.unchanged == 3 and (d.documents_a, d.documents_b) == (6, 6)
    assert d.chunks_b - d.chunks_a == sum(
        (c.chunks_b or 0) - (c.chunks_a or 0) for c in (*d.added, *d.removed, *d.changed))
    live = store.diff("after")  # live equals "after"
    assert not (live.added or live.removed or live.changed) and live.unchanged == 6
    reverse = snapshots.diff_snapshots(store.path, "after", "before")
    assert [c.document_id for c in reverse.added] == ["d5"]


def test_restore_makes_live_equal_to_the_snapshot_as_a_new_generation(store: Store) -> None:
    store.create_snapshot("good")
    with _open_snapshot(store.path, "good") as snap:
        expected = _results(snap)
        expected_chunks = {d: snap._catalog.chunks_of(d) for d in (f"d{i}" for i in range(6))}
    store.ingest_documents([doc("d0", paragraphs(3, "broken")), doc("junk", paragraphs(4))])
    store.delete_document("d1")
    generation = store.generation

    report = store.restore_snapshot("good")
    assert report.generation == store.generation == generation + 1
    assert (report.documents, report.archived) == (6, 2)  # d0 replaced, junk deleted
    assert {d["document_id"] for d in store._catalog.list_documents()} == {f"d{i}" for i in range(6)}
    for doc_id, chunks in expected_chunks.items():
        got = store._catalog.chunks_of(doc_id)
        assert [(c["content"], c["start_offset"], c["end_offset"]) for c in got] == [
            (c["content"], c["start_offset"], c["end_offset"]) for c in chunks]
    restored = [[hit[:5] for hit in query] for query in _results(store)]
    assert restored == [[hit[:5] for hit in query] for query in expected]
    assert store.check().ok

    # History survives the restore, and a later edit never reuses an archived version.
    history = store.history("d0")
    assert [v["version"] for v in history] == ["1.0.0", "1.1.0", "1.2.0"]
    assert history[1]["change_summary"] == "replaced by restore of snapshot good"
    assert store.version_text("d0", "1.1.0") == paragraphs(3, "broken")
    store.ingest_documents([doc("d0", paragraphs(2, "later"))])
    assert [v["version"] for v in store.history("d0")][-1] == "1.3.0"
    assert store.version_text("d0", "1.2.0") == store.version_text("d0", "1.0.0")

    store.close()
    reopened = open_test_store(store.path)
    assert reopened.check().ok and reopened.generation == report.generation + 1
    reopened.close()


def test_restore_refuses_a_snapshot_built_with_another_model(store: Store) -> None:
    store.create_snapshot("old-model")
    store.reindex(embedder=HashingEmbedder(32))
    with pytest.raises(SnapshotError, match="cannot be restored"):
        store.restore_snapshot("old-model")
    with enginelib.open(store.path, snapshot="old-model", embedder=HashingEmbedder(64)) as snap:
        assert snap.search("caliper", strategy="vector", limit=1, answerability_threshold=None).hits
    with pytest.raises(enginelib.IncompatibleStoreError, match="hashing-64"):
        enginelib.open(store.path, snapshot="old-model", embedder=HashingEmbedder(32))


_SNAPSHOT_WRITER = textwrap.dedent(
    """
    import sys
    import enginelib
    from tests.helpers import doc, paragraphs
    from enginelib import snapshots
    store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(64))
    if sys.argv[2] == "create":
        store.create_snapshot("crash")
    else:
        store.restore_snapshot("base")
    store.close()
    """
)


@pytest.mark.parametrize("step", snapshots.SNAPSHOT_STEPS)
def test_kill_during_snapshot_create_or_restore(store: Store, step: str) -> None:
    store.create_snapshot("base")
    store.ingest_documents([doc("d0", paragraphs(2, "changed")), doc("added", paragraphs(3))])
    live_ids = {d["document_id"] for d in store._catalog.list_documents()}
    store.close()
    action = "create" if step.startswith("snapshot") else "restore"
    result = subprocess.run(
        [sys.executable, "-c", _SNAPSHOT_WRITER, str(store.path), action], cwd=REPO,
        capture_output=True, text=True, env={**os.environ, "ENGINELIB_CRASH_AT": step}, timeout=120,
    )
    assert result.returncode == -9, result.stderr

    reopened = open_test_store(store.path)
    try:
        assert reopened.check().ok, reopened.check().problems
        ids = {d["document_id"] for d in reopened._catalog.list_documents()}
        names = [s.name for s in reopened.list_snapshots()]
        if step == "snapshot_before_rename":
            assert names == ["base"] and ids == live_ids
            reopened.create_snapshot("crash")  # leftovers are cleaned, the name is free
            assert not list((reopened.path / "snapshots").glob(".tmp-*"))
        elif step == "restore_before_catalog_commit":
            assert ids == live_ids
        else:  # committed: the reopen finished the index side of the restore
            assert ids == {f"d{i}" for i in range(6)}
            hits = reopened.search("changed", strategy="fulltext", limit=50,
                                   answerability_threshold=None).hits
            assert all(h.document_id != "added" for h in hits)
    finally:
        reopened.close()


def test_versions_stay_unique_across_a_restore(store: Store) -> None:
    # after a restore a change re-used a version the history held: the citation of it named
    # two texts and the later archive was dropped
    store.ingest_documents([doc("v", "Text A about brakes and pads.")])
    store.create_snapshot("before")
    store.ingest_documents([doc("v", "Text B about tyres and pressure.")])
    store.restore_snapshot("before")
    store.ingest_documents([doc("v", "Text C about rotors and heat.")])
    store.update_document("v", tags=["t"])
    store.ingest_documents([doc("v", "Text D about fluid and water.")])
    history = store.history("v")
    versions = [h["version"] for h in history]
    assert len(versions) == len(set(versions)), versions
    texts = [store.version_text("v", version) for version in versions]
    assert texts[-1] == "Text D about fluid and water."
    assert {"Text A about brakes and pads.", "Text B about tyres and pressure.",
            "Text C about rotors and heat."} <= set(texts)


def test_a_restore_that_brings_back_a_deleted_document_gives_it_a_new_version(store: Store) -> None:
    # a document deleted after the snapshot came back under the version its history held as
    # deleted: history listed 1.0.0 twice (deleted, then current), the restore made a version
    # current again, where an ingest of the deleted id continues after it
    store.ingest_documents([doc("v", "Text A about brakes and pads.")])
    store.create_snapshot("before")
    store.delete_document("v")
    store.restore_snapshot("before")
    versions = [(h["version"], h["change_summary"]) for h in store.history("v")]
    assert versions == [("1.0.0", "deleted"), ("1.1.0", "current")]
    assert store.version_text("v", "1.1.0") == store.version_text("v", "1.0.0")
    again = store.restore_snapshot("before")  # nothing to change the second time
    assert again.archived == 0 and store.history("v")[-1]["version"] == "1.1.0"

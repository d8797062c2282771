"""The store: atomic replacement (no zombies), versions, cache, offsets, bad input, reopen."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder, LoadedDocument
from enginelib.errors import (
    DiskFullError,
    DocumentNotFoundError,
    IncompatibleStoreError,
    IngestError,
    InvalidInputError,
    InvalidTruthLevelError,
    ReadOnlyStoreError,
    StoreNotFoundError,
)
from tests.helpers import SMALL_CHUNKS, doc, open_test_store, paragraphs, text_with_chunks


class CountingEmbedder(HashingEmbedder):
    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim, name=f"hashing-{dim}")
        self.calls = 0
        self.texts = 0

    def embed(self, texts, progress=None):  # type: ignore[no-untyped-def]
        self.calls += 1
        self.texts += len(texts)
        return super().embed(texts, progress)


def chunk_rows(store: enginelib.Store, document_id: str) -> int:
    return store._catalog.con.execute(
        "SELECT count(*) FROM chunks WHERE document_id = ?", [document_id]
    ).fetchall()[0][0]


def searchable_labels(store: enginelib.Store) -> tuple[set[int], set[int]]:
    return set(store._vector_index.labels().tolist()), set(store._text_index.labels().tolist())


def test_zombie_chunks_10_then_15_then_3_leaves_exactly_3(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    for target in (10, 15, 3):
        text = text_with_chunks(target)
        report = store.ingest_documents([doc("manual", text, title="Manual")])
        assert report.chunks_written == target
        assert chunk_rows(store, "manual") == target
    labels = set(store._catalog.labels_of("manual").tolist())
    vector_labels, text_labels = searchable_labels(store)
    assert vector_labels == labels and text_labels == labels
    assert len(labels) == 3
    # Every method finds only the 3 live chunks.
    for strategy in ("vector", "fulltext", "hybrid"):
        response = store.search("workshop manual section", strategy=strategy, limit=50,
                                answerability_threshold=None)
        assert {h.label for h in response.hits} <= labels
        assert len(response.hits) == 3
    history = store._catalog.versions("manual")
    assert [v["version"] for v in history] == ["1.0.0", "1.1.0"]
    assert [v["total_chunks"] for v in history] == [10, 15]
    assert store.get_document("manual")["version"] == "1.2.0"
    store.close()
    # The same holds after reopening from disk.
    reopened = open_test_store(tmp_path / "s")
    assert searchable_labels(reopened) == (labels, labels)
    reopened.close()


def test_unchanged_reingest_is_a_noop(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(5), title="A")])
    generation = store.generation
    report = store.ingest_documents([doc("a", paragraphs(5), title="A")])
    assert report.unchanged == ("a",) and not report.added and not report.updated
    assert store.generation == generation
    assert store._catalog.versions("a") == []
    store.close()


def test_metadata_change_bumps_patch_and_archives_its_predecessor(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(5))], domain="brakes")
    store.ingest_documents([doc("a", paragraphs(5))], domain="suspension")
    document = store.get_document("a")
    assert document["domain"] == "suspension"
    assert document["version"] == "1.0.1"
    # as `update` does: a citation naming 1.0.0 still reads its text
    assert [v["version"] for v in store._catalog.versions("a")] == ["1.0.0"]
    store.close()


def test_embedding_cache_skips_unchanged_chunks(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    store = enginelib.open(tmp_path / "s", embedder=embedder, chunking=SMALL_CHUNKS)
    text = text_with_chunks(6)
    first = store.ingest_documents([doc("a", text, title="A")])
    assert first.chunks_embedded == 6 and first.chunks_from_cache == 0
    # Same chunks under another id, and the same id re-ingested with one paragraph appended.
    second = store.ingest_documents([doc("b", text, title="A")])
    assert second.chunks_embedded == 0 and second.chunks_from_cache == 6
    store.close()
    reopened = enginelib.open(tmp_path / "s", embedder=embedder)
    embedder.texts = 0
    reopened.ingest_documents([doc("c", text, title="A")])
    assert embedder.texts == 0
    reopened.close()


def test_offsets_are_exact_and_cover_the_document(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    text = "# Titre\r\n\r\nCafe\u0301 cr\u00e8me 🚗 " + paragraphs(12) + "\n## Fin\nDernier mot."
    store.ingest_documents([doc("x", enginelib.text.normalize_text(text), title="X")])
    stored = store.get_document("x")["content"]
    chunks = store._catalog.chunks_of("x")
    assert chunks[0]["start_offset"] == 0 and chunks[-1]["end_offset"] == len(stored)
    covered = 0
    for chunk in chunks:
        assert stored[chunk["start_offset"] : chunk["end_offset"]] == chunk["content"]
        assert chunk["start_offset"] <= covered  # no gap
        covered = max(covered, chunk["end_offset"])
        assert chunk["token_count"] <= SMALL_CHUNKS.max_tokens
    store.close()


def test_keywords_come_from_chunk_content(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    text = paragraphs(10) + "\n\nThe hydroplaning hydroplaning hydroplaning risk rises."
    store.ingest_documents([doc("k", text)])
    keywords = store.get_document("k")["keywords"]
    assert "hydroplaning" in keywords and len(keywords) <= 50
    assert "the" not in keywords
    store.close()


def test_bad_truth_level_is_rejected_and_store_unchanged(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(3))])
    before = store.stats()
    with pytest.raises(InvalidTruthLevelError, match="L5"):
        store.ingest_documents([doc("b", paragraphs(3))], truth_level="L5")
    # A record's own bad level skips that record (reported), not the call (issue 11).
    report = store.ingest_documents([doc("c", paragraphs(3), metadata={"truth_level": "gold"})])
    assert report.added == () and "gold" in report.skipped[0].reason
    with pytest.raises(IngestError, match="gold"):
        store.ingest_documents([doc("c", paragraphs(3), metadata={"truth_level": "gold"})],
                               strict=True)
    after = store.stats()
    assert after["documents"] == before["documents"] and after["chunks"] == before["chunks"]
    store.close()


def test_empty_document_is_skipped_with_reason(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    report = store.ingest_documents([doc("empty", "   \n "), doc("ok", paragraphs(2))])
    assert report.added == ("ok",)
    assert len(report.skipped) == 1 and "no text" in report.skipped[0].reason
    store.close()


def test_unknown_ingest_option_is_a_clear_error(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    with pytest.raises(InvalidInputError, match="truth_levle"):
        store.ingest_documents([doc("a", "text")], truth_levle="L1")
    store.close()


def test_reopen_rebuilds_missing_indexes_from_catalog(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc(f"d{i}", paragraphs(4, f"topic{i}")) for i in range(5)])
    labels = set(store._catalog.all_labels().tolist())
    store.close()
    import shutil

    shutil.rmtree(tmp_path / "s" / "indexes")
    reopened = open_test_store(tmp_path / "s")
    assert searchable_labels(reopened) == (labels, labels)
    reopened.close()


def test_a_store_opened_by_a_relative_path_survives_a_chdir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # enginelib.open("st") kept the relative path: after a chdir (pytest's monkeypatch.chdir
    # does one) its next search or ingest said "the catalog st/catalog.duckdb is gone since
    # this process opened the store: its folder was moved or deleted"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    writer = open_test_store(Path("st"))
    writer.ingest_documents([doc("pads", "Brake pads wear out.")])
    reader = enginelib.open("st", embedder=HashingEmbedder(64), read_only=True)
    monkeypatch.chdir(tmp_path / "elsewhere")
    writer.ingest_documents([doc("oil", "Oil filter change interval.")])
    assert [d["document_id"] for d in reader.list_documents()] == ["oil", "pads"]
    assert reader.search("brake pads", strategy="fulltext").hits[0].document_id == "pads"
    # the path shown (messages, stats, JSON) is the absolute one
    assert writer.path == reader.path == tmp_path / "st"
    assert writer.stats()["path"] == str(tmp_path / "st")
    reader.close()
    writer.close()
    assert os.listdir(tmp_path / "elsewhere") == []


def test_other_embedding_dimension_is_refused(tmp_path: Path) -> None:
    open_test_store(tmp_path / "s", dim=64).close()
    with pytest.raises(IncompatibleStoreError, match="reindex"):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32))


def test_read_only_store_refuses_writes_and_missing_store_is_clear(tmp_path: Path) -> None:
    open_test_store(tmp_path / "s").close()
    ro = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64), read_only=True)
    with pytest.raises(ReadOnlyStoreError):
        ro.ingest_documents([doc("a", "text")])
    ro.close()
    with pytest.raises(StoreNotFoundError, match="enginelib init"):
        enginelib.open(tmp_path / "nope", embedder=HashingEmbedder(64), create=False)


def test_delete_document_removes_it_everywhere(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(4)), doc("b", paragraphs(4, "gdpr"))])
    store.delete_document("a")
    vector_labels, text_labels = searchable_labels(store)
    assert vector_labels == text_labels == set(store._catalog.labels_of("b").tolist())
    with pytest.raises(enginelib.DocumentNotFoundError):
        store.get_document("a")
    assert [v["change_summary"] for v in store._catalog.versions("a")] == ["deleted"]
    store.close()


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys
    import enginelib
    from tests.helpers import SMALL_CHUNKS, paragraphs
    from enginelib.types import LoadedDocument
    store = enginelib.open(sys.argv[1], embedder=enginelib.HashingEmbedder(64), chunking=SMALL_CHUNKS)
    docs = (LoadedDocument(id=f"doc{i:03d}", text=paragraphs(3 + i % 4, f"t{i}")) for i in range(60))
    store.ingest_documents(docs, batch_size=5)
    """
)


@pytest.mark.parametrize("step", ["before_catalog_commit:3", "after_catalog_commit:4"])
def test_sigkill_during_batch_ingest_keeps_committed_documents(tmp_path: Path, step: str) -> None:
    path = tmp_path / "s"
    env = {**os.environ, "ENGINELIB_CRASH_AT": step}
    result = subprocess.run(
        [sys.executable, "-c", _KILL_SCRIPT, str(path)], env=env, cwd=Path(__file__).parent.parent,
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == -9, result.stderr
    store = open_test_store(path)
    committed = sorted(r["document_id"] for r in store._catalog.list_documents())
    batches = int(step.split(":")[1]) - (1 if step.startswith("before") else 0)
    assert committed == [f"doc{i:03d}" for i in range(5 * batches)]
    labels = set(store._catalog.all_labels().tolist())
    assert searchable_labels(store) == (labels, labels)
    for document_id in committed:  # whole documents only, offsets intact
        document = store.get_document(document_id)
        chunks = store._catalog.chunks_of(document_id)
        assert len(chunks) == document["total_chunks"]
        assert chunks[-1]["end_offset"] == len(document["content"])
    hits = store.search("workshop manual", strategy="fulltext", limit=200, answerability_threshold=None)
    assert {h.document_id for h in hits} == set(committed)
    store.close()


def test_vectors_in_catalog_match_the_embedder(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(3), title="T")])
    rows = store._catalog.con.execute(
        "SELECT c.content, c.heading_path, c.embedding FROM chunks c ORDER BY chunk_index"
    ).fetchall()
    expected = store.embedder.embed(["\n".join(p for p in ("T", r[1], r[0]) if p) for r in rows])
    assert np.allclose(np.array([r[2] for r in rows], dtype=np.float32), expected, atol=1e-6)
    store.close()


def test_search_time_index_options_apply_to_an_existing_store(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("manual", paragraphs(6), title="Manual")])
    store.close()
    manifest_before = (tmp_path / "s" / "manifest.json").read_text()
    tuned = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64), read_only=True,
                           index_options={"vector": {"ef_search": 400}, "text": {"lenient": True}})
    assert tuned._vector_index.ef_search == 400
    # Lenient text parsing for this session: an unbalanced quote is searched as words.
    assert tuned.search('"brake pads', strategy="fulltext", answerability_threshold=None).ok
    tuned.close()
    assert (tmp_path / "s" / "manifest.json").read_text() == manifest_before
    with pytest.raises(InvalidInputError, match=r"\['M'\] are fixed when a store is created"):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64), index_options={"vector": {"M": 32}})
    plain = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(64), read_only=True)
    assert plain._vector_index.ef_search != 400
    plain.close()


@pytest.mark.parametrize("options, named", [
    ({"vector": {"ef": 50}},
     r"\['vector'\]\['ef'\] is not an index option; 'vector' takes M, backend, ef_construction"),
    ({"text": {"tokenizer": "raw"}}, r"\['text'\]\['tokenizer'\] is not an index option"),
    ({"vectors": {"M": 8}}, r"\['vectors'\] is not understood"),
])
def test_an_index_option_no_backend_takes_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], named: str
) -> None:
    # passed to the backend as given: a raw TypeError "HnswVectorIndex.__init__() got an
    # unexpected keyword argument 'ef'", and the manifest that recorded it made every later
    # open fail the same way; "vectors" was recorded and never read (M=8 dropped unseen)
    with pytest.raises(InvalidInputError, match=named):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(16), index_options=options)
    assert not (tmp_path / "s").exists()
    monkeypatch.setenv("ENGINELIB_MEMORY_DIR", str(tmp_path))
    with pytest.raises(InvalidInputError, match=named):
        enginelib.memory(embedder=HashingEmbedder(16), index_options=options)
    assert os.listdir(tmp_path) == []


def test_the_index_options_a_new_store_takes_are_its_backends_own() -> None:
    import inspect

    from enginelib.core.compat import CREATION_INDEX_OPTIONS
    from enginelib.indexes import HnswVectorIndex, TantivyTextIndex, UsearchVectorIndex

    def keywords(cls: type, *internal: str) -> set[str]:
        return {p.name for p in inspect.signature(cls).parameters.values()
                if p.kind is p.KEYWORD_ONLY and p.name not in internal}

    assert keywords(HnswVectorIndex) | {"backend"} == CREATION_INDEX_OPTIONS["vector"]
    assert keywords(UsearchVectorIndex, "dtype") | {"backend"} == CREATION_INDEX_OPTIONS["vector"]
    assert keywords(TantivyTextIndex, "read_only") == CREATION_INDEX_OPTIONS["text"]
    with enginelib.memory(embedder=HashingEmbedder(16), index_options={
            "vector": {"M": 8, "ef_search": 30}, "text": {"languages": ["en"]}}) as store:
        assert store._vector_index.M == 8


def test_a_dimension_no_store_can_hold_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    # DuckDB's ARRAY stops at 100,000: the catalog failed after the manifest was written, and
    # every later open failed the same way ("run enginelib check and repair")
    with pytest.raises(InvalidInputError, match="embedding dimension must be within 1..16384"):
        enginelib.open(tmp_path / "s", embedder=HashingEmbedder(100_001))
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("folder_existed", [False, True])
def test_a_new_store_that_fails_half_way_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder_existed: bool
) -> None:
    import enginelib.core.store_core as store_core

    root = tmp_path / "s"
    if folder_existed:
        root.mkdir()

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_core, "Catalog", full_disk)
    with pytest.raises(DiskFullError, match="no space left"):
        enginelib.open(root, embedder=HashingEmbedder(16))
    # the folder the user made stays (empty); one we made goes
    assert (list(root.iterdir()) == []) if folder_existed else not root.exists()
    monkeypatch.undo()
    with enginelib.open(root, embedder=HashingEmbedder(16)) as store:  # and it can be created
        store.ingest_documents([doc("a", "Brake pads wear.")])
        assert store.search("brake").total == 1


def test_an_id_ingested_again_after_delete_continues_its_history(tmp_path: Path) -> None:
    # it restarted at 1.0.0: a citation of the deleted text named the same version as the new
    # one, and the next delete's archive was dropped (the history kept one 1.0.0)
    texts = ["Brake pads wear faster in city traffic.", "Tyres need their pressure checked.",
             "Rotors warp when they overheat."]
    with open_test_store(tmp_path / "s") as store:
        for text in texts:
            store.ingest_documents([doc("a", text)])
            store.delete_document("a")
        store.ingest_documents([doc("a", "Fluid absorbs water over the years.")])
        history = store.history("a")
        assert [(h["version"], h["change_summary"]) for h in history] == [
            ("1.0.0", "deleted"), ("1.1.0", "deleted"), ("1.2.0", "deleted"), ("1.3.0", "current")]
        assert [store.version_text("a", v) for v in ("1.0.0", "1.1.0", "1.2.0")] == texts
        store.delete_document("a")
        with pytest.raises(DocumentNotFoundError, match=r"it was deleted: `enginelib history a`"):
            store.get_document("a")


def test_a_failing_document_generator_is_told_what_was_committed(tmp_path: Path) -> None:
    # the caller's own exception goes up as it is; before, nothing said that two batches were
    # already in the store
    def documents() -> Iterator[LoadedDocument]:
        for i in range(5):
            yield doc(f"d{i}", f"Document number {i} about brakes.")
        raise ValueError("the source feed broke")

    with open_test_store(tmp_path / "s") as store:
        with pytest.raises(ValueError, match="the source feed broke") as caught:
            store.ingest_documents(documents(), batch_size=2)
        assert caught.value.report.added == ("d0", "d1", "d2", "d3")  # type: ignore[attr-defined]
        assert "4 document(s) of this ingest were committed before it stopped" in caught.value.__notes__[0]
        assert [d["document_id"] for d in store.list_documents()] == ["d0", "d1", "d2", "d3"]
        for one in (doc("x", "one document"), None):
            with pytest.raises(InvalidInputError, match="wrap one document in a list"):
                store.ingest_documents(one)  # type: ignore[arg-type]

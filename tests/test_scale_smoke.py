"""The scale path in CI: 10k chunks ingested as ``benchmarks/scale_store.py`` ingests 1M
(own vectors, large batches), then opened, searched, reopened and grown; plus the chunk
view's incremental advance and its text segments on small stores. No timing asserts: the
figures live in benchmarks/RESULTS.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import enginelib
from benchmarks import scale_store as scale
from enginelib import chunk_view
from enginelib.chunk_texts import FOLDER as TEXTS
from enginelib.own_vectors import ExternalVectors

N = 10_000
DIM = 8
NO_GATE = {"answerability_threshold": None, "log": False,
           "truth_levels": ["L1", "L2", "L3", "L4"]}


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scale") / "store"
    with enginelib.open(path, embedder=ExternalVectors(scale.DIM)) as store:
        report = store.ingest_documents(scale.Corpus().documents(N), batch_size=scale.BATCH)
    assert report.chunks_written == N
    return path


def _search(store: enginelib.Store, text: str, vector: np.ndarray, **options: object) -> list:
    return list(store.search(text, query_vector=vector, limit=10, **NO_GATE, **options).hits)


@pytest.mark.slow
def test_a_10k_store_counts_finds_and_cites_its_chunks(big: Path) -> None:
    corpus = scale.Corpus()
    _, texts, _, levels = corpus.block(0)
    queries = corpus.queries(N, count=8)
    with enginelib.open(big) as store:
        assert store.stats()["chunks"] == N
        for pick, text, vector in zip(queries["picks"], queries["texts"], queries["vectors"], strict=True):
            hits = _search(store, text, vector)
            top = {h.label: h for h in hits}
            assert int(pick) in top, (pick, text)
            hit = top[int(pick)]
            # The text comes from the segment files, exact to the character.
            assert hit.content == texts[int(pick)]
            assert hit.document_id == f"c{int(pick)}"
            assert hit.truth_level == levels[int(pick)]
            assert hit.citation.quote and hit.citation.quote in hit.content
        # Vectors are read from the vector index, not copied into the view.
        view = store.view()
        assert np.shares_memory(np.asarray(view.vectors), store._vector_index.rows_in_order()[1])


@pytest.mark.slow
def test_a_10k_store_reopens_read_only_and_grows_without_a_reload(
    big: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "copy"
    shutil.copytree(big, path)
    corpus = scale.Corpus()
    queries = corpus.queries(N, count=2)
    with enginelib.open(path, read_only=True) as reader:
        before = _search(reader, queries["texts"][0], queries["vectors"][0])
        assert before and int(queries["picks"][0]) in [h.label for h in before]
    added = list(corpus.documents(1_000, prefix="new-", first_block=N // scale.BLOCK))
    with enginelib.open(path) as store:
        store.view()
        loads: list[int] = []
        original = chunk_view.ChunkView.load.__func__  # type: ignore[attr-defined]
        monkeypatch.setattr(chunk_view.ChunkView, "load",
                            classmethod(lambda cls, *a, **k: loads.append(1) or original(cls, *a, **k)))
        store.ingest_documents(added, batch_size=scale.BATCH)
        probe = added[500]
        hits = _search(store, " ".join(probe.text.split()[:6]), probe.vectors[0])
        assert hits[0].document_id == probe.id and hits[0].content == probe.text
        assert len(store.view()) == N + 1_000
        assert loads == []  # the view advanced by the 1,000 new chunks, no full reload
    with enginelib.open(path, read_only=True) as reader:
        assert reader.stats()["chunks"] == N + 1_000
        again = _search(reader, " ".join(probe.text.split()[:6]), probe.vectors[0])
        assert again[0].document_id == probe.id


# -- the view's incremental advance and text segments, on small stores (quick tier) -------

TEXTS_BY_ID = {
    "pads": "Replace the brake pads when they are thinner than 3 mm.",
    "fluid": "Brake fluid absorbs water: change it every two years.",
    "gdpr": "Personal data shall be processed lawfully and fairly.",
    "bolts": "Torque the caliper bolts to 30 Nm.",
}


def _vector(key: str) -> np.ndarray:
    rng = np.random.default_rng(sorted(TEXTS_BY_ID).index(key) + 1)
    return rng.normal(size=DIM).astype(np.float32)


def _small(path: Path) -> enginelib.Store:
    store = enginelib.open(path, embedder=ExternalVectors(DIM))
    store.ingest_documents(
        [enginelib.LoadedDocument(id=k, text=t, vectors=_vector(k)) for k, t in TEXTS_BY_ID.items()],
        truth_level="L1")
    return store


def test_the_view_follows_deletes_replacements_and_metadata_changes(tmp_path: Path) -> None:
    store = _small(tmp_path / "s")
    assert _search(store, "brake fluid", _vector("fluid"))[0].document_id == "fluid"
    store.delete_document("pads")
    store.update_document("gdpr", truth_level="L4")
    store.ingest_documents([enginelib.LoadedDocument(
        id="fluid", text="Brake fluid is hygroscopic: replace it every two years.",
        vectors=_vector("fluid"))], truth_level="L1")
    view = store.view()
    assert len(view) == 3
    hits = _search(store, "brake fluid hygroscopic", _vector("fluid"))
    assert hits[0].document_id == "fluid" and "hygroscopic" in hits[0].content
    assert "pads" not in {h.document_id for h in hits}
    levels = {h.document_id: h.truth_level for h in hits}
    assert levels["gdpr"] == "L4"
    l1 = store.search("personal data", query_vector=_vector("gdpr"), truth_levels=["L1"],
                      answerability_threshold=None).hits
    assert "gdpr" not in {h.document_id for h in l1}
    store.close()


def test_lost_text_segments_are_written_again_and_readers_fill_the_gap(tmp_path: Path) -> None:
    store = _small(tmp_path / "s")
    store.view()
    store.close()
    segments = tmp_path / "s" / TEXTS
    assert any(segments.iterdir())
    shutil.rmtree(segments)
    # A reader cannot write segments: it reads the texts from the catalog into memory.
    with enginelib.open(tmp_path / "s", read_only=True) as reader:
        hit = _search(reader, "caliper bolts", _vector("bolts"))[0]
        assert hit.document_id == "bolts" and hit.content == TEXTS_BY_ID["bolts"]
    assert not segments.exists()
    # A writer writes them again from the catalog.
    with enginelib.open(tmp_path / "s") as writer:
        hit = _search(writer, "caliper bolts", _vector("bolts"))[0]
        assert hit.content == TEXTS_BY_ID["bolts"]
    assert any(p.suffix == ".txts" for p in segments.iterdir())


def test_a_segment_newer_than_the_catalog_is_not_used(tmp_path: Path) -> None:
    store = _small(tmp_path / "s")
    store.view()
    store.close()
    segments = tmp_path / "s" / TEXTS
    (segment,) = [p for p in segments.iterdir() if p.suffix == ".txts"]
    # A segment from a later generation (a catalog put back from a backup): never trusted.
    shutil.copy(segment, segments / "seg-999999999999-feedbeef.txts")
    with enginelib.open(tmp_path / "s") as writer:
        assert _search(writer, "caliper bolts", _vector("bolts"))[0].content == TEXTS_BY_ID["bolts"]
    assert not (segments / "seg-999999999999-feedbeef.txts").exists()


def test_a_torn_segment_reads_as_missing_and_is_written_again(tmp_path: Path) -> None:
    store = _small(tmp_path / "s")
    store.view()
    store.close()
    segments = tmp_path / "s" / TEXTS
    (segment,) = [p for p in segments.iterdir() if p.suffix == ".txts"]
    data = segment.read_bytes()
    segment.write_bytes(data[: len(data) - 8])  # a file cut short (a disk that lied on fsync)
    with enginelib.open(tmp_path / "s", read_only=True) as reader:
        assert _search(reader, "caliper bolts", _vector("bolts"))[0].content == TEXTS_BY_ID["bolts"]
    with enginelib.open(tmp_path / "s") as writer:
        assert _search(writer, "caliper bolts", _vector("bolts"))[0].content == TEXTS_BY_ID["bolts"]
    (rewritten,) = [p for p in segments.iterdir() if p.suffix == ".txts" and p.name != segment.name]
    assert rewritten.stat().st_size == len(data)


def test_a_store_with_arrow_segments_of_an_older_release_opens(tmp_path: Path) -> None:
    """Before pyarrow left the base install, segments were Arrow IPC files; they are never
    read now: a reader takes the texts from the catalog, a writer writes new segments and
    deletes the old ones."""
    store = _small(tmp_path / "s")
    store.view()
    generation = store.view().generation
    store.close()
    segments = tmp_path / "s" / TEXTS
    for p in segments.iterdir():
        p.unlink()
    old = segments / f"seg-{generation:012d}-0badc0de.arrow"
    # Wrong texts on purpose: a hit showing them would mean the old file was read.
    old.write_bytes(b"ARROW1\x00\x00" + b"Torque the caliper bolts to 99 Nm." + b"ARROW1")
    with enginelib.open(tmp_path / "s", read_only=True) as reader:
        hit = _search(reader, "caliper bolts", _vector("bolts"))[0]
        assert hit.document_id == "bolts" and hit.content == TEXTS_BY_ID["bolts"]
    assert old.exists()  # a reader deletes nothing
    with enginelib.open(tmp_path / "s") as writer:
        hits = _search(writer, "brake pads", _vector("pads"))
        assert hits[0].content == TEXTS_BY_ID["pads"]
        assert writer.stats()["chunks"] == len(TEXTS_BY_ID)
    assert not old.exists()
    assert [p.suffix for p in segments.iterdir()] == [".txts"]


def test_segment_texts_round_trip_unicode_and_empty_headings(tmp_path: Path) -> None:
    from enginelib.chunk_texts import TextSegments

    texts = ["Größe ≤ 3 mm — 日本語", "", "plain"]
    headings = ["A > B", "", ""]
    segments = TextSegments(tmp_path / "t", writable=True, generation=5)
    batches = [(np.array([2, 7], dtype=np.int64), texts[:2], headings[:2]),
               (np.array([9], dtype=np.int64), texts[2:], headings[2:])]
    assert segments.add(iter(batches), 5) == 3
    again = TextSegments(tmp_path / "t", writable=False, generation=5)
    assert again.generation == 5
    assert again.get([9, 2, 7, 3]) == {2: (texts[0], headings[0]), 7: ("", ""), 9: ("plain", "")}
    assert again.covered(np.array([1, 2, 7, 8, 9], dtype=np.int64)).tolist() == [
        False, True, True, False, True]


@pytest.mark.slow
def test_many_small_commits_merge_their_text_segments(tmp_path: Path) -> None:
    from enginelib.chunk_texts import MAX_SEGMENTS

    store = _small(tmp_path / "s")
    for n in range(MAX_SEGMENTS + 3):  # a search after each commit: one segment each
        store.ingest_documents([enginelib.LoadedDocument(
            id=f"note{n}", text=f"Maintenance note number {n} about wiper blades.",
            vectors=_vector("pads") + n)], truth_level="L1")
        store.view()
    segments = [p for p in (tmp_path / "s" / TEXTS).iterdir() if p.suffix == ".txts"]
    assert len(segments) <= MAX_SEGMENTS
    for n in (0, MAX_SEGMENTS + 2):
        hits = store.search(f"note number {n} wiper", strategy="fulltext", limit=50,
                            answerability_threshold=None).hits
        assert f"Maintenance note number {n} about wiper blades." in {h.content for h in hits}
    assert _search(store, "caliper bolts", _vector("bolts"))[0].content == TEXTS_BY_ID["bolts"]
    store.close()


def test_view_columns_agree_with_records(tmp_path: Path) -> None:
    store = _small(tmp_path / "s")
    store.update_document("gdpr", truth_level="L4")  # codes concatenated by an advance
    view = store.view()
    names = ("document_id", "truth_level", "title", "source_id", "version", "chunk_index",
             "start_offset", "page_start")
    for p in range(len(view)):
        record = view.record(p)
        assert {n: view.column(n)[p] for n in names} == {n: getattr(record, n) for n in names}
    assert {view.column("document_id")[p]: view.column("truth_level")[p]
            for p in range(len(view))}["gdpr"] == "L4"
    with pytest.raises(KeyError):
        view.column("content")
    store.close()

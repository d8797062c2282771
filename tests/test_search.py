"""Search behaviour on the hashing embedder: filters, pagination, fusion, gates, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import NO_RELEVANT_SOURCES, check_answer_citations
from enginelib.errors import (
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    InvalidTruthLevelError,
    InvalidVectorError,
)
from enginelib.indexes.exact import exact_topk
from tests.helpers import doc, open_test_store, paragraphs

TOPICS = ["brakes", "gdpr", "tokens", "engines", "tyres", "privacy", "batteries", "lighting"]


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    path = tmp_path_factory.mktemp("search") / "s"
    store = open_test_store(path)
    docs = []
    for i in range(40):
        topic = TOPICS[i % len(TOPICS)]
        docs.append(doc(
            f"doc{i:02d}", paragraphs(3 + i % 5, topic), title=f"{topic} guide {i}",
            metadata={"tags": [topic, "even" if i % 2 == 0 else "odd"],
                      "truth_level": f"L{1 + i % 4}", "domain": topic,
                      "author": "ana" if i < 20 else "ben", "region": "eu" if i % 3 else "us"},
        ))
    store.ingest_documents(docs)
    yield store
    store.close()


def search(store: enginelib.Store, query: str, **options: object) -> enginelib.SearchResponse:
    options.setdefault("answerability_threshold", None)
    options.setdefault("truth_levels", ("L1", "L2", "L3", "L4"))
    return store.search(query, **options)


def test_default_truth_levels_are_l1_and_l2(corpus_store: enginelib.Store) -> None:
    response = corpus_store.search("brakes workshop", limit=100, answerability_threshold=None)
    assert response.truth_levels == ("L1", "L2")
    assert response.hits and {h.truth_level for h in response.hits} <= {"L1", "L2"}
    widened = search(corpus_store, "brakes workshop", limit=100)
    assert {h.truth_level for h in widened.hits} == {"L1", "L2", "L3", "L4"}


@pytest.mark.parametrize("strategy", ["vector", "fulltext", "hybrid"])
def test_filters_apply_before_ranking(corpus_store: enginelib.Store, strategy: str) -> None:
    filters = {"domain": "gdpr", "tags": {"all": ["gdpr", "even"]}, "author": "ana"}
    response = search(corpus_store, "workshop manual brakes", strategy=strategy, filters=filters, limit=50)
    expected = {f"doc{i:02d}" for i in range(20) if TOPICS[i % 8] == "gdpr" and i % 2 == 0}
    assert {h.document_id for h in response.hits} == expected


def test_metadata_and_date_filters(corpus_store: enginelib.Store) -> None:
    us = search(corpus_store, "workshop", filters={"metadata.region": "us"}, limit=200)
    assert {h.document_id for h in us.hits} == {f"doc{i:02d}" for i in range(40) if i % 3 == 0}
    future = search(corpus_store, "workshop", filters={"created_at": {"gte": "2999-01-01"}})
    assert future.status == NO_RELEVANT_SOURCES and "filters" in (future.reason or "")


def test_a_date_alone_in_a_date_filter_is_its_whole_day(tmp_path: Path) -> None:
    # "lte 2024-06-30" meant midnight: a document of June 30 at 10:30 was left out
    from datetime import date

    store = open_test_store(tmp_path / "s")
    store.ingest_documents([
        doc(f"d{day}", f"Brake pads wear, report {day}.",
            metadata={"created_at": f"2024-06-{day}T10:30:00", "truth_level": "L1"})
        for day in (29, 30)] + [doc("d01", "Brake pads wear, report of July.",
                                   metadata={"created_at": "2024-07-01T00:00:00"})])

    def found(**bounds: object) -> set[str]:
        hits = store.search("brake pads", strategy="fulltext", answerability_threshold=None,
                            truth_levels=["L1", "L2"], filters={"created_at": bounds}).hits
        return {h.document_id for h in hits}

    assert found(lte="2024-06-30") == found(to="2024-06-30") == {"d29", "d30"}
    assert found(lte=date(2024, 6, 30)) == {"d29", "d30"}
    assert found(lte="2024-06-30T00:00:00") == {"d29"}  # a time given is that instant
    assert found(gt="2024-06-29") == {"d30", "d01"}
    assert found(gt="2024-06-29T00:00:00") == {"d29", "d30", "d01"}
    assert found(gte="2024-06-30", lt="2024-07-01") == {"d30"}
    # the last day a date can name, an open end: it was a bare OverflowError
    assert found(gte="2024-06-30", lte="9999-12-31") == {"d30", "d01"}
    assert found(to=date(9999, 12, 31)) == found(lte="9999-12-31T23:59:59") == {"d29", "d30", "d01"}
    assert found(gt="9999-12-31") == set()
    store.close()


def test_sql_in_filter_values_is_just_a_value(corpus_store: enginelib.Store) -> None:
    before = corpus_store.stats()["chunks"]
    response = search(corpus_store, "brakes", filters={"domain": "'; DROP TABLE chunks; --"})
    assert response.status == NO_RELEVANT_SOURCES
    with pytest.raises(InvalidFilterError):
        search(corpus_store, "brakes", filters={"metadata.x') OR 1=1 --": "y"})
    assert corpus_store.stats()["chunks"] == before


@pytest.mark.parametrize(
    "filters, field",
    [({"colour": "red"}, "colour"), ({"domain": 3}, "domain"), ({"tags": {"some": ["a"]}}, "tags"),
     ({"created_at": "yesterday"}, "created_at"), ({"created_at": {"gte": "not a date"}}, "created_at"),
     ({"domain": []}, "domain")],
)
def test_bad_filters_are_typed_errors(corpus_store: enginelib.Store, filters: dict, field: str) -> None:
    with pytest.raises(InvalidFilterError) as info:
        search(corpus_store, "brakes", filters=filters)
    assert info.value.field == field


def test_pagination_is_stable(corpus_store: enginelib.Store) -> None:
    full = search(corpus_store, "workshop manual section", limit=30)
    page1 = search(corpus_store, "workshop manual section", limit=10)
    page2 = search(corpus_store, "workshop manual section", limit=10, offset=10)
    assert [h.label for h in page1.hits] == [h.label for h in full.hits[:10]]
    assert [h.label for h in page2.hits] == [h.label for h in full.hits[10:20]]
    assert [h.rank for h in page2.hits] == list(range(11, 21))
    past = search(corpus_store, "workshop manual section", limit=10, offset=5_000)
    assert past.status == NO_RELEVANT_SOURCES and "past the last result" in (past.reason or "")
    with pytest.raises(InvalidInputError, match="offset"):
        search(corpus_store, "workshop manual section", limit=10, offset=10_001)


def test_score_breakdown_per_method(corpus_store: enginelib.Store) -> None:
    response = search(corpus_store, "gdpr workshop manual", strategy="hybrid", limit=20)
    for hit in response.hits:
        s = hit.scores
        assert s.vector_rank is not None or s.bm25_rank is not None
        expected = sum(1 / (60 + r) for r in (s.vector_rank, s.bm25_rank) if r is not None)
        # plus the share of its best sibling provision's score (tests/test_sibling_evidence.py)
        assert s.fused == pytest.approx(expected + s.sibling)
    vector_only = search(corpus_store, "gdpr", strategy="vector", limit=5)
    assert all(h.scores.bm25_rank is None and h.scores.vector_rank for h in vector_only.hits)


def test_rrf_k_and_weighted_fusion(corpus_store: enginelib.Store) -> None:
    a = search(corpus_store, "gdpr workshop", rrf_k=1, limit=5)
    rrf = a.hits[0].scores.fused - a.hits[0].scores.sibling  # RRF's part is at most 2 / (k + 1)
    assert rrf <= 1.0 and rrf > 1 / 61 * 2
    w = search(corpus_store, "gdpr workshop", fusion="weighted", weights=(0.0, 1.0), limit=10)
    bm25_order = search(corpus_store, "gdpr workshop", strategy="fulltext", limit=10)
    assert [h.label for h in w.hits] == [h.label for h in bm25_order.hits]
    with pytest.raises(InvalidInputError, match="rrf_k"):
        search(corpus_store, "gdpr", rrf_k=0)


def test_min_score_drops_weak_hits(corpus_store: enginelib.Store) -> None:
    response = search(corpus_store, "gdpr workshop", limit=100)
    cut = response.hits[4].scores.fused
    kept = search(corpus_store, "gdpr workshop", limit=100, min_score=cut)
    assert all(h.scores.fused >= cut for h in kept.hits)
    assert len(kept.hits) >= 5 and len(kept.hits) < len(response.hits)


def test_rewrites_keep_each_chunks_best(corpus_store: enginelib.Store) -> None:
    single = search(corpus_store, "gdpr", strategy="fulltext", limit=100)
    both = search(corpus_store, ["gdpr", "batteries"], strategy="fulltext", limit=100)
    assert {h.label for h in single.hits} < {h.label for h in both.hits}


def test_diversity_caps_chunks_per_source(corpus_store: enginelib.Store) -> None:
    response = search(corpus_store, "workshop manual", limit=20, mmr=True)
    per_doc: dict[str, int] = {}
    for hit in response.hits:
        per_doc[hit.document_id] = per_doc.get(hit.document_id, 0) + 1
    assert max(per_doc.values()) <= 2
    grouped = search(corpus_store, "workshop manual", limit=20, chunks_per_doc=1)
    assert len({h.document_id for h in grouped.hits}) == len(grouped.hits)


def test_chunks_per_doc_ranks_documents_by_their_best_chunk(corpus_store: enginelib.Store) -> None:
    # every chunk of the corpus is a candidate (fewer chunks than the depth): the grouped
    # page is the plain ranking regrouped by hand
    plain = search(corpus_store, "workshop manual torque", limit=500, log=False)
    assert not plain.total_is_lower_bound and len(plain.hits) > 40
    expected: dict[str, list[int]] = {}
    for hit in plain.hits:
        bucket = expected.setdefault(hit.document_id, [])
        if len(bucket) < 2:
            bucket.append(hit.label)
    grouped = search(corpus_store, "workshop manual torque", limit=500, chunks_per_doc=2, log=False)
    assert [h.label for h in grouped.hits] == [x for bucket in expected.values() for x in bucket]
    assert [h.rank for h in grouped.hits] == list(range(1, len(grouped.hits) + 1))


def test_authority_boost_lifts_gold_sources(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.add_source("oem", tier="gold", evidence_level="rct", peer_reviewed=True, authority_score=90)
    store.ingest_documents([doc("forum", paragraphs(2)), doc("oem-doc", paragraphs(2))])
    store.ingest_documents([doc("oem-doc", paragraphs(2), metadata={"source_id": "oem"})])
    plain = search(store, "workshop manual", limit=2, strategy="fulltext")
    boosted = search(store, "workshop manual", limit=2, strategy="fulltext", boosts=True)
    assert boosted.hits[0].document_id == "oem-doc"
    assert boosted.hits[0].scores.boost == pytest.approx(0.15 + 0.10 + 0.05 + 0.05)
    assert {h.document_id for h in plain.hits} == {"forum", "oem-doc"}
    store.close()


def test_answerability_gate_says_no_relevant_sources(corpus_store: enginelib.Store) -> None:
    response = corpus_store.search("quantum chromodynamics lattice", truth_levels="L1,L2,L3,L4",
                                   answerability_threshold=0.99)
    assert response.status == NO_RELEVANT_SOURCES and response.hits == ()
    assert "threshold" in (response.reason or "")
    nothing = corpus_store.search("zzzxq", strategy="fulltext")
    assert nothing.status == NO_RELEVANT_SOURCES and not nothing.ok


def test_hits_carry_exact_citations(corpus_store: enginelib.Store) -> None:
    response = search(corpus_store, "gdpr workshop", limit=5, strategy="hybrid")
    for n, hit in enumerate(response.hits, start=1):
        text = corpus_store.get_document(hit.document_id)["content"]
        assert text[hit.start_offset : hit.end_offset] == hit.content
        c = hit.citation
        assert (c.start_offset, c.end_offset, c.number) == (hit.start_offset, hit.end_offset, n)
        assert len(c.quote) <= 500 and c.display_text.startswith(f"[{n}] ")
        for h in hit.highlights:
            assert text[h.start_offset : h.end_offset].lower().startswith(h.term[:3].lower())
    ctx = response.context
    assert ctx.citations == tuple(h.citation for h in response.hits)
    assert ctx.lowest_truth_level == max((h.truth_level for h in response.hits), key=lambda x: x[1])
    assert 0.0 <= ctx.confidence <= 1.0 and ctx.index_version


def test_check_answer_citations_reports_unsupported(corpus_store: enginelib.Store) -> None:
    response = search(corpus_store, "gdpr workshop", limit=2)
    first = response.hits[0]
    answer = (f"Pads wear out [1]. Check the torque [2]. Brakes squeal [7]. "
              f"See [Chunk {first.document_id}#{first.chunk_index}]. Unsourced claim.")
    check = check_answer_citations(answer, response.context.citations)
    assert check.unsupported == ("[7]",)
    assert "[1]" in check.supported and f"[Chunk {first.document_id}#{first.chunk_index}]" in check.supported
    assert check.uncited_sentences == ("Unsourced claim.",) and not check.ok
    # the response itself, its context or its hits do as well (the response raised
    # AttributeError: 'Hit' object has no attribute 'number')
    for given in (response, response.context, response.hits):
        assert check_answer_citations(answer, given) == check
    for bad in ("[1]", [1], {"number": 1}):
        with pytest.raises(InvalidInputError, match="citations"):
            check_answer_citations(answer, bad)
    with pytest.raises(InvalidInputError, match="answer must be a string"):
        check_answer_citations(None, response)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", "   "])
def test_empty_query_is_an_error(corpus_store: enginelib.Store, query: str) -> None:
    with pytest.raises(InvalidQueryError, match="empty"):
        corpus_store.search(query)


def test_odd_queries_are_well_defined(corpus_store: enginelib.Store) -> None:
    stop = search(corpus_store, "the of and", strategy="fulltext")
    assert stop.status in ("ok", NO_RELEVANT_SOURCES)
    with pytest.raises(InvalidQueryError, match="no searchable words"):
        search(corpus_store, "?!... ---", strategy="hybrid")
    long_query = search(corpus_store, "brakes " * 1500, strategy="hybrid", limit=3)
    assert long_query.hits
    with pytest.raises(InvalidQueryError, match="limit"):
        corpus_store.search("x" * 30_000)
    with pytest.raises(InvalidQueryError):
        search(corpus_store, 'pads AND "rotor', strategy="fulltext")
    with pytest.raises(InvalidQueryError):
        search(corpus_store, "(pads OR rotor", strategy="fulltext")


@pytest.mark.parametrize("strategy", ["fulltext", "hybrid"])
def test_a_decomposed_query_finds_what_its_composed_form_finds(
    tmp_path: Path, strategy: str
) -> None:
    import unicodedata

    # "données" typed on macOS or pasted from a PDF arrives as "donne" + U+0301 + "es";
    # documents are stored NFC, and full-text search found nothing
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("fr", "Le droit à l'effacement des données personnelles."),
                            doc("en", "Brake pads wear faster in city traffic.")])
    decomposed = unicodedata.normalize("NFD", "données personnelles")
    assert decomposed != "données personnelles"
    response = store.search(decomposed, strategy=strategy, answerability_threshold=None)
    assert response.hits and response.hits[0].document_id == "fr"
    assert response.query == "données personnelles"
    store.close()


def test_bad_limits_vectors_and_levels(corpus_store: enginelib.Store) -> None:
    for bad in (0, -3, True, 2.5):
        with pytest.raises(InvalidInputError):
            search(corpus_store, "brakes", limit=bad)
    with pytest.raises(InvalidInputError):
        search(corpus_store, "brakes", offset=-1)
    with pytest.raises(InvalidInputError, match="strategy"):
        search(corpus_store, "brakes", strategy="semantic")
    with pytest.raises(InvalidTruthLevelError):
        corpus_store.search("brakes", truth_levels="L1,L9")
    with pytest.raises(InvalidVectorError, match="64"):
        search(corpus_store, "brakes", strategy="vector", query_vector=np.ones(12))
    with pytest.raises(InvalidVectorError, match="NaN"):
        search(corpus_store, "brakes", strategy="vector", query_vector=np.full(64, np.nan))


def test_exact_and_ann_agree_on_a_tiny_filter(tmp_path: Path) -> None:
    """A filter keeping 0.5% of chunks still returns the exact top-k among them."""
    store = open_test_store(tmp_path / "s")
    docs = [doc(f"d{i:04d}", f"Note {i}: " + paragraphs(1, TOPICS[i % 8]),
                metadata={"tags": ["rare"] if i % 200 == 7 else ["common"]}) for i in range(2000)]
    store.ingest_documents(docs, batch_size=500)
    query = np.asarray(store.embedder.embed(["caliper torque gdpr"]))[0]
    filters = {"tags": ["rare"]}
    ann = search(store, "q", strategy="vector", query_vector=query, filters=filters, limit=5)
    view = store.view()
    allowed = store._catalog.con.execute(
        "SELECT label FROM chunks c JOIN documents d USING (document_id) "
        "WHERE list_has_any(d.tags, ['rare']) ORDER BY label"
    ).fetchnumpy()["label"]
    assert 0 < len(allowed) <= 0.005 * len(view)
    pos = view.positions(allowed)
    truth = exact_topk(view.vectors[pos], view.labels[pos], query.reshape(1, -1), 5)[0]
    assert [h.label for h in ann.hits] == [label for label, _ in truth]
    store.close()


def test_query_log_and_retrieval_counts(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(3))])
    store.search("workshop", answerability_threshold=None)
    store.search("zzzq", strategy="fulltext")
    store.persist()  # the log is buffered; persist (or close) flushes it
    rows = store._catalog.con.execute(
        "SELECT query_text, strategy, result_count, status, latency_ms FROM query_log ORDER BY id"
    ).fetchall()
    assert [(r[0], r[2], r[3]) for r in rows] == [
        ("workshop", len(rows) and rows[0][2], "ok"), ("zzzq", 0, NO_RELEVANT_SOURCES)]
    assert rows[0][2] > 0 and all(r[4] >= 0 for r in rows)
    counts = store._catalog.con.execute("SELECT sum(retrieval_count) FROM chunks").fetchall()[0][0]
    assert counts == rows[0][2]
    store.close()


def test_reranker_hook_reorders(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", paragraphs(2)), doc("b", paragraphs(2, "gdpr"))])
    def prefer_gdpr(query: str, passages: list[str]) -> list[float]:
        return [1.0 if "gdpr" in p else 0.0 for p in passages]
    response = search(store, "workshop", reranker=prefer_gdpr, limit=2)
    assert response.hits[0].document_id == "b" and response.hits[0].scores.rerank_score == 1.0
    # a hook that fails is named as the hook (a RuntimeError or ValueError from inside the
    # search before), and a NaN score, which orders nothing, is refused
    def down(query: str, passages: list[str]) -> list[float]:
        raise RuntimeError("rerank service down")

    for hook, message in [
        (down, "the reranker 'down' failed: RuntimeError: rerank service down"),
        (lambda q, ps: ["high"] * len(ps), "failed: ValueError"),
        (lambda q, ps: [float("nan")] * len(ps), "NaN or infinite"),
        (lambda q, ps: [1.0], r"returned 1 scores for 3 passages"),
        (lambda q, ps: None, "failed: TypeError"),
    ]:
        with pytest.raises(enginelib.RerankerError, match=message):
            search(store, "workshop", reranker=hook, limit=2)
    store.close()


PRESET_QUERY = "engine torque checking"


def _topic_store(path: Path) -> enginelib.Store:
    store = open_test_store(path)
    topics = ["brakes", "engine", "gearbox", "tyres", "lights", "battery"]
    store.ingest_documents([doc(t, paragraphs(4, t)) for t in topics])
    return store


def test_named_presets_come_from_the_catalog(tmp_path: Path) -> None:
    store = _topic_store(tmp_path / "s")
    query = PRESET_QUERY
    keyword = store.search(query, preset="keyword", answerability_threshold=None)
    by_hand = store.search(query, fusion="weighted", weights=(0.3, 0.7), answerability_threshold=None)
    assert [h.label for h in keyword.hits] == [h.label for h in by_hand.hits]
    assert [h.scores.fused for h in keyword.hits] == [h.scores.fused for h in by_hand.hits]
    # Explicit options win over the preset's.
    rrf = store.search(query, preset="keyword", fusion="rrf", answerability_threshold=None)
    assert rrf.hits[0].scores.fused - rrf.hits[0].scores.sibling <= 2 / 61  # RRF's part
    store.save_search_preset("tight", fusion="rrf", rrf_k=5, description="steep RRF")
    tight = store.search(query, preset="tight", answerability_threshold=None)
    top = tight.hits[0].scores
    assert top.fused == pytest.approx(
        sum(1 / (5 + r) for r in (top.vector_rank, top.bm25_rank) if r) + top.sibling)
    with pytest.raises(InvalidInputError, match="unknown search preset 'nope'.*keyword"):
        store.search(query, preset="nope")
    with pytest.raises(InvalidInputError):
        store.save_search_preset("bad", fusion="median")
    # a name is typed and listed (the snapshot names' rule); a search setting is not a preset's
    # field (a raw TypeError before); a description is a line, not a document
    for name, values, message in [
        ("../x", {}, "preset name '../x' is not allowed"),
        ("two\nlines", {}, "is not allowed"),
        ("limited", {"limit": 5}, r"unknown preset field\(s\) \['limit'\]"),
        ("long", {"description": "x" * 1001}, "the maximum is 1,000"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            store.save_search_preset(name, **values)
        assert name not in store.search_presets()
    store.close()
    reopened = enginelib.open(tmp_path / "s", embedder=store.embedder, read_only=True)
    assert "tight" in reopened.search_presets()
    reopened.close()


def test_a_store_can_change_its_default_preset(tmp_path: Path) -> None:
    store = _topic_store(tmp_path / "s")
    query = PRESET_QUERY
    rrf = store.search(query, answerability_threshold=None)
    assert store.default_search_preset() == "default"
    assert rrf.hits[0].scores.fused - rrf.hits[0].scores.sibling <= 2 / 61  # RRF k=60 until told otherwise
    reader = enginelib.open(tmp_path / "s", embedder=store.embedder, read_only=True)
    store.set_default_search_preset("balanced")
    weighted = store.search(query, fusion="weighted", weights=(0.5, 0.5), answerability_threshold=None)
    by_default = store.search(query, answerability_threshold=None)
    assert [h.scores.fused for h in by_default.hits] == [h.scores.fused for h in weighted.hits]
    # An explicit fusion still wins over the store's default.
    top = store.search(query, fusion="rrf", answerability_threshold=None).hits[0].scores
    assert top.fused - top.sibling <= 2 / 61
    with pytest.raises(InvalidInputError, match="unknown search preset 'fastest'"):
        store.set_default_search_preset("fastest")
    store.close()
    # A reader opened before the change follows it once it sees the new generation.
    reader.refresh()
    assert reader.default_search_preset() == "balanced"
    reader.close()


def test_weights_as_a_mapping_say_which_keys_they_take(corpus_store: enginelib.Store) -> None:
    as_pair = search(corpus_store, "gdpr workshop", fusion="weighted", weights=(0.7, 0.3))
    for same in ({"vector": 0.7, "bm25": 0.3}, {"vector": 0.7, "fulltext": 0.3}):
        got = search(corpus_store, "gdpr workshop", fusion="weighted", weights=same)
        assert [h.label for h in got.hits] == [h.label for h in as_pair.hits]
    only_vector = search(corpus_store, "gdpr workshop", fusion="weighted", weights={"vector": 1})
    assert [h.label for h in only_vector.hits] == [
        h.label for h in search(corpus_store, "gdpr workshop", fusion="weighted",
                                weights=(1.0, 0.0)).hits]
    for bad in ({"vec": 1}, {}, {"vector": 0.5, "bm25": 0.2, "fulltext": 0.3}):
        with pytest.raises(enginelib.InvalidInputError, match="keys 'vector' and 'bm25'"):
            search(corpus_store, "gdpr workshop", fusion="weighted", weights=bad)
    with pytest.raises(enginelib.InvalidInputError, match="finite number within 0.0"):
        search(corpus_store, "gdpr workshop", fusion="weighted", weights={"vector": -1})

"""Pagination and totals that hold: every page is a slice of one ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.errors import InvalidInputError
from enginelib.search.paging import MAX_RESULT_WINDOW, check_window, deeper, stitch
from tests.helpers import doc, open_test_store, paragraphs

WORDS = ["pads", "rotor", "caliper", "fluid", "torque", "piston", "wear", "noise", "disc",
         "bleed", "hose", "sensor", "abs", "drum", "shoe", "spring"]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    """1,200 short documents, every one about brakes, each with its own mix of words."""
    path: Path = tmp_path_factory.mktemp("paging") / "s"
    store = enginelib.open(path, embedder=HashingEmbedder(32))
    docs = []
    for i in range(1200):
        picked = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5, 7))
        docs.append(doc(f"d{i:04d}", f"Brake note {i}: check the {picked} of the brake "
                                      f"system, item {i % 37}."))
    store.ingest_documents(docs, truth_level="L1")
    yield store
    store.close()


def _labels(response: enginelib.SearchResponse) -> list[int]:
    return [h.label for h in response.hits]


@pytest.mark.parametrize("strategy", ["hybrid", "fulltext", "vector"])
def test_twenty_pages_equal_one_deep_request(big_store: enginelib.Store, strategy: str) -> None:
    query = "brake rotor caliper noise"
    options = dict(strategy=strategy, answerability_threshold=None, log=False)
    deep = big_store.search(query, limit=200, **options)
    assert len(deep.hits) == 200
    pages: list[int] = []
    totals = set()
    for page in range(20):
        response = big_store.search(query, limit=10, offset=page * 10, **options)
        assert [h.rank for h in response.hits] == list(range(page * 10 + 1, page * 10 + 11))
        pages += _labels(response)
        totals.add((response.total >= (page + 1) * 10, response.total_is_lower_bound))
    assert pages == _labels(deep)
    assert len(set(pages)) == 200  # no hit twice
    assert all(enough for enough, _ in totals)


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
def test_fused_scores_never_rise_along_the_ranking(big_store: enginelib.Store, fusion: str) -> None:
    # Each rung of the depth ladder fuses its own candidates: RRF at depth 200 adds terms
    # depth 100 cut off, weighted fusion normalizes each depth anew. Rank 101 showed 0.0145
    # under rank 100's 0.0095 (weighted: 1.0 under 0.5), at every rung boundary.
    query = "brake rotor caliper noise"
    options = dict(strategy="hybrid", fusion=fusion, answerability_threshold=None, log=False)
    deep = big_store.search(query, limit=1000, **options)
    scores = [h.scores.fused for h in deep.hits]
    assert len(scores) == 1000
    assert all(a >= b for a, b in zip(scores, scores[1:])), [
        (rank, a, b) for rank, (a, b) in enumerate(zip(scores, scores[1:]), start=1) if b > a]
    assert all(h.scores.sibling <= h.scores.fused for h in deep.hits)
    # a page shows the scores the deep request shows at its ranks, across each boundary
    for offset in (95, 195, 395, 795):
        page = big_store.search(query, limit=10, offset=offset, **options)
        assert [h.label for h in page.hits] == [h.label for h in deep.hits[offset:offset + 10]]
        assert [h.scores.fused for h in page.hits] == scores[offset:offset + 10]


def test_a_deeper_rung_is_capped_at_the_lowest_score_above_it() -> None:
    import numpy as np

    from enginelib.search.paging import caps

    rungs = [np.array([0.9, 0.5, 0.7]), np.array([0.8, 0.4]), np.array([]), np.array([0.6])]
    assert caps(rungs) == [None, 0.5, 0.4, 0.4]
    assert caps([np.array([0.3])]) == [None]


def test_total_is_exact_once_every_candidate_is_ranked(big_store: enginelib.Store) -> None:
    # "item 5" documents: 1200 / 37 of them, all ranked by full text in one rung
    response = big_store.search('"item 5."', strategy="fulltext", limit=10, log=False,
                                answerability_threshold=None)
    assert not response.total_is_lower_bound
    labels = []
    for offset in range(0, response.total, 7):
        labels += _labels(big_store.search('"item 5."', strategy="fulltext", limit=7,
                                           offset=offset, log=False, answerability_threshold=None))
    assert len(labels) == len(set(labels)) == response.total == 33


def test_total_past_the_candidates_is_a_lower_bound(big_store: enginelib.Store) -> None:
    response = big_store.search("brake", strategy="fulltext", limit=10, log=False,
                                answerability_threshold=None)
    assert response.total_is_lower_bound and response.total == 100
    deeper = big_store.search("brake", strategy="fulltext", limit=10, offset=990, log=False,
                              answerability_threshold=None)
    assert [h.rank for h in deeper.hits] == list(range(991, 1001))
    assert deeper.total >= 1000
    last = big_store.search("brake", strategy="fulltext", limit=10, offset=1190, log=False,
                            answerability_threshold=None)
    assert len(last.hits) == 10 and last.total == 1200 and not last.total_is_lower_bound
    assert last.to_dict()["total_is_lower_bound"] is False


def test_paging_past_the_result_window_is_refused(big_store: enginelib.Store) -> None:
    with pytest.raises(InvalidInputError, match="offset"):
        big_store.search("brake", limit=10, offset=MAX_RESULT_WINDOW)


def test_depth_ladder_and_stitch() -> None:
    window = MAX_RESULT_WINDOW
    assert deeper(100, 100) == 200 and deeper(6400, 100) == window and deeper(window, 100) is None
    assert deeper(20_000, 20_000) is None  # a caller's own depth past the window is the top
    check_window(window)
    with pytest.raises(InvalidInputError):
        check_window(window + 1)
    # the deeper ranking reorders; ranks 1..2 keep the shallow order, the rest follow
    shallow, deep = ["a", "b", "c"], ["c", "d", "a", "e"]
    out = stitch([(shallow, False), (deep, True)], [2, 4], key=lambda x: x)
    assert out.items == ["a", "b", "c", "d", "e"] and not out.total_is_lower_bound
    out = stitch([(shallow, False), (deep, False)], [2, 4], key=lambda x: x)
    assert out.items == ["a", "b", "c", "d"] and out.total_is_lower_bound
    # a cap per group holds across blocks: one item per first letter of its group
    grouped = stitch([(["a1", "b1"], False), (["a2", "c1", "b2", "d1"], True)], [2, 4],
                     key=lambda x: x, caps=[(lambda x: x[0], 1)])
    assert grouped.items == ["a1", "b1", "c1", "d1"]


def test_chunks_per_doc_holds_across_deep_pages(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    store.ingest_documents(
        [doc(f"d{i:03d}", paragraphs(6, topic=f"brake {WORDS[i % len(WORDS)]}")) for i in range(120)],
        truth_level="L1",
    )
    options = dict(strategy="fulltext", chunks_per_doc=1, answerability_threshold=None, log=False)
    deep = store.search("brake pads rotor", limit=110, **options)
    pages: list[str] = []
    for offset in range(0, 110, 11):
        pages += [h.document_id for h in
                  store.search("brake pads rotor", limit=11, offset=offset, **options).hits]
    assert pages == [h.document_id for h in deep.hits]
    assert len(pages) == len(set(pages)) == 110  # one chunk per document, on every page
    store.close()


def test_min_score_pages_stay_one_ranking(big_store: enginelib.Store) -> None:
    options = dict(strategy="hybrid", answerability_threshold=None, log=False)
    top = big_store.search("brake rotor caliper noise", limit=30, **options)
    floor = top.hits[20].scores.fused
    whole = big_store.search("brake rotor caliper noise", limit=200, min_score=floor, **options)
    assert 21 <= len(whole.hits) < 200 and all(h.scores.fused >= floor for h in whole.hits)
    assert whole.total == len(whole.hits)
    pages: list[int] = []
    for offset in range(0, len(whole.hits), 8):
        pages += _labels(big_store.search("brake rotor caliper noise", limit=8, offset=offset,
                                          min_score=floor, **options))
    assert pages == _labels(whole)

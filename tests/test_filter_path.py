"""The filter stage's two paths: a filter keeping most chunks is applied after retrieval
(over-fetch, then a mask), a selective one inside the index; both give the same top k."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.search import retrieve
from enginelib.search.request import build_request
from tests.helpers import doc

WORDS = ["pads", "rotor", "caliper", "fluid", "torque", "piston", "wear", "noise", "disc",
         "bleed", "hose", "sensor", "abs", "drum", "shoe", "spring"]
L1_COUNT, L3_COUNT, L4_COUNT = 1898, 100, 2  # 2,000 chunks: L4 is 0.1 %, L3 5 %


def _text(i: int, extra: str = "") -> str:
    picked = " ".join(WORDS[(i * k + k) % len(WORDS)] for k in (1, 3, 5, 7))
    return f"Brake note {i}: check the {picked} of the brake system, item {i % 37}. {extra}"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    """2,000 one-chunk documents; ``exact_threshold=0`` so vectors go through the HNSW graph
    (the path whose filtering is in question), not the small-index exact scan."""
    path: Path = tmp_path_factory.mktemp("filters") / "s"
    store = enginelib.open(path, embedder=HashingEmbedder(32),
                           index_options={"vector": {"exact_threshold": 0}})
    # "zebra" is in every L3 note and in three L1 notes only
    store.ingest_documents([doc(f"a{i:04d}", _text(i, "zebra" if i < 3 else ""))
                            for i in range(L1_COUNT)], truth_level="L1")
    store.ingest_documents([doc(f"c{i:04d}", _text(i, "zebra zebra zebra crossing"))
                            for i in range(L3_COUNT)], truth_level="L3")
    store.ingest_documents([doc(f"d{i:04d}", _text(i)) for i in range(L4_COUNT)], truth_level="L4")
    yield store
    store.close()


def _labels(response: enginelib.SearchResponse) -> list[int]:
    return [h.label for h in response.hits]


def _levels(store: enginelib.Store, labels: list[int]) -> set[str]:
    view = store.view()
    return {view.record(int(p)).truth_level for p in view.positions(np.array(labels))}


@pytest.mark.parametrize(("levels", "post_filter"), [
    (["L4"], False), (["L3"], False), (["L1", "L2"], True), (["L1", "L3"], True),
])
def test_the_path_follows_the_kept_fraction(store: enginelib.Store, levels: list[str],
                                            post_filter: bool) -> None:
    request = build_request("brake", truth_levels=levels)
    allowed = retrieve.allowed_chunks(store.view(), request)
    assert allowed.post_filter is post_filter
    assert allowed.labels is not None and len(allowed.labels) == round(allowed.fraction * 2000)


def _exact_cosines(store: enginelib.Store, query: str, levels: list[str]) -> dict[int, float]:
    """Every allowed chunk's cosine to the query: the reference a filtered search must top."""
    view = store.view()
    qvec = store.query_embeddings.embed([query])[0]
    rows = np.flatnonzero(np.isin(view.truth_levels, levels))
    return dict(zip(view.labels[rows].tolist(), (view.vectors[rows] @ qvec).tolist(), strict=True))


@pytest.mark.parametrize("levels", [["L4"], ["L3"], ["L1", "L2"], ["L1", "L3"]])
def test_filtered_vector_search_returns_the_exact_top_k(store: enginelib.Store,
                                                        levels: list[str]) -> None:
    """At 0.1 %, 5 %, 95 % and 99.9 % of the chunks kept, the hits are the k allowed chunks
    of highest cosine (ties at the cut may fall either way: the hashing embedder makes many)."""
    for query in ("rotor caliper noise", "fluid bleed hose", "brake sensor abs item 5"):
        response = store.search(query, strategy="vector", truth_levels=levels, limit=10,
                                answerability_threshold=None, log=False, cache=False)
        cosines = _exact_cosines(store, query, levels)
        kth = sorted(cosines.values(), reverse=True)[min(10, len(cosines)) - 1]
        assert len(response.hits) == min(10, len(cosines))
        for hit in response.hits:
            assert hit.label in cosines
            assert cosines[hit.label] >= kth - 1e-5
            assert hit.scores.vector_score == pytest.approx(cosines[hit.label], abs=1e-5)


@pytest.mark.parametrize("strategy", ["fulltext", "hybrid"])
def test_post_filter_equals_the_in_index_filter(store: enginelib.Store, strategy: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    options = dict(strategy=strategy, limit=20, answerability_threshold=None, log=False,
                   cache=False, exact=True)
    queries = ("rotor caliper noise", "torque piston wear", "zebra brake")
    after = [_labels(store.search(q, **options)) for q in queries]
    monkeypatch.setattr(retrieve, "POST_FILTER_MIN_FRACTION", 1.01)  # always inside the index
    inside = [_labels(store.search(q, **options)) for q in queries]
    assert after == inside


def test_a_post_filter_that_leaves_too_few_asks_the_index(store: enginelib.Store) -> None:
    """'zebra' fills the unfiltered top with L3 notes; the default levels exclude them, so
    the over-fetch keeps too few and the search falls back to the filter inside the index."""
    response = store.search("zebra", strategy="fulltext", limit=10, candidates=10,
                            answerability_threshold=None, log=False, cache=False)
    assert sorted(h.document_id for h in response.hits) == ["a0000", "a0001", "a0002"]

"""Sibling evidence in hybrid RRF fusion (search/fusion.py ``sibling_evidence``): a chunk of a
document cut between provisions (at line breaks) gains a share of the fused score of the best
other candidate chunk of its document; prose cut by size never does (SciFact's abstracts)."""

from __future__ import annotations

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder, Store
from enginelib.search import fusion
from enginelib.types import LoadedDocument


def _naive(scores: list[float], groups: list[str], eligible: list[bool], weight: float) -> list[float]:
    out = []
    for i, (score, group) in enumerate(zip(scores, groups, strict=True)):
        others = [s for j, (s, g) in enumerate(zip(scores, groups, strict=True))
                  if g == group and j != i and eligible[j]]
        bonus = max(others) if others and eligible[i] else 0.0
        out.append(score + weight * bonus)
    return out


def test_each_eligible_chunk_gains_from_the_best_other_eligible_chunk_of_its_document() -> None:
    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 40):
        scores = rng.random(size)
        groups = rng.choice(np.array(["a", "b", "c", "d"], dtype=object), size).tolist()
        eligible = rng.random(size) < 0.7
        got = fusion.sibling_evidence(scores, groups, eligible, 0.1)
        assert got == pytest.approx(_naive(scores.tolist(), groups, eligible.tolist(), 0.1))
    # one sibling counts, however many there are, and a document's order is kept
    scores = np.array([0.03, 0.02, 0.02, 0.02, 0.025])
    got = fusion.sibling_evidence(scores, ["long"] * 4 + ["short"], np.ones(5, dtype=bool), 0.1)
    assert got[0] == pytest.approx(0.03 + 0.1 * 0.02)
    assert got[4] == pytest.approx(0.025)
    assert list(np.argsort(-got[:4], kind="stable")) == [0, 1, 2, 3]
    assert fusion.sibling_evidence(scores, ["a"] * 5, np.ones(5, dtype=bool), 0.0).tolist() \
        == scores.tolist()


PARAGRAPH = ("The controller shall keep a record of the processing activities under its "
             "responsibility, with the purposes of the processing and the categories of data "
             "subjects and of personal data, kept in writing and made available on request. ")
# An article laid out in numbered paragraphs, one per line: cut between them.
ARTICLE = "\n".join(f"{i}. {PARAGRAPH * 3}" for i in range(1, 6))
# The same words as prose with no line break: cut by size, its pieces are one passage.
ABSTRACT = " ".join(PARAGRAPH for _ in range(14))
DOCS = [
    ("article-30", "Article 30 — Records of processing activities", ARTICLE),
    ("abstract", "A study of records", ABSTRACT),
    ("recital-82", "Recital 82",
     "In order to demonstrate compliance, the controller should maintain records of "
     "processing activities under its responsibility."),
]
QUERY = "records of processing activities of the controller"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = enginelib.open(tmp_path_factory.mktemp("sib") / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([LoadedDocument(id=d, text=t, title=title, language="en")
                            for d, title, t in DOCS])
    return store


def _fused(store: Store, **options: object) -> dict[int, tuple[str, float]]:
    response = store.search(QUERY, answerability_threshold=None, limit=50, cache=False,
                            **options)
    return {h.label: (h.document_id, h.scores.fused) for h in response.hits}


def test_provisions_gain_from_their_best_sibling_and_prose_halves_do_not(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    article = store.show("article-30")["chunks"]
    abstract = store.show("abstract")["chunks"]
    assert len(article) > 1 and len(abstract) > 1
    assert all(c["content"].endswith("\n") for c in article[:-1])  # cut at line breaks
    assert not any(c["content"].endswith("\n") for c in abstract)  # cut by size
    weight = fusion.SIBLING_WEIGHT
    assert weight > 0
    with_siblings = _fused(store)
    monkeypatch.setattr(fusion, "SIBLING_WEIGHT", 0.0)
    plain = _fused(store)
    assert with_siblings.keys() == plain.keys()
    assert len(plain) == len(article) + len(abstract) + 1  # every chunk is a candidate
    for label, (document, score) in with_siblings.items():
        base = plain[label][1]
        if document == "article-30":
            best = max(s for other, (d, s) in plain.items() if d == document and other != label)
            assert score == pytest.approx(base + weight * best)
        else:  # prose cut by size, and a one-chunk document, keep their fused score
            assert score == base
    # the hit says how much of its fused score its sibling gave
    monkeypatch.undo()
    for hit in store.search(QUERY, answerability_threshold=None, limit=50, cache=False).hits:
        assert hit.scores.sibling == pytest.approx(hit.scores.fused - plain[hit.label][1])
        assert (hit.scores.sibling > 0) == (hit.document_id == "article-30")


def test_weighted_fusion_and_single_methods_keep_their_scores(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    for options in ({"fusion": "weighted"}, {"preset": "keyword"}, {"strategy": "fulltext"},
                    {"strategy": "vector"}):
        with_siblings = _fused(store, **options)
        monkeypatch.setattr(fusion, "SIBLING_WEIGHT", 0.0)
        assert _fused(store, **options) == with_siblings
        monkeypatch.undo()

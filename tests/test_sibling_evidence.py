"""Sibling evidence in hybrid fusion (search/fusion.py ``sibling_evidence``): a chunk gains a
share of the fused score of the best other chunk of its document among the candidates."""

from __future__ import annotations

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder, Store
from enginelib.search import fusion
from enginelib.types import LoadedDocument


def _naive(scores: list[float], groups: list[str], weight: float) -> list[float]:
    out = []
    for i, (score, group) in enumerate(zip(scores, groups, strict=True)):
        others = [s for j, (s, g) in enumerate(zip(scores, groups, strict=True))
                  if g == group and j != i]
        out.append(score + weight * (max(others) if others else 0.0))
    return out


def test_each_chunk_gains_from_the_best_other_chunk_of_its_document() -> None:
    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 40):
        scores = rng.random(size)
        groups = rng.choice(np.array(["a", "b", "c", "d"], dtype=object), size)
        got = fusion.sibling_evidence(scores, groups, 0.1)
        assert got == pytest.approx(_naive(scores.tolist(), groups.tolist(), 0.1))
    # a document's order is kept, and one sibling counts, however many there are
    got = fusion.sibling_evidence(np.array([0.03, 0.02, 0.02, 0.02, 0.025]),
                                  np.array(["long"] * 4 + ["short"], dtype=object), 0.1)
    assert got[0] == pytest.approx(0.03 + 0.1 * 0.02)
    assert got[4] == pytest.approx(0.025)
    assert list(np.argsort(-got[:4], kind="stable")) == [0, 1, 2, 3]
    assert fusion.sibling_evidence(np.array([0.5, 0.4]), np.array(["a", "a"]), 0.0).tolist() == [0.5, 0.4]


ARTICLE = "\n".join(
    f"{i}. The controller shall keep a record of the processing activities under its "
    "responsibility, with the purposes of the processing and the categories of data. " * 3
    for i in range(1, 5)
)
DOCS = [
    ("article-30", "Article 30 — Records of processing activities", ARTICLE),
    ("recital-82", "Recital 82",
     "In order to demonstrate compliance, the controller should maintain records of "
     "processing activities under its responsibility."),
    ("recital-13", "Recital 13", "Micro, small and medium-sized enterprises are exempted."),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = enginelib.open(tmp_path_factory.mktemp("sib") / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([LoadedDocument(id=d, text=t, title=title, language="en")
                            for d, title, t in DOCS])
    return store


def test_hybrid_scores_add_the_best_sibling(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = store.show("article-30")["chunks"]
    assert len(chunks) > 1  # paragraph-sized chunks: the article has several
    query = "records of processing activities of the controller"
    options = {"strategy": "hybrid", "answerability_threshold": None, "limit": 20,
               "cache": False}
    weight = fusion.SIBLING_WEIGHT
    assert weight > 0
    with_siblings = store.search(query, **options)
    monkeypatch.setattr(fusion, "SIBLING_WEIGHT", 0.0)
    plain = store.search(query, **options)
    base = {h.label: h.scores.fused for h in plain.hits}
    assert len(base) == sum(len(store.show(d)["chunks"]) for d, _, _ in DOCS)  # all candidates
    documents = {h.label: h.document_id for h in plain.hits}
    for hit in with_siblings.hits:
        others = [s for label, s in base.items()
                  if documents[label] == hit.document_id and label != hit.label]
        expected = base[hit.label] + weight * (max(others) if others else 0.0)
        assert hit.scores.fused == pytest.approx(expected)
    # the article's best chunk now leads by its second one's share
    assert with_siblings.hits[0].document_id == plain.hits[0].document_id


def test_a_single_method_keeps_its_own_scores(store: Store) -> None:
    query = "records of processing activities"
    response = store.search(query, strategy="fulltext", answerability_threshold=None, limit=20,
                            cache=False)
    text = store.text_index.search([query], 20)[0]
    assert [h.label for h in response.hits] == [label for label, _ in text]
    assert [h.scores.fused for h in response.hits] == pytest.approx([s for _, s in text])

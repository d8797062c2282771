"""A caller's own embedder that misbehaves: what it returns is checked once, on the one
embedding path, before anything is committed or searched.

The misbehaving embedders wrap the deterministic hashing one at the Protocol seam; the store,
DuckDB, hnswlib and Tantivy are real.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import enginelib
from enginelib.embedders import HashingEmbedder
from enginelib.errors import EmbeddingError
from tests.helpers import doc

DIM = 32


class Bent:
    """The hashing embedder's vectors passed through ``bend`` (texts and vectors in)."""

    def __init__(self, bend: Callable[[list[str], np.ndarray], Any], name: str = "bent-32") -> None:
        self.name, self.dim = name, DIM
        self._bend = bend
        self._base = HashingEmbedder(DIM)

    def embed(self, texts: Sequence[str]) -> Any:
        texts = list(texts)
        return self._bend(texts, self._base.embed(texts))


def _zero_where(word: str) -> Callable[[list[str], np.ndarray], np.ndarray]:
    def bend(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        vectors[[word in t for t in texts]] = 0.0  # a bag-of-words model's unknown text
        return vectors
    return bend


def test_an_all_zero_passage_vector_is_refused_before_the_commit(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with enginelib.open(path, embedder=Bent(_zero_where("zzz"))) as store:
        store.ingest_documents([doc("pads", "brake pads wear out")])
        # It was committed, then refused by the vector index at every later search and open,
        # full-text ones included: the store could no longer be used at all.
        with pytest.raises(EmbeddingError, match=r"all-zero vector for 1 of 1 text.*'zzz oil"):
            store.ingest_documents([doc("oil", "zzz oil filter change")])
        assert store.search("brake", strategy="fulltext").hits[0].document_id == "pads"
    with enginelib.open(path, embedder=Bent(_zero_where("zzz"))) as store:
        assert store.list_documents() and [d["document_id"] for d in store.list_documents()] == ["pads"]
        hits = store.search("brake pads", strategy="hybrid", answerability_threshold=None).hits
        assert [h.document_id for h in hits] == ["pads"]
        with pytest.raises(EmbeddingError, match=r"query embedding has an all-zero vector"):
            store.search("zzz brake", strategy="vector")


def test_vectors_not_of_unit_length_are_searched_by_cosine(tmp_path: Path) -> None:
    def scaled(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        return vectors * np.array([[1000.0 * (i + 1)] for i in range(len(texts))])

    docs = [doc("pads", "brake pads wear out"), doc("oil", "oil filter change interval")]
    found = {}
    for name, model in (("unit", HashingEmbedder(DIM, name="unit-32")),
                        ("scaled", Bent(scaled, name="scaled-32"))):
        with enginelib.open(tmp_path / name, embedder=model) as store:
            store.ingest_documents(docs)
            result = store.search("brake pads", strategy="vector", answerability_threshold=None)
            found[name] = ([(h.document_id, round(h.scores.similarity or 0.0, 4))
                            for h in result.hits], result.context.confidence)
    # The query's vector kept its length: similarity 447.2 and a confidence of 1.0.
    assert found["scaled"] == found["unit"]
    assert 0.0 < found["scaled"][0][0][1] <= 1.0


@pytest.mark.parametrize("bend, kind", [
    (lambda texts, vectors: "0.1 0.2", "text"),
    (lambda texts, vectors: {"vectors": vectors}, "not numbers"),
    (lambda texts, vectors: (list(row) for row in vectors), "not numbers"),
    (lambda texts, vectors: vectors.astype(str), "text"),
    (lambda texts, vectors: vectors.astype(complex), "complex numbers"),
])
def test_output_that_is_not_real_numbers_is_an_embedding_error(
    tmp_path: Path, bend: Callable[[list[str], np.ndarray], Any], kind: str
) -> None:
    # A str was numpy's bare ValueError, a dict or generator a bare TypeError (neither naming
    # the embedder), text digits were parsed and a complex array lost its imaginary part.
    with enginelib.open(tmp_path / "s", embedder=Bent(bend)) as store:
        with pytest.raises(EmbeddingError, match=rf"embedder output must be real.*{kind}"):
            store.ingest_documents([doc("pads", "brake pads wear out")])
        assert store.list_documents() == []

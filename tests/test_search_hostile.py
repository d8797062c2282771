"""A hostile caller of the search surface: odd query vectors, rewriter hooks and values
whose edges the request checks do not reach."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import enginelib
from tests.helpers import doc, open_test_store, paragraphs

NO_GATE = {"answerability_threshold": None}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[enginelib.Store]:
    with open_test_store(tmp_path_factory.mktemp("hostile") / "s") as opened:
        opened.ingest_documents([doc(f"d{i}", paragraphs(3, topic), title=topic)
                                 for i, topic in enumerate(["brakes", "gdpr", "tyres"])])
        yield opened


def _labels(response: enginelib.SearchResponse) -> list[int]:
    return [hit.label for hit in response.hits]


@pytest.mark.parametrize("scale", [1e20, 3e37, 1e-25, 1e-40])
@pytest.mark.parametrize("strategy", ["vector", "hybrid"])
def test_a_query_vector_of_any_finite_scale_searches_its_direction(
        store: enginelib.Store, scale: float, strategy: str) -> None:
    # Normalized in float32, the squares of components past ~2e18 overflowed (inf: the
    # vector became zeros, refused as "an all-zero vector; cosine is undefined" with numpy's
    # overflow warning, an error where warnings are) and those under ~1e-23 underflowed to
    # 0 (refused as "all zeros"). Cosine does not depend on the scale.
    direction = store.query_embeddings.embed(["brake pads"])[0].astype(np.float64)
    query = "" if strategy == "vector" else "brake pads"
    expected = store.search(query, query_vector=direction, strategy=strategy, **NO_GATE)
    scaled = store.search(query, query_vector=direction * scale, strategy=strategy, **NO_GATE)
    assert _labels(scaled) == _labels(expected) != []

"""A hostile caller of the search surface: odd query vectors, rewriter hooks and values
whose edges the request checks do not reach."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main
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


NOT_REAL = [
    (["0.5"] * 64, "text"),
    (np.array(["2024-01-01"] * 64, dtype="datetime64[D]"), "dates"),
    (np.ones(64, dtype=np.complex64), "complex numbers"),
    ([True] * 64, "booleans"),
    ([None] * 64, "values that are not numbers"),
]


@pytest.mark.parametrize(("vector", "what"), NOT_REAL, ids=[what for _, what in NOT_REAL])
def test_a_query_vector_of_what_is_not_real_numbers_is_refused(
        store: enginelib.Store, vector: object, what: str) -> None:
    # numpy converted each to float32 and the search ran: text "0.5" parsed, a date as its
    # day count, a complex number without its imaginary part (and a ComplexWarning), True as 1
    with pytest.raises(enginelib.InvalidVectorError, match=f"real numbers.*got {what}"):
        store.search("", query_vector=vector, strategy="vector", **NO_GATE)
    with pytest.raises(enginelib.InvalidVectorError, match=f"got {what}"):
        store.search_batch(["brake pads"], query_vectors=[vector], **NO_GATE)


@pytest.mark.parametrize("shape", [(8, 8), (64, 1), (2, 64)])
def test_a_matrix_given_as_query_vector_is_refused(store: enginelib.Store,
                                                   shape: tuple[int, int]) -> None:
    # search() flattened any array into one row: an (8, 8) matrix searched as 64 numbers
    with pytest.raises(enginelib.InvalidVectorError, match="query_vector is one vector"):
        store.search("", query_vector=np.ones(shape), strategy="vector", **NO_GATE)


@pytest.fixture(scope="module")
def store_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile-cli") / "s"
    with open_test_store(path) as made:
        made.ingest_documents([doc("d0", paragraphs(3))])
    return path


@pytest.mark.parametrize(("content", "says"), [
    ("[" + ", ".join(["1" + "0" * 400] * 64) + "]", "beyond float32's range"),
    ("[" + ", ".join(['"0.5"'] * 64) + "]", "real numbers (floats or integers), got text"),
    ("[" + ", ".join(["true"] * 64) + "]", "got booleans"),
    ("[" + ", ".join(["1e39"] * 64) + "]", "beyond float32's range"),
])
def test_a_vector_file_of_what_is_not_float32_numbers_is_refused(
        store_folder: Path, tmp_path: Path, content: str, says: str) -> None:
    # An integer past float's range stopped the command with "unexpected OverflowError ...
    # (this is a bug in enginelib ...)"; JSON text and true were searched as numbers; 1e39
    # printed numpy's "overflow encountered in cast" before the error.
    vector_file = tmp_path / "q.json"
    vector_file.write_text(content, encoding="utf-8")
    result = CliRunner(env={"ENGINELIB_EMBEDDER": "hashing-64"}).invoke(main, [
        "search", "--vector-file", str(vector_file), "--strategy", "vector", "--no-gate",
        "--store", str(store_folder)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: ") and says in result.output, result.output
    assert "unexpected" not in result.output and "Warning" not in result.output


@pytest.mark.parametrize(("sub_query", "says"), [
    ("brake\x00pads", "NUL character"), ("brake\ud800pads", "lone surrogate"),
])
def test_a_rewriter_sub_query_the_query_itself_may_not_hold_is_a_rewriter_error(
        store: enginelib.Store, sub_query: str, says: str) -> None:
    # The query is refused with a NUL or a lone surrogate; a hook's sub-query was searched
    # with them, and a lone surrogate reached the model's tokenizer (tokenizers raises a
    # bare TypeError on it; the hashing embedder let the search answer).
    def rewriter(question: str) -> list[str]:
        return [sub_query]

    with pytest.raises(enginelib.RewriterError, match=f"'rewriter' returned a sub-query .*{says}"):
        store.search("brake pads", rewriter=rewriter, cache=False, **NO_GATE)


@pytest.mark.parametrize("gate", [{}, NO_GATE], ids=["gate on", "gate off"])
def test_a_search_that_ranks_nothing_says_so_gate_on_or_off(store: enginelib.Store,
                                                            gate: dict[str, object]) -> None:
    # With the gate off, a query no chunk matched was refused as "offset 0 is past the last
    # result (total 0)", a page nobody asked for; with it on or off, a min_score that dropped
    # every match was "no chunk matched the query", which sends one to reword the query.
    unmatched = store.search("zzqqxx", strategy="fulltext", **gate)
    assert (unmatched.status, unmatched.reason) == (
        enginelib.NO_RELEVANT_SOURCES, "no chunk matched the query")
    cut = store.search("brake pads", min_score=0.99, **gate)
    assert cut.status == enginelib.NO_RELEVANT_SOURCES
    assert cut.reason.startswith("no chunk matched the query with a fused score of at least "
                                 "min_score 0.99")
    assert store.search("brake pads", **NO_GATE).hits  # the same query matches without it
    past = store.search("brake pads", offset=500, **gate)
    assert past.reason.startswith("offset 500 is past the last result (total ")

"""Filter values a caller writes the way they stored them: each must find its documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import enginelib
from enginelib.memory_store import open_memory
from enginelib.testing import test_embedder

EVERY_LEVEL = ["L1", "L2", "L3", "L4"]
# What each document stores under metadata.x (documents d0, d1, ...).
STORED: list[Any] = [1e20, 1e-07, 1.5e300, 1e16, 5, 5.0, "5", 2**64 + 1, 10**20, 10**400]


@pytest.fixture(scope="module")
def store() -> Iterator[enginelib.Store]:
    records = [{"id": f"d{i}", "text": f"brake pads note {i}", "metadata": {"x": value}}
               for i, value in enumerate(STORED)]
    opened = open_memory(records=records, embedder=test_embedder())
    yield opened
    opened.close()


def _stored_values(store: enginelib.Store, value: Any) -> list[Any]:
    response = store.search("brake pads", filters={"metadata.x": value}, limit=50,
                            truth_levels=EVERY_LEVEL, answerability_threshold=None)
    return sorted((STORED[int(hit.document_id[1:])] for hit in response.hits), key=repr)


@pytest.mark.parametrize(("value", "expected"), [
    # str(1e20) is "1e+20" where the catalog writes "100000000000000000000.0": the filter
    # with the very float a document was ingested with matched nothing
    (1e20, [1e20, 10**20]),
    (1e-07, [1e-07]),
    (1.5e300, [1.5e300]),
    (1e16, [1e16]),
    # a number meets a stored number of the same value, as in Python and in jsonb
    (5, [5, 5.0, "5"]),
    (5.0, [5, 5.0]),
    ("5", [5, "5"]),  # compared as text, as documented
    (10**20, [1e20, 10**20]),
    # integers past a double's precision stay exact: 2**64 is not 2**64 + 1
    (2**64, []),
    (2**64 + 1, [2**64 + 1]),
    # an int past a double's range: a bare OverflowError from math.isfinite, not a search
    pytest.param(10**400, [10**400], id="10**400"),
    pytest.param([5, -(10**400)], [5, 5.0, "5"], id="5-or-minus-10**400"),
])
def test_a_number_filter_finds_the_documents_stored_with_that_number(
        store: enginelib.Store, value: Any, expected: list[Any]) -> None:
    assert _stored_values(store, value) == sorted(expected, key=repr)


def test_a_truth_level_filter_outside_the_levels_searched_says_how_to_widen_them() -> None:
    # filters={"truth_level": "L3"} under the default L1 + L2 can match nothing; the refusal
    # said "no chunk matches the truth levels and filters", not why nor what to pass
    records = [{"id": "l3", "text": "brake pads worn", "metadata": {"truth_level": "L3"}},
               {"id": "l1", "text": "brake pads new", "metadata": {"truth_level": "L1"}}]
    with open_memory(records=records, embedder=test_embedder()) as store:
        refused = store.search("brake pads", filters={"truth_level": "L3"},
                               answerability_threshold=None)
        assert not refused.ok and refused.hits == ()
        assert "(L1, L2, the default)" in refused.reason
        assert "truth_levels=['L3']" in refused.reason and "--truth-level L3" in refused.reason
        chosen = store.search("brake pads", filters={"truth_level": ["l3", "L4"]},
                              truth_levels=["L1"], answerability_threshold=None)
        assert "truth_level L3, L4 lies outside the truth levels searched (L1)," in chosen.reason
        widened = store.search("brake pads", filters={"truth_level": "L3"}, truth_levels=["L3"],
                               answerability_threshold=None)
        assert [hit.document_id for hit in widened.hits] == ["l3"]
        # levels that meet, but no document: the general reason, which is true
        empty = store.search("brake pads", filters={"truth_level": "L2"},
                             answerability_threshold=None)
        assert empty.reason == "no chunk matches the truth levels and filters"


@pytest.mark.parametrize("bound", ["20240630", "2024-W26-7", "2024-06-30\n"])
def test_a_date_bound_outside_iso_extended_form_is_refused_as_the_server_refuses_it(
        bound: str) -> None:
    # Python reads "20240630" and "2024-W26-7" too, but not as a date alone: "lte 20240630"
    # ended at midnight and dropped the documents of June 30, which "lte 2024-06-30" keeps;
    # the exported hybrid_search refused the bound (check_filters)
    records = [{"id": "a", "text": "brake pads", "metadata": {"created_at": "2024-06-30T12:00:00"}}]
    with open_memory(records=records, embedder=test_embedder()) as store:
        kept = store.search("brake pads", filters={"created_at": {"lte": "2024-06-30"}},
                            answerability_threshold=None)
        assert [hit.document_id for hit in kept.hits] == ["a"]
        with pytest.raises(enginelib.InvalidFilterError, match="such as 2024-06-30 or"):
            store.search("brake pads", filters={"created_at": {"lte": bound}})

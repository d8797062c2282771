"""Equal BM25 scores break on the smaller label whichever way tantivy holds the documents:
through tantivy's own top k when the saved index is in label order, through fetching the
whole tie at the cut otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from enginelib.indexes import tantivy_text
from enginelib.indexes.base import TextDocument
from enginelib.indexes.tantivy_text import STAMP, TantivyTextIndex

# 300 identical documents: one tie group far larger than k.
TIED = 300


def _fill(index: TantivyTextIndex, labels: list[int]) -> None:
    index.add([TextDocument(label, "alpha beta") for label in labels])
    index.add([TextDocument(10_000 + i, "alpha beta alpha") for i in range(3)])  # above the tie


@pytest.mark.parametrize("order", ["ascending", "descending", "shuffled"])
def test_ties_at_the_cut_keep_the_smallest_labels(tmp_path: Path, order: str) -> None:
    labels = list(range(TIED))
    if order == "descending":
        labels.reverse()
    elif order == "shuffled":
        labels = labels[1::2] + labels[::2]
    index = TantivyTextIndex(tmp_path)
    _fill(index, labels)
    expected = [10_000, 10_001, 10_002, *range(7)]
    (before,) = index.search(["alpha"], 10)  # committed, not yet saved: the order is unknown
    assert [label for label, _ in before] == expected
    index.save(1)
    stamp = json.loads((tmp_path / STAMP).read_text())
    assert stamp["label_order"] is (order == "ascending")
    reopened = TantivyTextIndex(tmp_path, read_only=True)
    assert reopened._label_order is (order == "ascending")
    for searched in (index, reopened):
        (got,) = searched.search(["alpha"], 10)
        assert [label for label, _ in got] == expected
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


def test_a_replaced_document_out_of_label_order_is_noticed(tmp_path: Path) -> None:
    index = TantivyTextIndex(tmp_path)
    _fill(index, list(range(TIED)))
    index.save(1)
    assert index._label_order
    index.add([TextDocument(2, "alpha beta")])  # re-added: now the newest address, label 2
    index.save(2)
    assert not index._label_order
    (got,) = index.search(["alpha"], 10)
    assert [label for label, _ in got] == [10_000, 10_001, 10_002, *range(7)]


def test_past_the_check_limit_ties_take_the_exact_path(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tantivy_text, "LABEL_ORDER_CHECK_MAX", 10)
    index = TantivyTextIndex(tmp_path)
    _fill(index, list(range(TIED)))
    index.save(1)
    assert not index._label_order
    (got,) = index.search(["alpha"], 10)
    assert [label for label, _ in got] == [10_000, 10_001, 10_002, *range(7)]

"""Pruned BM25 (indexes/tantivy_prune.py) returns exactly what the full query returns:
same labels, same scores, same order, ties at the cut on the smaller label; and only plain
word queries take it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from enginelib.indexes import tantivy_prune
from enginelib.indexes.base import TextDocument
from enginelib.indexes.tantivy_text import TantivyTextIndex

WORDS = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(5000)]


def _corpus(n: int, seed: int) -> list[str]:
    """Zipf-distributed words (a few in nearly every document, most rare) and equal
    lengths: long posting lists and many equal scores, the case pruning must get right."""
    rng = np.random.default_rng(seed)
    ranks = (rng.zipf(1.3, (n, 30)) - 1) % len(WORDS)
    return [" ".join(WORDS[r] for r in row) for row in ranks]


def _queries(texts: list[str], count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(texts), count, replace=False)
    return [" ".join(texts[i].split()[::7][:4]) for i in picks]


class _Counting:
    """Wraps tantivy_prune.top_k to count the searches it answered."""

    def __init__(self) -> None:
        self.answered = 0
        self._real = tantivy_prune.top_k

    def __call__(self, *args: object, **kwargs: object) -> tantivy_prune.Hits | None:
        hits = self._real(*args, **kwargs)  # type: ignore[arg-type]
        self.answered += hits is not None
        return hits


def _full(index: TantivyTextIndex, queries: list[str], k: int,
          monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[int, float]]]:
    with monkeypatch.context() as patch:
        patch.setattr(tantivy_prune, "MIN_POSTINGS", 10**12)  # never prune
        return [index.search([q], k)[0] for q in queries]


@pytest.mark.parametrize("order", ["ascending", "shuffled"])
def test_pruned_top_k_is_the_full_query_top_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              order: str) -> None:
    texts = _corpus(3000, seed=1)
    labels = list(range(len(texts)))
    if order == "shuffled":
        np.random.default_rng(2).shuffle(labels)
    index = TantivyTextIndex(tmp_path)
    for start in range(0, len(labels), 500):  # several segments
        index.add([TextDocument(label, texts[label]) for label in labels[start:start + 500]])
        index.save(start)
    index.delete(range(0, 3000, 11))  # deleted slots still count in tantivy's BM25 N
    index.save(10_000)
    queries = _queries(texts, 120, seed=3)
    counting = _Counting()
    monkeypatch.setattr(tantivy_prune, "top_k", counting)
    monkeypatch.setattr(tantivy_prune, "MIN_POSTINGS", 0)
    for k in (10, 50):
        want = _full(index, queries, k, monkeypatch)
        got = [index.search([q], k)[0] for q in queries]
        assert got == want
    assert counting.answered >= 60, "the pruned path should answer most of these queries"
    reopened = TantivyTextIndex(tmp_path, read_only=True)
    assert [reopened.search([q], 10)[0] for q in queries] == _full(index, queries, 10, monkeypatch)


def test_ties_at_the_cut_keep_the_smallest_labels(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tantivy_prune, "MIN_POSTINGS", 0)
    counting = _Counting()
    monkeypatch.setattr(tantivy_prune, "top_k", counting)
    index = TantivyTextIndex(tmp_path)
    filler = [TextDocument(10_000 + i, "common words only here") for i in range(5000)]
    tied = [TextDocument(label, "rare common words") for label in range(300, 0, -1)]
    index.add(filler + tied)
    index.save(1)
    (got,) = index.search(["rare common"], 10)
    assert [label for label, _ in got] == list(range(1, 11))
    assert counting.answered == 1


@pytest.mark.parametrize("query", ['"alpha beta"', "+alpha beta", "alpha -beta"])
def test_queries_with_syntax_are_not_plain(tmp_path: Path, query: str) -> None:
    index = TantivyTextIndex(tmp_path)
    index.add([TextDocument(1, "alpha beta alphabet")])
    parsed = index._parse(query, False, True)
    clauses = tantivy_prune.plain_clauses(parsed, index._field_names)
    assert clauses is None


def test_plain_clauses_name_every_field_and_boost(tmp_path: Path) -> None:
    index = TantivyTextIndex(tmp_path)
    index.add([TextDocument(1, "running JWT_token")])
    plain = tantivy_prune.plain_clauses(index._parse("running JWT_token", False, True),
                                        index._field_names)
    assert plain is not None
    assert all(c.boost == 1.0 for c in plain)
    assert {(c.field, c.token) for c in plain} == {
        ("text_en", "run"), ("text_fr", "running"), ("text_plain", "running"),
        ("text_en", "jwt"), ("text_fr", "jwt"), ("text_plain", "jwt"),
        ("text_en", "token"), ("text_fr", "token"), ("text_plain", "token"),
        ("codes", "jwt_token"),
    }
    titled = tantivy_prune.plain_clauses(index._parse("title:running", False, True),
                                         index._field_names)
    assert titled is not None
    assert {(c.field, c.boost) for c in titled} == {("title_en", 1.5), ("title_fr", 1.5),
                                                    ("title_plain", 1.5)}


def test_bm25_document_count_counts_deleted_slots(tmp_path: Path) -> None:
    index = TantivyTextIndex(tmp_path)
    index.add([TextDocument(label, f"alpha w{label}") for label in range(100)])
    index.save(1)
    index.delete(range(10))  # deleted, not yet merged away: still in BM25's N
    index.save(2)
    searcher = index._index.searcher()
    query = index._parse("alpha", False, True)
    (hit,) = searcher.search(query, limit=1, count=False).hits
    assert int(searcher.num_docs) == 90
    assert tantivy_prune._bm25_docs(searcher, query, hit[1]) == 101  # 100 slots, rounded up

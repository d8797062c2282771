"""The text index's per-query caches (parsed queries, translations, typo corrections):
least recently used dropped one at a time, and nothing kept across a vocabulary change."""

from __future__ import annotations

from pathlib import Path

import pytest

from enginelib.indexes import tantivy_text
from enginelib.indexes.base import TextDocument
from enginelib.indexes.lru import Lru
from enginelib.indexes.tantivy_text import TantivyTextIndex


def test_lru_drops_the_least_recently_used_entry_only() -> None:
    cache: Lru[str, int] = Lru(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and "a" in cache and "c" in cache
    assert len(cache) == 2
    assert cache.get("b") is None
    cache.clear()
    assert len(cache) == 0
    with pytest.raises(ValueError):
        Lru(0)


def test_a_weighed_lru_keeps_its_total_weight_under_the_size() -> None:
    cache: Lru[str, str] = Lru(10, weigh=len)
    cache.put("a", "xxxx")
    cache.put("b", "xxxx")
    assert cache.weight == 8
    cache.put("c", "xxxx")  # 12 > 10: the oldest goes
    assert "a" not in cache and cache.weight == 8
    cache.put("b", "x")  # replaced, not counted twice
    assert cache.weight == 5 and cache.get("b") == "x"
    cache.put("d", "x" * 11)  # heavier than the whole cache: not kept, nothing dropped
    assert "d" not in cache and len(cache) == 2
    cache.clear()
    assert cache.weight == 0


def test_a_repeated_query_stays_parsed_past_the_cache_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tantivy_text, "QUERY_CACHE_SIZE", 8)
    index = TantivyTextIndex(tmp_path)
    index.add([TextDocument(i, f"alpha word{i}") for i in range(20)])
    index.save(1)
    parsed: list[str] = []
    real_parse = index._parse

    def counting_parse(text: str, lenient: bool, correct: bool = True) -> object:
        parsed.append(text)
        return real_parse(text, lenient, correct)

    monkeypatch.setattr(index, "_parse", counting_parse)
    first = index.search(["alpha word3"], 5)
    for i in range(20):  # more distinct queries than the cache holds, one of them asked often
        index.search([f"word{i}"], 5)
        assert index.search(["alpha word3"], 5) == first
    # an emptied cache would parse it again after every 8 new queries
    assert parsed.count("alpha word3") == 1
    assert len(index._parsed) == 8


def test_a_correction_is_not_kept_once_the_word_is_indexed(tmp_path: Path) -> None:
    index = TantivyTextIndex(tmp_path)
    index.add([TextDocument(1, "the regulation on data protection")])
    index.save(1)
    # "regulatoin" is not in the vocabulary: it is searched as "regulation"
    assert [label for label, _ in index.search(["regulatoin"], 5)[0]] == [1]
    assert index.corrections("regulatoin") == {"regulatoin": "regulation"}
    index.add([TextDocument(2, "regulatoin misspelt on purpose")])
    index.save(2)
    # the new vocabulary holds the word as typed: no correction, the new document found
    assert index.corrections("regulatoin") == {}
    assert [label for label, _ in index.search(["regulatoin"], 5)[0]] == [2]

"""The response cache: hits counted, invalidated by any commit (this process or another),
bounded in entries and bytes; and the query-vector cache's counters in stats."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from enginelib import HashingEmbedder, InvalidInputError, LoadedDocument
from enginelib.cli.main import main
from enginelib.search.cache import ResponseCache, estimate_bytes
from enginelib.testing import enginelib_store_factory  # noqa: F401
from tests.helpers import open_test_store

ROOT = Path(__file__).resolve().parents[1]
RECORDS = [
    {"id": "pads", "text": "Replace the brake pads when they are thinner than 3 mm.", "tags": ["brakes"]},
    {"id": "fluid", "text": "Brake fluid absorbs water: change it every two years.", "tags": ["brakes"]},
    {"id": "gdpr", "text": "Personal data shall be processed lawfully and fairly."},
]
NO_GATE = {"answerability_threshold": None}


def _cache(store) -> dict[str, int]:
    return {k.removeprefix("response_cache_"): v for k, v in store.stats().items()
            if k.startswith("response_cache_")}


def test_repeated_query_is_answered_from_cache(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    first = store.search("brake pads", **NO_GATE)
    second = store.search("brake pads", **NO_GATE)
    assert second.hits == first.hits
    assert second.timings["cached"] == 1.0 and "cached" not in first.timings
    assert _cache(store)["hits"] == 1 and _cache(store)["misses"] == 1
    # The cached answer still goes to the query log: it is a question a user asked.
    assert [q["query_text"] for q in store.logged_queries()] == ["brake pads", "brake pads"]


def test_a_commit_in_between_invalidates(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    before = store.search("brake pads", **NO_GATE)
    store.ingest_documents([LoadedDocument(id="new", text="brake pads brake pads brake pads")])
    after = store.search("brake pads", **NO_GATE)
    assert "cached" not in after.timings
    assert after.hits[0].document_id == "new" != before.hits[0].document_id
    assert _cache(store)["invalidations"] == 1
    store.delete_document("new")
    assert store.search("brake pads", **NO_GATE).hits == before.hits
    assert _cache(store)["hits"] == 0


@pytest.mark.slow  # a second Python process
def test_a_commit_by_another_process_invalidates(tmp_path):
    path = tmp_path / "store"
    with open_test_store(path) as writer:
        writer.ingest_documents([LoadedDocument(id="a", text="the caliper piston seal")])
    from enginelib import open as open_store

    reader = open_store(path, embedder=HashingEmbedder(64), read_only=True)
    try:
        assert [h.document_id for h in reader.search("caliper piston", **NO_GATE).hits] == ["a"]
        reader.search("caliper piston", **NO_GATE)
        # (the cache's own counters: stats() would hold the catalog file open meanwhile)
        assert reader.response_cache.stats()["hits"] == 1
        script = textwrap.dedent(f"""
            from enginelib import HashingEmbedder, LoadedDocument
            from tests.helpers import open_test_store
            with open_test_store({str(path)!r}) as store:
                store.ingest_documents([LoadedDocument(id="b", text="caliper piston caliper piston")])
        """)
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=300)
        again = reader.search("caliper piston", **NO_GATE)
        assert "cached" not in again.timings
        assert [h.document_id for h in again.hits] == ["b", "a"]
        assert reader.response_cache.stats()["invalidations"] == 1
    finally:
        reader.close()


def test_requests_that_differ_are_not_confused(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    plain = store.search("brake", **NO_GATE)
    tagged = store.search("brake", filters={"tags": ["brakes"]}, **NO_GATE)
    limited = store.search("brake", limit=1, **NO_GATE)
    fulltext = store.search("brake", strategy="fulltext")
    assert _cache(store)["hits"] == 0 and _cache(store)["entries"] == 4
    assert len(limited.hits) == 1 and fulltext.strategy_used == "fulltext"
    assert {h.document_id for h in tagged.hits} <= {"pads", "fluid"}
    assert store.search("brake", **NO_GATE).hits == plain.hits
    assert _cache(store)["hits"] == 1


def test_given_query_vectors_are_part_of_the_key(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    pads = store.embedder.embed(["brake pads thinner"])[0]
    gdpr = store.embedder.embed(["personal data lawfully"])[0]
    a = store.search("q", strategy="vector", query_vector=pads, **NO_GATE)
    b = store.search("q", strategy="vector", query_vector=gdpr, **NO_GATE)
    assert a.hits[0].document_id == "pads" and b.hits[0].document_id == "gdpr"
    again = store.search("q", strategy="vector", query_vector=pads.copy(), **NO_GATE)
    assert again.timings["cached"] == 1.0 and again.hits == a.hits


def test_opting_out_and_rerankers_are_not_cached(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    store.search("brake", cache=False, **NO_GATE)
    store.search("brake", cache=False, **NO_GATE)
    calls = []

    def reranker(query, passages):
        calls.append(query)
        return [float(len(p)) for p in passages]

    store.search("brake", reranker=reranker, **NO_GATE)
    store.search("brake", reranker=reranker, **NO_GATE)
    assert len(calls) == 2
    assert _cache(store)["entries"] == 0 and _cache(store)["hits"] == 0


def test_bounds_in_entries_and_bytes(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    store.response_cache.resize(max_entries=2)
    for query in ("brake", "pads", "fluid"):
        store.search(query, **NO_GATE)
    stats = _cache(store)
    assert stats["entries"] == 2 and stats["evictions"] == 1
    store.search("brake", **NO_GATE)  # the least recently used went first
    assert _cache(store)["hits"] == 0
    one = store.search("water", **NO_GATE)
    store.response_cache.resize(max_entries=100, max_bytes=estimate_bytes(one) * 2)
    for query in ("brake", "pads", "fluid", "water", "data"):
        store.search(query, **NO_GATE)
    assert 0 < _cache(store)["bytes"] <= estimate_bytes(one) * 2
    store.response_cache.resize(max_entries=0)
    store.search("brake", **NO_GATE)
    store.search("brake", **NO_GATE)
    assert _cache(store)["entries"] == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_bounds_are_refused(bad):
    with pytest.raises(InvalidInputError, match="max_entries must be an integer >= 0"):
        ResponseCache(max_entries=bad)


def test_query_vector_cache_counts_in_stats(enginelib_store_factory):
    store = enginelib_store_factory(records=RECORDS)
    store.search("brake pads", **NO_GATE)
    store.search("brake pads", limit=2, **NO_GATE)  # another response, the same query vector
    stats = store.stats()
    assert stats["query_vector_cache_misses"] == 1
    assert stats["query_vector_cache_hits"] == 1
    assert stats["response_cache_misses"] == 2


def test_cli_stats_shows_the_counters(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing")
    path = tmp_path / "store"
    with open_test_store(path) as store:
        store.ingest_documents([LoadedDocument(id="a", text="caliper piston seal")])
    result = CliRunner().invoke(main, ["stats", "--store", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("response_cache_hits", "response_cache_misses", "response_cache_max_bytes",
                "query_vector_cache_hits", "query_vector_cache_misses"):
        assert data[key] == (0 if "max" not in key else data[key])
    assert np.isscalar(data["response_cache_max_entries"])

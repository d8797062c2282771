"""What the exported SQL functions do with arguments a caller should not send: numbers out
of range, NULLs, vectors of another dimension, filters of the wrong type (real Postgres 18 +
pgvector). Each is refused with SQLSTATE 22023 naming the argument, as the engine's own
validation (enginelib/validation.py, search/filters.py) refuses the same option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from enginelib.export import export_postgres
from enginelib.validation import (
    MAX_CANDIDATES,
    MAX_FILTER_FIELDS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_RRF_K,
)
from tests.helpers import doc, open_test_store
from tests.pg_server import pg_dsn, pg_server  # noqa: F401 - pytest fixtures

HYBRID = ("SELECT count(*) FROM enginelib.hybrid_search(%(text)s, %(vector)s::extensions.vector, "
          "%(match_count)s, %(rrf_k)s, %(filters)s::jsonb, %(candidate_count)s)")
MATCH = ("SELECT count(*) FROM enginelib.match_chunks(%(vector)s::extensions.vector, "
         "%(match_threshold)s, %(match_count)s, %(filters)s::jsonb)")
INT_MAX = 2**31 - 1


def vec(values: list[float]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


@pytest.fixture()
def exported(tmp_path: Path, pg_dsn: str) -> tuple[str, str]:
    """A small export (64 dims) and a query vector for it."""
    store = open_test_store(tmp_path / "store")
    store.ingest_documents([doc(f"d{i}", f"brake pads number {i} wear out", metadata={"tags": ["front"]})
                            for i in range(4)])
    export_postgres(store, pg_dsn)
    vector = vec([float(x) for x in store.query_embeddings.embed(["brake pads"])[0]])
    store.close()
    return pg_dsn, vector


def call(dsn: str, statement: str, **args: Any) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(statement, args).fetchone()
    assert row is not None
    return int(row[0])


def hybrid(dsn: str, vector: str | None, **args: Any) -> int:
    params = {"text": "brake pads", "vector": vector, "match_count": 10, "rrf_k": 60, "filters": "{}",
              "candidate_count": 100, **args}
    return call(dsn, HYBRID, **params)


def match(dsn: str, vector: str | None, **args: Any) -> int:
    params = {"vector": vector, "match_threshold": -1, "match_count": 10, "filters": "{}", **args}
    return call(dsn, MATCH, **params)


def test_numbers_out_of_range_or_null_are_refused_naming_the_argument(exported: tuple[str, str]) -> None:
    # rrf_k = 2**31 - 1 overflowed rrf_k + rank ("integer out of range"); a NaN threshold
    # let every row through; a vector of another dimension failed inside pgvector; a NULL
    # vector made match_chunks return nothing without a word.
    dsn, vector = exported
    short = vec([0.1, 0.2, 0.3])
    refused: list[tuple[Any, dict[str, Any], str]] = [
        (hybrid, {"rrf_k": INT_MAX}, rf"rrf_k must be an integer within 1\.\.{MAX_RRF_K}"),
        (hybrid, {"rrf_k": 0}, r"rrf_k must be"),
        (hybrid, {"rrf_k": -5}, r"rrf_k must be"),
        (hybrid, {"rrf_k": None}, r"rrf_k must be.*got NULL"),
        (hybrid, {"match_count": -1}, rf"match_count must be an integer within 1\.\.{MAX_LIMIT}"),
        (hybrid, {"match_count": None}, r"match_count must be"),
        (hybrid, {"match_count": INT_MAX}, r"match_count must be"),
        (hybrid, {"match_count": MAX_LIMIT + 1}, r"match_count must be"),
        (hybrid, {"candidate_count": 0}, rf"candidate_count must be an integer within 1\.\.{MAX_CANDIDATES}"),
        (hybrid, {"candidate_count": INT_MAX}, r"candidate_count must be"),
        (hybrid, {"candidate_count": None}, r"candidate_count must be"),
        (hybrid, {"vector": short}, r"query_embedding has 3 dimensions; this export needs 64"),
        (match, {"match_count": -1}, r"match_count must be an integer within 1\.\."),
        (match, {"match_count": None}, r"match_count must be"),
        (match, {"match_count": INT_MAX}, r"match_count must be"),
        (match, {"match_threshold": float("nan")}, r"match_threshold must be a finite number within -1\.\.1"),
        (match, {"match_threshold": float("inf")}, r"match_threshold must be"),
        (match, {"match_threshold": -2}, r"match_threshold must be"),
        (match, {"vector": short}, r"query_embedding has 3 dimensions; this export needs 64"),
        (match, {"vector": None}, r"query_embedding is required"),
        # nothing matched without a word: NaN distances, or nothing asked at all
        (match, {"vector": vec([0.0] * 64)}, r"query_embedding is all zeros"),
        (hybrid, {"vector": vec([0.0] * 64)}, r"query_embedding is all zeros"),
        (hybrid, {"vector": None, "text": None}, r"nothing to search for"),
        (hybrid, {"vector": None, "text": "   "}, r"nothing to search for"),
        # 50,000 metadata keys cost about 3 s of server CPU a call
        (hybrid, {"filters": json.dumps({f"metadata.k{i}": "x" for i in range(MAX_FILTER_FIELDS + 1)})},
         rf"filters name {MAX_FILTER_FIELDS + 1} fields; the maximum is {MAX_FILTER_FIELDS}"),
    ]
    for function, args, message in refused:
        target = args.pop("vector") if "vector" in args else vector
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
            function(dsn, target, **args)
    # The bounds themselves are accepted, and so are the documented NULLs: no embedding
    # (text only) for hybrid_search, no threshold for match_chunks.
    assert hybrid(dsn, vector, rrf_k=MAX_RRF_K, match_count=MAX_LIMIT, candidate_count=MAX_CANDIDATES) == 4
    assert hybrid(dsn, vector, rrf_k=1, match_count=1, candidate_count=1) == 1
    assert hybrid(dsn, None) == 4
    assert match(dsn, vector, match_threshold=None) == 4
    assert match(dsn, vector, match_threshold=1) <= 4


def test_a_query_text_longer_than_the_engine_takes_is_refused(exported: tuple[str, str]) -> None:
    # Any API caller could make each call parse and stem megabytes of text (about a
    # second of server CPU per 3 MB); the engine refuses a query over MAX_QUERY_CHARS.
    dsn, vector = exported
    with pytest.raises(psycopg.errors.InvalidParameterValue,
                       match=rf"query_text is 3,000,000 characters; the maximum is {MAX_QUERY_CHARS:,}"):
        hybrid(dsn, vector, text="b" * 3_000_000)
    assert hybrid(dsn, vector, text="brake " * (MAX_QUERY_CHARS // 6)) == 4

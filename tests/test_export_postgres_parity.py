"""Parity of the Postgres export with the engine: a filter matrix run on both sides, BM25
ranking, and the `enginelib export verify` command (real Postgres 18 + pgvector)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from enginelib import Store
from enginelib.errors import ExportError, InvalidFilterError
from enginelib.export import export_postgres
from enginelib.export.verify import AS_TYPED, engine_allowed, filter_matrix, verify_postgres
from enginelib.search.filters import compile_filters
from tests.helpers import doc, open_test_store
from tests.pg_server import pg_dsn, pg_server  # noqa: F401 - pytest fixtures

REPO = Path(__file__).resolve().parent.parent
CLI_ENV = {**os.environ, "PYTHONPATH": str(REPO), "ENGINELIB_EMBEDDER": "hashing-64"}

# Every kind of filter the engine supports, on values the store below holds.
MATRIX: list[dict[str, Any]] = [
    {},
    {"truth_level": "L4"},
    {"truth_level": ["l1", " L3"]},  # the engine accepts these spellings too
    {"domain": "brakes"},
    {"domain": ["brakes", "forum"]},
    {"language": "fr"},
    {"tenant_id": "A"},
    {"namespace": ["A", "B"]},
    {"document_id": ["d0", "d3", "d7"]},
    {"document_type": "manual"},
    {"author": "ana"},
    {"tags": ["front"]},
    {"tags": {"any": ["rear", "oem"]}},
    {"tags": {"all": ["front", "oem"]}},
    {"created_at": {"gte": "2021-01-01"}},
    {"created_at": {"from": "2020-06-01", "to": "2022-06-01"}},
    {"created_at": {"gt": "2020-03-01T00:00:00", "lt": "2023-01-01"}},
    {"created_at": {"lte": "2021-03-01"}},
    # a date alone is its whole day: the documents made at 10:30 that day are in (lte, to)
    # or out (gt) on both sides
    {"created_at": {"lte": "2021-02-15"}},
    {"created_at": {"to": "2020-01-15"}},
    {"created_at": {"gt": "2021-02-15"}},
    {"created_at": {"gt": "2021-02-15T00:00:00"}},
    {"metadata.year": 2021},
    {"metadata.year": [2020, 2022]},
    {"metadata.year": "2021"},  # the engine compares text: "2021" matches the number 2021
    {"metadata.score": 1.5},
    # a number meets a stored number of the same value: 2.0 the stored 2, 3 the stored 3.0,
    # and a float written with an exponent ("1e+20" in Python, not the catalog's text)
    {"metadata.score": 2.0},
    {"metadata.weight": 3},
    {"metadata.weight": 1e20},
    {"metadata.weight": [2.5e-07, "x"]},
    {"metadata.region": "eu"},
    {"custom.region": ["eu", "us"]},
    # both spellings of one key narrow each other (us alone), on the server too
    {"metadata.region": ["eu", "us"], "custom.region": ["us", "apac"]},
    {"metadata.oem": True},
    {"domain": "brakes", "tags": ["front"], "created_at": {"gte": "2021-01-01"}, "metadata.region": "eu"},
]


def matrix_store(path: Path) -> Store:
    store = open_test_store(path)
    docs = []
    for i in range(12):
        metadata: dict[str, Any] = {
            "truth_level": f"L{i % 4 + 1}",
            "domain": ["brakes", "forum", "engine"][i % 3],
            "tags": [["front"], ["rear", "oem"], ["front", "oem"], []][i % 4],
            "created_at": f"20{20 + i % 4}-0{1 + i % 9}-15T10:30:00",
            "year": 2020 + i % 3,
            "score": [1.5, 2, 2.5][i % 3],
            "weight": [1e20, 2.5e-07, 3.0][i % 3],
            "region": ["eu", "us", "apac"][i % 3],
            "oem": i % 2 == 0,
            "document_type": "manual" if i % 2 else "note",
            "author": ["ana", "bo"][i % 2],
        }
        if i % 3:
            metadata["tenant_id"] = "A" if i % 3 == 1 else "B"
        language = "fr" if i % 5 == 0 else "en"
        text = (f"Les plaquettes de frein numéro {i} s'usent." if language == "fr"
                else f"Brake pads number {i} wear out near the rotor {i}.")
        docs.append(doc(f"d{i}", text, language=language, metadata=metadata))
    store.ingest_documents(docs)
    return store


def test_filter_matrix_returns_the_same_chunks_on_both_sides(tmp_path: Path, pg_dsn: str) -> None:
    store = matrix_store(tmp_path / "store")
    export_postgres(store, pg_dsn)
    report = verify_postgres(store, pg_dsn, ["brake pads", "plaquettes de frein"], filters=MATRIX)
    sizes = {json.dumps(spec): len(engine_allowed(store, spec)) for spec in MATRIX}
    derived = filter_matrix(store)
    derived_report = verify_postgres(store, pg_dsn, ["brake pads"], filters=derived)
    store.close()
    assert report.filters_checked == len(MATRIX)
    assert report.filter_mismatches == []
    # The matrix is meaningful: filters narrow the set, none to nothing by accident.
    assert all(0 < n for n in sizes.values()), sizes
    assert sizes[json.dumps({})] > max(n for s, n in sizes.items() if s != "{}")
    assert len(derived) >= 10 and derived_report.filter_mismatches == []
    # Exact vector search finds the same ten (order may differ on tied scores).
    assert report.overlap["vector"] >= 0.9


def test_verify_counts_equal_short_lists_as_full_overlap(tmp_path: Path, pg_dsn: str) -> None:
    """Full text finds 9 chunks for "brake pads" (fewer than k) and none for "zeppelin" on
    both sides: the overlap was divided by k, so `export verify` printed "fulltext mean
    0.450 ... identical 2/2" for lists that were the same."""
    store = matrix_store(tmp_path / "store")
    export_postgres(store, pg_dsn)
    report = verify_postgres(store, pg_dsn, ["brake pads", "zeppelin"], filters=[])
    store.close()
    assert report.identical["fulltext"] == 2
    assert report.overlap["fulltext"] == report.minimum["fulltext"] == 1.0


def test_filters_the_engine_rejects_are_rejected_by_the_server(tmp_path: Path, pg_dsn: str) -> None:
    store = matrix_store(tmp_path / "store")
    export_postgres(store, pg_dsn)
    vector = "[" + ",".join("0.1" for _ in range(store.manifest.embedding_dim)) + "]"
    store.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for bad, message in (({"colour": "red"}, "unknown filter"), ({"domain": []}, "empty list"),
                             ({"created_at": {"after": "2020-01-01"}}, "date operator"),
                             ({"metadata.a.b": 1}, "unknown filter")):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
                conn.execute("SELECT * FROM enginelib.match_chunks(%s::extensions.vector, -1, 5, %s::jsonb)",
                             [vector, json.dumps(bad)])


def test_filters_of_the_wrong_shape_are_refused_not_dropped(tmp_path: Path, pg_dsn: str) -> None:
    # These decoded to no bound at all, so match_chunks / hybrid_search returned every row
    # as if unfiltered; the engine refuses each of them.
    store = matrix_store(tmp_path / "store")
    export_postgres(store, pg_dsn)
    vector = "[" + ",".join("0.1" for _ in range(store.manifest.embedding_dim)) + "]"
    wrong = [{"created_at": "2099-01-01"}, {"updated_at": {}}, {"validated_at": ["2020-01-01"]},
             {"tags": {"none": ["front"]}}, {"tags": {}}, {"tags": {"any": ["front"], "all": ["oem"]}}]
    for bad in wrong:
        with pytest.raises(InvalidFilterError):
            engine_allowed(store, bad)
    store.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for bad in wrong:
            for call in ("SELECT * FROM enginelib.match_chunks(%s::extensions.vector, -1, 50, %s::jsonb)",
                         "SELECT * FROM enginelib.hybrid_search('brake', %s::extensions.vector, 50, 60, %s::jsonb)"):
                with pytest.raises(psycopg.errors.InvalidParameterValue, match="wrong shape"):
                    conn.execute(call, [vector, json.dumps(bad)])
        # The right shapes still pass.
        for good in ({"created_at": {"gte": "2021-01-01"}}, {"tags": {"all": ["front"]}}, {"tags": ["oem"]}):
            assert conn.execute("SELECT count(*) FROM enginelib.match_chunks(%s::extensions.vector, -1, 50, "
                                "%s::jsonb)", [vector, json.dumps({**good, "truth_level": ["L1", "L2", "L3", "L4"]})]
                                ).fetchone()[0] > 0


def test_filtered_hnsw_search_returns_k_rows(tmp_path: Path, pg_dsn: str) -> None:
    # 400 chunks of which 1 in 20 passes the filter: without iterative scans pgvector's
    # HNSW returns the passing rows among its first ef_search candidates only.
    store = open_test_store(tmp_path / "store")
    store.ingest_documents([
        doc(f"d{i}", f"Brake pads note {i}: rotor wear {i % 7}.", metadata={"truth_level": "L3" if i % 20 == 0 else "L1"})
        for i in range(400)
    ])
    export_postgres(store, pg_dsn)
    vector = "[" + ",".join(f"{x:.9g}" for x in store.query_embeddings.embed(["brake pads"])[0]) + "]"
    store.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        # On 400 rows the planner would rather scan them all; make it use the index, as it
        # does on a large table.
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute("EXPLAIN SELECT id FROM enginelib.chunks ORDER BY embedding "
                            "OPERATOR(extensions.<=>) %s::extensions.vector LIMIT 10", [vector]).fetchall()
        assert "hnsw" in str(plan)  # the index is what answers
        rows = conn.execute("SELECT document_id FROM enginelib.match_chunks(%s::extensions.vector, -1, 10, "
                            "'{\"truth_level\": \"L3\"}')",
                            [vector]).fetchall()
        hybrid = conn.execute("SELECT document_id FROM enginelib.hybrid_search(NULL, %s::extensions.vector, 10, 60, "
                              "'{\"truth_level\": \"L3\"}')",
                              [vector]).fetchall()
        # The setting does not leak out of the function.
        setting = conn.execute("SELECT current_setting('hnsw.iterative_scan')").fetchone()
    assert len(rows) == 10 and len(hybrid) == 10
    assert setting == ("off",)


def test_text_ranking_is_bm25_with_the_engines_statistics(tmp_path: Path, pg_dsn: str) -> None:
    store = open_test_store(tmp_path / "store")
    # "zeppelin" is rare, "brake" common: BM25's idf ranks the rare word's chunk first
    # even though the common word occurs more often in the other chunk.
    store.ingest_documents([
        doc("common", "Brake brake brake pads, brake rotor and brake fluid."),
        doc("rare", "A zeppelin hangar with brake pads."),
        *[doc(f"filler{i}", f"Brake pads wear {i} times faster in winter.") for i in range(8)],
    ])
    export_postgres(store, pg_dsn)
    engine = [h.document_id for h in store.search("zeppelin brake", strategy="fulltext", limit=3,
                                                 answerability_threshold=None, log=False, **AS_TYPED).hits]
    store.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT document_id, text_score FROM enginelib.hybrid_search('zeppelin brake', NULL, 3)"
                            ).fetchall()
        stats = conn.execute("SELECT chunks FROM enginelib.text_stats").fetchall()
        df = conn.execute("SELECT df FROM enginelib.term_stats WHERE lexeme = 'brake'").fetchone()
    assert [r[0] for r in rows] == engine and rows[0][0] == "rare"
    assert stats == [(10,)] and df == (10,)


def test_cli_export_verify_prints_overlap_and_filter_mismatches(tmp_path: Path, pg_dsn: str) -> None:
    store = matrix_store(tmp_path / "store")
    export_postgres(store, pg_dsn)
    store.close()
    queries = tmp_path / "queries.txt"
    queries.write_text("brake pads\nrotor wear\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "export", "verify", "--store", str(tmp_path / "store"),
         "--dsn", pg_dsn, "--queries", str(queries), "--json"],
        cwd=REPO, capture_output=True, text=True, check=False, env=CLI_ENV,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["queries"] == 2 and set(data["overlap"]) == {"vector", "fulltext", "hybrid"}
    assert data["filters_checked"] >= 10 and data["filter_mismatches"] == []
    plain = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "export", "verify", "--store", str(tmp_path / "store"),
         "--dsn", pg_dsn, "--queries", str(queries)],
        cwd=REPO, capture_output=True, text=True, check=False, env=CLI_ENV,
    )
    assert plain.returncode == 0, plain.stderr
    assert "top-10 overlap" in plain.stdout and "hybrid" in plain.stdout and "0 mismatches" in plain.stdout


def test_pruned_text_ranking_equals_the_exhaustive_one(tmp_path: Path, pg_dsn: str) -> None:
    # Few candidates make the MaxScore pruning stop before the common words; a depth as
    # large as the corpus scores every chunk holding any query word. The top must agree.
    store = open_test_store(tmp_path / "store")
    words = ["rotor", "caliper", "piston", "fluid", "hose", "bleed", "torque", "drum"]
    store.ingest_documents([
        doc(f"d{i}", " ".join(["brake", "pads"] * (1 + i % 3) + words[: 1 + i % 8] + [f"note{i % 5}"]))
        for i in range(60)
    ])
    export_postgres(store, pg_dsn)
    store.close()
    query = "brake pads drum bleed note3"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for depth in (3, 10, 25):
            pruned = conn.execute("SELECT id, text_score FROM enginelib.hybrid_search(%s, NULL, %s, 60, '{}', %s)",
                                  [query, depth, depth]).fetchall()
            full = conn.execute("SELECT id, text_score FROM enginelib.hybrid_search(%s, NULL, %s, 60, '{}', 1000)",
                                [query, depth]).fetchall()
            assert [r[0] for r in pruned] == [r[0] for r in full], depth
            assert [r[1] for r in pruned] == pytest.approx([r[1] for r in full])


def test_code_tokens_score_like_the_engines_code_field(tmp_path: Path, pg_dsn: str) -> None:
    store = open_test_store(tmp_path / "store")
    store.ingest_documents([
        doc("code", "Treatment with 4-PBA reduced endoplasmic reticulum stress."),
        doc("parts", "PBA levels rose in 4 of the patients under stress."),
        doc("part-no", "Replace caliper 1K0615301M when worn; see 1K0615301M notes."),
        # Past tantivy's default limit of 40 bytes, within the engine's (and the export's).
        doc("digest", "Stress test build e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 "
            "of com.example.billing.service.impl.InvoiceServiceImpl passed."),
        *[doc(f"other{i}", f"Stress markers in {i + 5} patients with treatment.") for i in range(6)],
    ])
    export_postgres(store, pg_dsn)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for query in ("4-PBA stress", "1K0615301M caliper",
                      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 stress",
                      "com.example.billing.service.impl.InvoiceServiceImpl stress"):
            engine = [h.document_id for h in store.search(query, strategy="fulltext", limit=3,
                                                         answerability_threshold=None, log=False,
                                                         **AS_TYPED).hits]
            server = [r[0] for r in conn.execute(
                "SELECT document_id FROM enginelib.hybrid_search(%s, NULL, 3)", [query]).fetchall()]
            assert server == engine, query
            if len(query.split()[0]) > 40:
                assert engine[0] == "digest", query
        codes = conn.execute("SELECT codes FROM enginelib.chunks WHERE document_id = 'part-no'").fetchone()
    store.close()
    assert codes == (["1k0615301m", "1k0615301m"],)


def test_a_store_of_a_few_chunks_still_gives_sample_queries(tmp_path: Path) -> None:
    # the sample took every 7th label by hash only: two chunks often had none of them,
    # and `export verify` said "the store has no chunks"
    from enginelib.export.queries import sample_queries

    store = open_test_store(tmp_path / "s", chunking=None)
    store.ingest_documents([doc("a", "Brake pads wear faster in city traffic."),
                            doc("b", "Tyres need their pressure checked monthly.")])
    queries = sample_queries(store, 50)
    assert sorted(queries) == ["Brake pads wear faster in city traffic.",
                               "Tyres need their pressure checked monthly."]
    assert len(sample_queries(store, 1)) == 1
    store.close()


def test_verify_against_a_database_without_the_export_says_where_it_looked(
    tmp_path: Path, pg_dsn: str
) -> None:
    from enginelib.errors import ExportError
    from enginelib.export import ExportOptions

    store = open_test_store(tmp_path / "s")
    store.ingest_documents([doc("a", "Brake pads wear faster in city traffic.")])
    # it failed on whatever the first query missed: 'schema "extensions" does not exist'
    with pytest.raises(ExportError, match=r"no enginelib export in schema 'enginelib'"):
        verify_postgres(store, pg_dsn, ["brake pads"])
    export_postgres(store, pg_dsn)
    with pytest.raises(ExportError, match=r"schema 'other'.*--schema / --table-prefix"):
        verify_postgres(store, pg_dsn, ["brake pads"], options=ExportOptions(schema="other"))
    assert verify_postgres(store, pg_dsn, ["brake pads"]).queries == 1
    store.close()


# Values of the wrong type: the engine refuses each; the server matched nothing (a null,
# a number, a date that is not one) or dropped the filter and returned every row (a null
# domain), or failed with a raw cast error.
WRONG_TYPES: list[tuple[dict[str, Any], str]] = [
    ({"truth_level": None}, "truth_level"),
    ({"truth_level": 3}, "truth_level"),
    ({"truth_level": ["L1", 2]}, "truth_level"),
    ({"truth_level": "L5"}, "truth_level"),
    ({"truth_level": "2"}, "truth_level"),
    ({"domain": None}, "domain"),
    ({"domain": 5}, "domain"),
    ({"domain": ""}, "domain"),
    ({"tenant_id": {"a": 1}}, "tenant_id"),
    ({"document_id": [["d1"]]}, "document_id"),
    ({"tags": 5}, "tags"),
    ({"tags": None}, "tags"),
    ({"tags": ["front", 1]}, "tags"),
    ({"tags": {"any": []}}, "tags"),
    ({"tags": {"all": [True]}}, "tags"),
    ({"created_at": 5}, "created_at"),
    ({"created_at": {"gte": 5}}, "created_at"),
    ({"created_at": {"gte": None}}, "created_at"),
    ({"created_at": {"lt": "now"}}, "created_at"),
    ({"updated_at": {"gte": "not a date"}}, "updated_at"),
    ({"validated_at": {"gte": "2021-13-45"}}, "validated_at"),
    ({"metadata.year": None}, "metadata.year"),
    ({"metadata.year": [2020, None]}, "metadata.year"),
    ({"metadata.year": {"gte": 2020}}, "metadata.year"),
    ({"custom.year": [[2020]]}, "custom.year"),
    ({"document_id": ["d1"] * 10_001}, "document_id"),
]
# The server's own key (JSON containment), unknown to the engine: an object only.
SERVER_ONLY_WRONG: list[tuple[dict[str, Any], str]] = [
    ({"metadata": 5}, "metadata"), ({"metadata": None}, "metadata"), ({"metadata": ["eu"]}, "metadata"),
]


def _engine_refuses(spec: dict[str, Any]) -> bool:
    from enginelib.errors import InvalidInputError
    from enginelib.validation import check_filters

    try:
        check_filters(spec)
        compile_filters(spec)
    except (InvalidInputError, InvalidFilterError):
        return True
    return False


def test_filter_values_of_the_wrong_type_are_refused_naming_the_key(tmp_path: Path, pg_dsn: str) -> None:
    store = matrix_store(tmp_path / "store")
    export_postgres(store, pg_dsn)
    vector = "[" + ",".join("0.1" for _ in range(store.manifest.embedding_dim)) + "]"
    for bad, _ in WRONG_TYPES:
        assert _engine_refuses(bad), bad
    # Accepted spellings still match what the engine matches.
    accepted = [{"tags": "front"}, {"tags": {"all": "oem"}}, {"truth_level": " l3"}, {"domain": ["forum"]},
                {"metadata.oem": [True, "x"]}, {"created_at": {"gte": "2021-01-01T00:00:00+02:00"}},
                {"created_at": {"lt": "2022-03-01 10:00"}}]
    report = verify_postgres(store, pg_dsn, ["brake pads"], filters=accepted)
    store.close()
    assert report.filter_mismatches == []
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for bad, key in WRONG_TYPES + SERVER_ONLY_WRONG:
            for call in ("SELECT * FROM enginelib.match_chunks(%s::extensions.vector, -1, 50, %s::jsonb)",
                         "SELECT * FROM enginelib.hybrid_search('brake', %s::extensions.vector, 50, 60, %s::jsonb)"):
                with pytest.raises(psycopg.errors.InvalidParameterValue,
                                   match=rf"filter(\(s\))? {key} (expects|have the wrong shape)"):
                    conn.execute(call, [vector, json.dumps(bad)])


def test_verify_gives_up_on_a_server_that_never_answers(tmp_path: Path) -> None:
    # export_postgres waited connect_timeout seconds; verify_postgres (and `export verify`)
    # had no timeout, and libpq waits for ever on a server that accepts and never answers.
    import inspect
    import socket

    store = open_test_store(tmp_path / "store")
    store.ingest_documents([doc("a", "brake pads wear out")])
    with socket.socket() as silent:  # accepts connections (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        dsn = f"postgresql://u:p@127.0.0.1:{silent.getsockname()[1]}/db"
        with pytest.raises(ExportError, match="timeout expired"):
            verify_postgres(store, dsn, ["brake pads"], connect_timeout=1)
    default = inspect.signature(verify_postgres).parameters["connect_timeout"].default
    assert default == inspect.signature(export_postgres).parameters["connect_timeout"].default
    store.close()

"""Retrieval metrics on tiny hand-made judgments, checked against ir-measures; `enginelib eval`."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import enginelib
from enginelib.cli.main import main
from enginelib.embedder import HashingEmbedder
from enginelib.errors import InvalidInputError
from enginelib.evaluation import (
    Qrels,
    dcg,
    documents_by_best_chunk,
    evaluate,
    evaluate_run,
    mrr,
    ndcg,
    rank_documents,
    read_qrels,
    read_queries,
    recall,
    scores_in_order,
    trec_run_lines,
)

QRELS = {
    "q1": {"a": 2, "b": 1, "c": 0, "z": 1},  # z is never retrieved: it still counts in IDCG
    "q2": {"d": 1},
    "q3": {"e": 3, "f": 1},
}
RANKINGS = {
    "q1": ["c", "a", "x", "b"],
    "q2": ["x", "y", "z"],  # nothing relevant retrieved
    "q3": ["f", "e"],
}


def test_ndcg_by_hand() -> None:
    # q1: gains 0, 2, 0, 1 at ranks 1..4; ideal 2, 1, 1.
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(RANKINGS["q1"], QRELS["q1"], 10) == pytest.approx(dcg / idcg)
    assert ndcg(RANKINGS["q2"], QRELS["q2"], 10) == 0.0
    assert ndcg(["e", "f"], QRELS["q3"], 10) == pytest.approx(1.0)
    assert ndcg(["a"], {"a": 0}, 10) == 0.0  # nothing relevant judged: 0, not a division error


def test_recall_mrr_and_cutoffs_by_hand() -> None:
    assert recall(RANKINGS["q1"], QRELS["q1"], 100) == pytest.approx(2 / 3)
    assert recall(RANKINGS["q1"], QRELS["q1"], 2) == pytest.approx(1 / 3)
    assert mrr(RANKINGS["q1"], QRELS["q1"], 10) == pytest.approx(1 / 2)
    assert mrr(RANKINGS["q1"], QRELS["q1"], 1) == 0.0
    assert mrr(RANKINGS["q3"], QRELS["q3"], 10) == 1.0


def test_duplicates_count_once_at_their_best_rank() -> None:
    assert mrr(["x", "x", "a"], {"a": 1}, 2) == pytest.approx(1 / 2)
    assert recall(["a", "a", "a"], {"a": 1, "b": 1}, 100) == pytest.approx(1 / 2)
    assert documents_by_best_chunk([("d1", 0.9), ("d2", 0.8), ("d1", 0.7)]) == [
        ("d1", 0.9), ("d2", 0.8)
    ]


def test_a_judged_query_without_results_scores_zero() -> None:
    result = evaluate({"q1": RANKINGS["q1"]}, QRELS)
    assert result.queries == 3
    assert result.per_query["q2"] == {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}


def _ir_measures(qrels: dict[str, dict[str, int]], rankings: dict[str, list[str]]) -> dict[str, float]:
    import ir_measures
    from ir_measures import RR, R, nDCG

    run = [
        ir_measures.ScoredDoc(qid, doc, float(len(docs) - i))
        for qid, docs in rankings.items()
        for i, doc in enumerate(docs)
    ]
    judged = [ir_measures.Qrel(qid, doc, grade) for qid, docs in qrels.items() for doc, grade in docs.items()]
    agg = ir_measures.calc_aggregate([nDCG @ 10, R @ 100, RR @ 10], judged, run)
    return {"ndcg@10": agg[nDCG @ 10], "recall@100": agg[R @ 100], "mrr@10": agg[RR @ 10]}


def test_matches_ir_measures_on_the_hand_made_qrels() -> None:
    ours = evaluate(RANKINGS, QRELS)
    reference = _ir_measures(QRELS, RANKINGS)
    assert ours.ndcg_at_10 == pytest.approx(reference["ndcg@10"], abs=1e-9)
    assert ours.recall_at_100 == pytest.approx(reference["recall@100"], abs=1e-9)
    assert ours.mrr_at_10 == pytest.approx(reference["mrr@10"], abs=1e-9)


def test_matches_ir_measures_on_random_graded_runs() -> None:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(150)]
    qrels, rankings = {}, {}
    for q in range(40):
        judged = rng.sample(docs, rng.randint(1, 12))
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        qrels[f"q{q}"][judged[0]] = max(1, qrels[f"q{q}"][judged[0]])  # at least one relevant
        rankings[f"q{q}"] = rng.sample(docs, rng.randint(5, 120))
    ours = evaluate(rankings, qrels)
    reference = _ir_measures(qrels, rankings)
    assert ours.ndcg_at_10 == pytest.approx(reference["ndcg@10"], abs=1e-9)
    assert ours.recall_at_100 == pytest.approx(reference["recall@100"], abs=1e-9)
    assert ours.mrr_at_10 == pytest.approx(reference["mrr@10"], abs=1e-9)


def test_readers_accept_beir_and_trec_layouts(tmp_path: Path) -> None:
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\ta\t2\nq1\tb\t0\n", encoding="utf-8")
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 a 2\nq1 0 b 0\n", encoding="utf-8")
    assert read_qrels(beir) == read_qrels(trec) == {"q1": {"a": 2, "b": 0}}
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "brake pads", "metadata": {}}\n', encoding="utf-8")
    assert read_queries(queries) == {"q1": "brake pads"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1 a\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="bad.tsv:1: expected 3 or 4 columns"):
        read_qrels(bad)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("q.jsonl", '{"_id": "q1"}\n', r'q.jsonl:1: expected \{"_id"'),  # was KeyError: 'text'
    ("q.jsonl", '{"_id": "q1", "text": "a"}\nnot json\n', "q.jsonl:2: not JSON"),
    ("q.jsonl", '{"_id": "q1", "text": 5}\n', "q.jsonl:1: expected"),  # was searched as "5"
    ("q.jsonl", '[1, 2]\n', "q.jsonl:1: expected"),
    ("q.jsonl", '{"_id": "q1", "text": "  "}\n', "q.jsonl:1: the query text is empty"),
    ("q.tsv", "q1\tbrakes\nq2\t\n", "q.tsv:2: the query text is empty"),
])
def test_a_bad_queries_line_is_named_with_its_number(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    # an enginelib error (a plain ValueError was outside the error tree callers catch)
    with pytest.raises(InvalidInputError, match=message):
        read_queries(path)


def test_an_infinite_grade_is_refused_with_its_line(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 2\nq1 0 b inf\n", encoding="utf-8")  # int(inf) overflowed
    with pytest.raises(InvalidInputError,
                       match="qrels.txt:2: grade 'inf' is not a number: expected a whole-number"):
        read_qrels(qrels)


@pytest.mark.parametrize(("line", "grade"), [("q1 0 b 1_0", "1_0"), ("q1 0 b \u0661", "\u0661"),
                                           ("q1\tb\t\uff12", "\uff12")])
def test_a_grade_not_in_ascii_digits_is_refused_with_its_line(
        tmp_path: Path, line: str, grade: str) -> None:
    # float() read "1_0" as 10 (trec_eval reads 1) and Arabic-Indic or full-width digits as
    # the numbers they stand for: judgments no other tool scores the same
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q1 0 a 2\n{line}\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=f"qrels.txt:2: grade '{grade}' is not a number"):
        read_qrels(qrels)
    qrels.write_text(f"{line}\nq1 0 a 2\n", encoding="utf-8")  # not taken for a header
    with pytest.raises(InvalidInputError, match=f"qrels.txt:1: grade '{grade}' is not a number"):
        read_qrels(qrels)
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\ta\t+2\nq1\tb\t1.0\nq1\tc\t1e0\n",
                     encoding="utf-8")
    assert read_qrels(qrels) == {"q1": {"a": 2, "b": 1, "c": 1}}


@pytest.mark.parametrize(("name", "text"), [
    ("q.jsonl", '{"_id": "q1", "text": "brake fluid"}\n{"_id": "q1", "text": "engine oil"}\n'),
    ("q.tsv", "q1\tbrake fluid\nq1\tengine oil\n"),
])
def test_a_query_id_given_twice_with_other_text_is_refused(tmp_path: Path, name: str,
                                                           text: str) -> None:
    """The later line silently replaced the earlier: q1, judged on the brake documents, was
    searched as 'engine oil' and scored 0, with nothing said."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=f"{name}:2: query id 'q1' again, .* line 1"):
        read_queries(path)
    path.write_text(text.replace("engine oil", "brake fluid"), encoding="utf-8")
    assert read_queries(path) == {"q1": "brake fluid"}  # a repeated line says nothing new


def test_a_tsv_query_keeps_its_double_quotes(tmp_path: Path) -> None:
    """The TSV reader applied CSV quoting: a query starting with '"' swallowed the lines
    after it up to the next quote (q2 vanished into q1's text, q1 scored on the wrong
    words), and '"brake fluid" level', a phrase query, was searched as 'brake fluid level'."""
    path = tmp_path / "queries.tsv"
    path.write_text('q1\t"brake fluid\nq2\tengine oil\nq3\t"brake fluid" level\n'
                    'q4\t5" rotor\n', encoding="utf-8")
    assert read_queries(path) == {"q1": '"brake fluid', "q2": "engine oil",
                                  "q3": '"brake fluid" level', "q4": '5" rotor'}


@pytest.mark.parametrize("name", ["queries.jsonl", "queries.tsv", "qrels.tsv", "qrels.txt"])
def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path, name: str) -> None:
    """A file saved with a BOM (Notepad, Excel): queries.jsonl failed with Python's "not JSON
    (Unexpected UTF-8 BOM (decode using utf-8-sig))", and the first query id of a TSV queries
    or header-less qrels file silently became '\\ufeffq1', judged but never searched."""
    lines = {"queries.jsonl": '{"_id": "q1", "text": "brake pads"}\n',
             "queries.tsv": "q1\tbrake pads\r\n",
             "qrels.tsv": "q1\ta\t2\r\nq1\tb\t0\r\n", "qrels.txt": "q1 0 a 2\nq1 0 b 0\n"}
    path = tmp_path / name
    path.write_text("\ufeff" + lines[name], encoding="utf-8")
    if name.startswith("queries"):
        assert read_queries(path) == {"q1": "brake pads"}
    else:
        assert read_qrels(path) == {"q1": {"a": 2, "b": 0}}


def test_trec_run_lines() -> None:
    lines = list(trec_run_lines({"q1": [("a", 0.5), ("b", 0.25)]}, "tag"))
    assert lines == ["q1 Q0 a 1 0.500000 tag", "q1 Q0 b 2 0.250000 tag"]


# -- enginelib eval ------------------------------------------------------------------------------

DOCS = {
    "brakes": "Brake pads 1K0615301M must be replaced when thinner than 2 mm. Check the rotors too.",
    "erasure": "The data subject has the right to obtain erasure of personal data without delay.",
    "torque": "Caliper bolts are tightened to 28 Nm with a torque wrench.",
    "coffee": "Espresso is brewed by forcing hot water through finely ground coffee.",
}


@pytest.fixture()
def judged_store(tmp_path: Path) -> tuple[Path, Path, Path]:
    store_path = tmp_path / "store"
    with enginelib.open(store_path, embedder=HashingEmbedder(64)) as store:
        # L3 on purpose: the production default (L1+L2) would find nothing.
        store.ingest_documents(
            [enginelib.LoadedDocument(id=k, text=v, title=k) for k, v in DOCS.items()],
            truth_level="L3",
        )
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, t in [
            ("q1", "brake pads rotors"), ("q2", "erasure of personal data"),
            ("q3", "espresso coffee"), ("unjudged", "torque"),
        ]) + "\n",
        encoding="utf-8",
    )
    qrels = tmp_path / "test.tsv"
    qrels.write_text(
        "query-id\tcorpus-id\tscore\nq1\tbrakes\t2\nq1\ttorque\t1\nq2\terasure\t1\nq3\tcoffee\t1\n",
        encoding="utf-8",
    )
    return store_path, queries, qrels


def test_rank_documents_searches_every_level_present(judged_store: tuple[Path, Path, Path]) -> None:
    store_path, queries, _ = judged_store
    with enginelib.open(store_path, embedder=HashingEmbedder(64), read_only=True) as store:
        result = rank_documents(store, {"q1": "brake pads rotors"}, strategy="fulltext")
    assert result.truth_levels == ("L3",)
    assert result.run["q1"][0][0] == "brakes"


def test_rank_documents_checks_its_store_queries_and_levels(
        judged_store: tuple[Path, Path, Path]) -> None:
    # a str or a list of queries was a bare TypeError ("string indices must be integers"), a
    # path for the store an AttributeError ('str' object has no attribute 'stats'), and
    # truth_levels="L3" was searched as its characters: "unknown truth level 'L'"
    store_path, _, _ = judged_store
    with pytest.raises(InvalidInputError, match="store must be an open enginelib Store"):
        rank_documents(str(store_path), {"q1": "brake pads"})
    with enginelib.open(store_path, embedder=HashingEmbedder(64), read_only=True) as store:
        for queries, named in (("brake pads", "queries must be a mapping"),
                               (["brake pads"], "queries must be a mapping"),
                               ({1: "brake pads"}, "query id 1: query ids are str"),
                               ({"q1": None}, r"queries\['q1'\] must be the query's text")):
            with pytest.raises(InvalidInputError, match=named):
                rank_documents(store, queries)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="truth_levels must be a list"):
            rank_documents(store, {"q1": "brake pads"}, truth_levels=3)  # type: ignore[arg-type]
        for levels in ("L3", "l3, L3", ["l3"]):
            result = rank_documents(store, {"q1": "brake pads rotors"}, strategy="fulltext",
                                    truth_levels=levels)
            assert result.truth_levels == ("L3",) and result.run["q1"][0][0] == "brakes"


@pytest.mark.parametrize(("text", "refused"), [
    ("brake\x00pads", "contains a NUL character"),
    ("brake \ud800", "contains a lone surrogate"),
    ("brake " * 4_000, "is 23,999 characters; a search takes at most 20,000"),
])
def test_a_query_a_search_refuses_is_named_before_any_search(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    text: str, refused: str,
) -> None:
    """One such judged query stopped the whole evaluation with the search's words alone
    ("Error: the query contains a NUL character (\\x00): remove it"), naming neither its id
    nor its file among thousands; an unjudged one is never searched, so it is let be."""
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, _, qrels = judged_store
    queries = tmp_path / "odd.jsonl"
    queries.write_text("\n".join(json.dumps({"_id": q, "text": t}) for q, t in [
        ("q1", "brake pads rotors"), ("q2", text), ("q3", "espresso coffee")]) + "\n",
        encoding="utf-8")
    result = CliRunner().invoke(main, ["eval", "--store", str(store_path), "--queries",
                                       str(queries), "--qrels", str(qrels)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: judged query 'q2' in {queries}: the query text ")
    assert refused in result.output
    with enginelib.open(store_path, embedder=HashingEmbedder(64), read_only=True) as store:
        with pytest.raises(InvalidInputError, match=rf"queries\['q2'\]: .*{refused}"):
            rank_documents(store, {"q1": "brake pads", "q2": text})
    unjudged = queries.read_text(encoding="utf-8").replace('"q2"', '"other"')
    queries.write_text(unjudged, encoding="utf-8")
    result = CliRunner().invoke(main, ["eval", "--store", str(store_path), "--queries",
                                       str(queries), "--qrels", str(qrels)])
    assert result.exit_code == 0, result.output


def test_cli_eval_json_and_trec_run(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, qrels = judged_store
    run_file = tmp_path / "run.txt"
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(qrels),
        "--strategy", "fulltext", "--json", "--run-out", str(run_file),
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["truth_levels_searched"] == ["L3"] and data["truth_levels_default"] is True
    assert data["queries"] == 3 and data["queries_without_text"] == 0
    assert data["mrr@10"] == 1.0 and data["strategy"] == "fulltext"

    lines = run_file.read_text(encoding="utf-8").splitlines()
    assert lines[0].split()[:4] == ["q1", "Q0", "brakes", "1"]
    assert all(len(line.split()) == 6 and line.endswith(" enginelib-fulltext") for line in lines)
    ranked = [line.split() for line in lines if line.startswith("q1 ")]
    assert [r[3] for r in ranked] == [str(i) for i in range(1, len(ranked) + 1)]
    assert len({r[2] for r in ranked}) == len(ranked)  # each document once


def test_cli_eval_text_output_names_the_levels(
    judged_store: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, qrels = judged_store
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(qrels),
        "--strategy", "fulltext",
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    first, second = result.output.splitlines()[:2]
    assert first == (
        "3 queries, strategy fulltext, truth levels searched L3 "
        "(every level present in the store)"
    )
    assert second.startswith("nDCG@10 ") and "MRR@10 1.0000" in second

    narrowed = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(qrels),
        "--truth-level", "L1,L2", "--json",
    ], catch_exceptions=False)
    data = json.loads(narrowed.stdout)
    assert data["truth_levels_searched"] == ["L1", "L2"] and data["ndcg@10"] == 0.0
    assert data["queries_without_results"] == 3


def test_cli_eval_says_when_the_judgments_file_holds_none(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, _ = judged_store
    empty = tmp_path / "empty.tsv"
    empty.write_text("query-id\tcorpus-id\tscore\n", encoding="utf-8")
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(empty),
    ])
    assert result.exit_code == 2 and "holds no judgments" in result.output


@pytest.mark.parametrize(("option", "name", "text", "message"), [
    ("--qrels", "bad.tsv", "q1 a\n", "bad.tsv:1: expected 3 or 4 columns"),
    ("--queries", "bad.jsonl", "not json\n", 'bad.jsonl:1: not JSON .*expected one object'),
])
def test_cli_eval_prints_a_malformed_input_line_as_a_clean_error(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    option: str, name: str, text: str, message: str,
) -> None:
    import re

    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, qrels = judged_store
    bad = tmp_path / name
    bad.write_text(text, encoding="utf-8")
    inputs = {"--queries": str(queries), "--qrels": str(qrels), option: str(bad)}
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), *[x for pair in inputs.items() for x in pair]])
    assert result.exit_code == 2
    assert result.output.startswith("Error: ") and re.search(message, result.output)
    assert "Traceback" not in result.output


def test_cli_eval_rejects_disjoint_queries(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, _, qrels = judged_store
    other = tmp_path / "other.jsonl"
    other.write_text('{"_id": "zz", "text": "nothing"}\n', encoding="utf-8")
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(other), "--qrels", str(qrels),
    ])
    assert result.exit_code == 2
    assert "none of the 3 judged query ids" in result.output


def test_cli_eval_refuses_judgments_whose_documents_are_none_of_the_stores(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every score was 0.0000 with exit 0, as if the ranking had failed, when the qrels named
    # another corpus's ids (or file names with their extension)
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, _ = judged_store
    other = tmp_path / "other.tsv"
    other.write_text("query-id\tcorpus-id\tscore\nq1\tbrakes.md\t1\nq2\tdoc-9\t1\n"
                     "q3\tcoffee\t0\n", encoding="utf-8")
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(other),
    ])
    assert result.exit_code == 2, result.output
    assert "none of the 2 documents judged relevant" in result.output
    assert "'brakes.md'" in result.output


def test_cli_eval_warns_of_judged_documents_missing_from_the_store(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, qrels = judged_store
    with enginelib.open(store_path, embedder=HashingEmbedder(64)) as store:
        store.delete_document("coffee")  # a deleted document is absent, though its history stays
        assert store.present_documents(iter(["brakes", "coffee", "brakes"])) == {"brakes"}
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(qrels),
        "--strategy", "fulltext", "--json",
    ])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["relevant_documents"] == 4 and data["relevant_documents_absent"] == 1
    text = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(qrels),
    ])
    assert text.exit_code == 0, text.output
    assert "1 of the 4 documents judged relevant are not in the store" in text.stderr
    assert "'coffee'" in text.stderr


def test_a_dataset_query_with_an_unbalanced_quote_is_searched_as_its_words(
    judged_store: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One query with an opening quote only (common in BEIR's argument texts) stopped the
    whole eval run with exit 2; a dataset's text is not written for our query syntax."""
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, qrels = judged_store
    queries.write_text(queries.read_text(encoding="utf-8").replace(
        '"brake pads rotors"', '"\\"brake pads rotors"'), encoding="utf-8")
    with enginelib.open(store_path, embedder=HashingEmbedder(64), read_only=True) as store:
        with pytest.raises(enginelib.InvalidInputError, match=r"unbalanced.*--lenient"):
            store.search('"brake pads rotors', strategy="fulltext", truth_levels=["L3"])
        plain = store.search("brake pads rotors", strategy="fulltext", truth_levels=["L3"],
                             answerability_threshold=None)
        lenient = store.search('"brake pads rotors', strategy="fulltext", truth_levels=["L3"],
                               answerability_threshold=None, lenient=True)
        assert [h.document_id for h in lenient.hits] == [h.document_id for h in plain.hits]
    result = CliRunner().invoke(main, [
        "eval", "--store", str(store_path), "--queries", str(queries), "--qrels", str(qrels),
        "--strategy", "fulltext", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["mrr@10"] == 1.0
    searched = CliRunner().invoke(main, [
        "search", '"brake pads rotors', "--store", str(store_path), "--strategy", "fulltext",
        "--truth-level", "L3", "--no-gate", "--lenient", "--json"])
    assert searched.exit_code == 0, searched.output
    assert json.loads(searched.output)["hits"][0]["document_id"] == "brakes"


@pytest.mark.parametrize("reader", [read_qrels, read_queries])
def test_readers_refuse_paths_that_are_not_paths(reader, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # read_qrels(1) gave 1 to open() as a file descriptor: it read stdout's, then closed it
    (tmp_path / "held").write_text("q1\t0\ta\t1\n", encoding="utf-8")
    held = os.open(tmp_path / "held", os.O_RDONLY)
    try:
        for bad, says in ((held, "must be a str or Path"), (None, "must be a str or Path"),
                          ("", "is empty"), (tmp_path / ("a" * 5000), "File name too long")):
            with pytest.raises(InvalidInputError, match=says):
                reader(bad)
        os.fstat(held)  # still open: nobody else's descriptor was closed
    finally:
        os.close(held)


# The metric helpers took anything: None, one string for a list of ids, float/NaN/str grades,
# NaN scores, k=-1 (the ranking sliced from its end) failed as TypeError/AttributeError or
# gave a number. Each is now an InvalidInputError naming the argument at fault.
NAN = float("nan")
BAD_METRIC_CALLS = [
    ("ranking", lambda: ndcg(None, {"a": 1})),  # type: ignore[arg-type]
    ("ranking", lambda: recall("ab", {"a": 1})),
    ("ranking[1]", lambda: mrr(["a", 7], {"a": 1})),  # type: ignore[list-item]
    ("judged", lambda: ndcg(["a"], None)),  # type: ignore[arg-type]
    ("judged['a']", lambda: recall(["a"], {"a": 1.5})),  # type: ignore[dict-item]
    ("judged['a']", lambda: mrr(["a"], {"a": NAN})),  # type: ignore[dict-item]
    ("judged['a']", lambda: ndcg(["a"], {"a": "1"})),  # type: ignore[dict-item]
    ("judged has the key 3", lambda: ndcg(["a"], {3: 1})),  # type: ignore[dict-item]
    ("k must be within 1..", lambda: ndcg(["a", "b"], {"b": 1}, k=-1)),
    ("k must be within 1..", lambda: recall(["a"], {"a": 1}, k=0)),
    ("k must be an integer", lambda: mrr(["a"], {"a": 1}, k=None)),  # type: ignore[arg-type]
    ("gains[0]", lambda: dcg([NAN])),
    ("gains must be", lambda: dcg(None)),  # type: ignore[arg-type]
    ("rankings must be", lambda: evaluate(None, QRELS)),  # type: ignore[arg-type]
    ("rankings['q1']", lambda: evaluate({"q1": "a"}, QRELS)),  # type: ignore[dict-item]
    ("qrels must be", lambda: evaluate(RANKINGS, None)),  # type: ignore[arg-type]
    ("qrels['q1']['a']", lambda: evaluate(RANKINGS, {"q1": {"a": True}})),
    ("run['q1'][0] has the score nan", lambda: evaluate_run({"q1": [("a", NAN)]}, QRELS)),
    ("run['q1'][0] must be a (document id, score) pair",
     lambda: evaluate_run({"q1": ["a"]}, QRELS)),  # type: ignore[list-item]
    ("hits[1] has the score None",
     lambda: documents_by_best_chunk([("a", 1.0), ("b", None)])),  # type: ignore[list-item]
    ("run['q1'][0] has the score inf",
     lambda: list(trec_run_lines({"q1": [("a", math.inf)]}, "t"))),
    ("run tag must be one word", lambda: list(trec_run_lines({"q1": [("a", 1.0)]}, "my run"))),
]


@pytest.mark.parametrize(("named", "call"), BAD_METRIC_CALLS,
                         ids=[f"{i}-{named}" for i, (named, _) in enumerate(BAD_METRIC_CALLS)])
def test_metric_helpers_name_the_bad_argument(named: str, call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert named in str(caught.value)


def test_metrics_still_take_numpy_grades_and_scores() -> None:
    import numpy as np

    assert ndcg(("a", "b"), {"b": np.int64(1)}, np.int32(10)) == pytest.approx(1 / math.log2(3))
    run = {"q2": [("d", np.float32(0.5))]}
    assert evaluate_run(run, {"q2": {"d": 1}}).mrr_at_10 == 1.0


@pytest.mark.parametrize("qrels", [{}, {"q1": {}}, {"q1": {"a": 0, "b": -1}}])
def test_evaluating_judgments_without_a_relevant_document_is_refused(
        qrels: dict[str, dict[str, int]]) -> None:
    # It returned means of 0.0 over 0 queries: read as an engine that found nothing.
    with pytest.raises(InvalidInputError, match="nothing to score"):
        evaluate(RANKINGS, qrels)
    # one query's metrics on such judgments stay defined: 0
    assert ndcg(["a"], qrels.get("q1", {})) == recall(["a"], {}) == mrr([], {"a": 0}) == 0.0


def _eval(monkeypatch: pytest.MonkeyPatch, files: tuple[Path, Path, Path], *options: str):  # type: ignore[no-untyped-def]
    """`enginelib eval` over (store, queries, qrels) with the hashing embedder."""
    monkeypatch.setenv("ENGINELIB_EMBEDDER", "hashing-64")
    store_path, queries, qrels = files
    return CliRunner().invoke(main, ["eval", "--store", str(store_path), "--queries",
                                     str(queries), "--qrels", str(qrels), *options])


def test_cli_eval_refuses_judgments_without_a_relevant_document(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zeros = tmp_path / "zeros.tsv"
    zeros.write_text("query-id\tcorpus-id\tscore\nq1\tbrakes\t0\n", encoding="utf-8")
    result = _eval(monkeypatch, (*judged_store[:2], zeros))
    assert result.exit_code == 2 and "nothing to score" in result.output


def test_cli_eval_refuses_a_run_tag_of_two_words_before_writing(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_file = tmp_path / "run.txt"
    result = _eval(monkeypatch, judged_store, "--run-out", str(run_file), "--tag", "my run")
    # a TREC line is split on white space: "my run" made every line 7 columns
    assert result.exit_code == 2 and "run tag must be one word" in result.output
    assert not run_file.exists()


@pytest.mark.parametrize("folder", ["missing", "a-file"])
def test_cli_eval_refuses_a_run_out_it_cannot_write_before_searching(
    judged_store: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    folder: str,
) -> None:
    """The run file was opened after every judged query had been searched: a folder that is
    not there failed the whole evaluation at its end ("Error: the command failed: No such
    file or directory"), its scores never printed. It is refused before the store opens."""
    (tmp_path / "a-file").write_text("not a folder", encoding="utf-8")
    run_file = tmp_path / folder / "run.txt"
    said = ("does not exist" if folder == "missing" else "is not a folder")
    expected = (f"Error: Invalid value for '--run-out': {str(run_file)!r}: its folder "
                f"{str(run_file.parent)!r} {said}; create the folder or name a file in one "
                "that exists\n")
    result = _eval(monkeypatch, judged_store, "--run-out", str(run_file))
    assert result.exit_code == 2 and result.output.endswith(expected), result.output
    # before the store is opened: no store there, and the run file is still what is named
    gone = (tmp_path / "no-store", *judged_store[1:])
    result = _eval(monkeypatch, gone, "--run-out", str(run_file))
    assert result.exit_code == 2 and result.output.endswith(expected), result.output
    (tmp_path / "missing").mkdir()
    result = _eval(monkeypatch, judged_store, "--run-out", str(tmp_path / "missing" / "run.txt"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("option", ["--queries", "--qrels"])
def test_cli_eval_refuses_a_run_out_that_is_one_of_its_inputs(
    judged_store: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, option: str,
) -> None:
    """`--run-out qrels.tsv` (a completion one word off) wrote the ranking over the
    judgments, which were gone for good, and the command said it had scored them."""
    _, queries, qrels = judged_store
    target = queries if option == "--queries" else qrels
    before = target.read_bytes()
    result = _eval(monkeypatch, judged_store, "--run-out", str(target))
    assert result.exit_code == 2, result.output
    assert result.output.endswith(f"Error: --run-out {target} is the {option} file: the run "
                                  "would be written over it; name another file for "
                                  "--run-out\n"), result.output
    assert target.read_bytes() == before


def test_cli_eval_reads_queries_or_judgments_from_standard_input_given_as_dash(
    judged_store: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """`--queries -` / `--qrels -`: piped in, JSONL or TSV told by the first line (there is
    no file name to go by), scored as the files are."""
    import subprocess
    import sys

    store_path, queries, qrels = judged_store
    env = {**os.environ, "ENGINELIB_EMBEDDER": "hashing-64",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def scored(stdin: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "enginelib.cli.main", "eval", "--store", str(store_path),
             "--strategy", "fulltext", "--json", *args], input=stdin, env=env,
            capture_output=True, timeout=120)

    def scores(run: subprocess.CompletedProcess[bytes]) -> dict:
        assert run.returncode == 0, run.stderr
        return {k: v for k, v in json.loads(run.stdout).items() if k != "seconds"}

    from_files = scores(scored(b"", "--queries", str(queries), "--qrels", str(qrels)))
    assert from_files["queries"] == 3
    tsv = b"\n\nq1\tbrake pads rotors\nq2\terasure of personal data\nq3\tespresso coffee\n"
    for stdin, args in ((queries.read_bytes(), ("--queries", "-", "--qrels", str(qrels))),
                        (b"\xef\xbb\xbf" + tsv, ("--queries", "-", "--qrels", str(qrels))),
                        (qrels.read_bytes(), ("--queries", str(queries), "--qrels", "-"))):
        assert scores(scored(stdin, *args)) == from_files, args

    bad = scored(b'{"_id": "q1", "text": "brake"}\nnot json\n', "--queries", "-", "--qrels",
                 str(qrels))
    assert bad.returncode == 2
    assert bad.stderr.decode().startswith(
        "Error: could not read the queries: <stdin>:2: not JSON")
    both = scored(b"", "--queries", "-", "--qrels", "-")
    assert both.returncode == 2 and b"standard input holds one of them" in both.stderr
    empty = scored(b"", "--queries", str(queries), "--qrels", "-")
    assert empty.returncode == 2 and b"Error: <stdin> holds no judgments" in empty.stderr


def test_read_queries_from_an_open_text_tells_jsonl_from_tsv_by_its_first_line() -> None:
    import io

    jsonl = io.StringIO('\n{"_id": "q1", "text": "brake pads"}\n')
    assert read_queries("<stdin>", handle=jsonl) == {"q1": "brake pads"}
    tsv = io.StringIO("q1\t{not json} brake pads\nq2\trotors\n")
    assert read_queries("<stdin>", handle=tsv) == {"q1": "{not json} brake pads", "q2": "rotors"}
    assert read_queries("<stdin>", handle=io.StringIO("")) == {}
    assert not tsv.closed  # the caller's to close
    assert read_qrels("<stdin>", handle=io.StringIO("q1 0 a 2\n")) == {"q1": {"a": 2}}


@pytest.mark.parametrize("read", [read_qrels, read_queries])
def test_reading_a_file_that_is_not_utf8_names_it(tmp_path: Path, read) -> None:  # type: ignore[no-untyped-def]
    # Python's bare UnicodeDecodeError ("'utf-8' codec can't decode byte 0xff ..."), naming
    # no file: only the CLI named it
    import io

    path = tmp_path / "input.tsv"
    path.write_bytes(b"q1\tbrakes\t1\n\xff\xfe\n")
    with pytest.raises(InvalidInputError, match=f"{path}: not UTF-8 text .*save it as UTF-8"):
        read(path)
    piped = io.TextIOWrapper(io.BytesIO(path.read_bytes()), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="^-: not UTF-8 text"):
        read("-", handle=piped)


def test_a_grade_too_large_for_the_dcg_is_refused() -> None:
    # three documents graded 10**308 overflowed the DCG's float sum: nDCG was NaN for the
    # ideal ranking and 0.0 for one with a relevant document first; 10**400 an OverflowError
    import io

    huge = {"a": 10**308, "b": 10**308, "c": 10**308}
    for call in (lambda: ndcg(["a", "b", "c"], huge), lambda: ndcg(["a"], {"a": 10**400}),
                 lambda: evaluate({"q1": ["b", "x"]}, {"q1": huge}),
                 lambda: recall(["a"], {"a": -(2**31)})):
        with pytest.raises(InvalidInputError, match="a relevance grade is a small whole number"):
            call()
    with pytest.raises(InvalidInputError, match=r"^qrels\.tsv:2: the grade is '1e308'"):
        read_qrels("qrels.tsv", handle=io.StringIO("q1 a 1\nq1 b 1e308\n"))
    assert ndcg(["a"], {"a": 2**31 - 1}) == 1.0
    assert read_qrels("q", handle=io.StringIO("q1 0 a 3\n")) == {"q1": {"a": 3}}


def test_a_score_or_gain_past_floats_range_is_refused_not_an_overflow() -> None:
    # math.isfinite(10**400) raised OverflowError: the check meant to refuse it crashed
    for call, named in (
            (lambda: evaluate_run({"q1": [("a", 10**400)]}, QRELS), r"run\['q1'\]\[0\] has the score"),
            (lambda: list(trec_run_lines({"q1": [("a", -(10**400))]}, "t")), "has the score"),
            (lambda: documents_by_best_chunk([("a", 10**400)]), r"hits\[0\] has the score"),
            (lambda: dcg([1, 10**400]), r"gains\[1\] must be a finite number")):
        with pytest.raises(InvalidInputError, match=named):
            call()
    assert dcg([10**300]) == pytest.approx(1e300)


@pytest.mark.parametrize(("run", "named"), [
    ({"q 1": [("a", 1.0)]}, "query id 'q 1'"),
    ({"q1": [("a", 1.0), ("my notes.md", 0.5)]}, r"run\['q1'\]\[1\]'s document id 'my notes.md'"),
    ({"": [("a", 1.0)]}, "query id ''"),
    ({"q1": [("", 1.0)]}, "document id ''"),
    ({"q1": [("a\tb", 1.0)]}, r"document id 'a\\tb'"),
])
def test_a_run_whose_ids_are_not_one_word_is_not_written_as_trec(run, named) -> None:  # type: ignore[no-untyped-def]
    # 'q 1 Q0 a 1 1.000000 t' has 7 columns: trec_eval stops, or reads '1' as the query id;
    # the tag was checked for this, the ids (a document id is a file path) never were
    with pytest.raises(InvalidInputError, match=f"{named} cannot be written as a TREC run"):
        trec_run_lines(run, "t")
    assert evaluate_run(run, {qid: {doc: 1 for doc, _ in ranked} for qid, ranked in run.items()}
                        ).queries == 1  # scoring such ids is fine


def test_a_fractional_grade_is_refused_not_cut_to_a_whole_one() -> None:
    # int(float("0.5")) read a judgment of 0.5 as 0, not relevant, and 1.7 as 1, unseen
    import io

    for grade in ("0.5", "1.7", "-0.5"):
        with pytest.raises(InvalidInputError, match=f"^qrels:2: grade '{grade}' is not a whole"):
            read_qrels("qrels", handle=io.StringIO(f"q1 a 1\nq1 b {grade}\n"))
    assert read_qrels("qrels", handle=io.StringIO("q1 a 1.0\nq1 0 b 2e0\n")) == {
        "q1": {"a": 1, "b": 2}}


def test_a_pair_judged_twice_with_other_grades_is_refused() -> None:
    # the later line replaced the earlier grade without a word (read_queries refuses a query
    # id given again with other text); merged judgments of two assessors did this
    import io

    with pytest.raises(InvalidInputError, match=r"^qrels:3: query 'q1' judges 'a' again, 0 "
                                                r"here and 2 on line 1"):
        read_qrels("qrels", handle=io.StringIO("q1 0 a 2\nq1 0 b 1\nq1 0 a 0\n"))
    # the same judgment twice is harmless
    assert read_qrels("qrels", handle=io.StringIO("q1 a 2\nq1 a 2\nq2 a 0\n")) == {
        "q1": {"a": 2}, "q2": {"a": 0}}


def _scored_reference(qrels: Qrels, run: dict[str, list[tuple[str, float]]],
                      provider: str | None = None) -> dict[str, float]:
    import ir_measures
    from ir_measures import RR, R, nDCG

    measures = [nDCG @ 10, R @ 100, RR @ 10]
    scored = [ir_measures.ScoredDoc(qid, doc, score) for qid, pairs in run.items()
              for doc, score in pairs]
    judged = [ir_measures.Qrel(qid, doc, grade) for qid, docs in qrels.items()
              for doc, grade in docs.items()]
    engine = ir_measures if provider is None else ir_measures.providers.registry[provider]
    agg = engine.calc_aggregate(measures, judged, scored)
    return {"ndcg@10": agg[nDCG @ 10], "recall@100": agg[R @ 100], "mrr@10": agg[RR @ 10]}


def test_a_run_is_ranked_by_its_scores_as_trec_eval_ranks_it() -> None:
    # evaluate_run read a run's entries in their order and dropped the scores: the pairs
    # [("a", 0.1), ("b", 0.9)] put a first, where ir-measures and trec_eval put b
    rng = random.Random(11)
    docs = [f"d{i}" for i in range(80)]
    qrels: Qrels = {}
    run: dict[str, list[tuple[str, float]]] = {}
    for q in range(30):
        judged = rng.sample(docs, rng.randint(1, 10))
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 2, 3]) for d in judged}
        qrels[f"q{q}"][judged[0]] = max(1, qrels[f"q{q}"][judged[0]])
        ranked = rng.sample(docs, rng.randint(5, 60))
        scores = rng.sample(range(1000), len(ranked))
        run[f"q{q}"] = [(doc, score / 7) for doc, score in zip(ranked, scores, strict=True)]
    ours = evaluate_run(run, qrels)
    reference = _scored_reference(qrels, run)
    assert ours.per_query != evaluate({q: [d for d, _ in p] for q, p in run.items()},
                                      qrels).per_query  # the order given is not the ranking
    assert ours.ndcg_at_10 == pytest.approx(reference["ndcg@10"], abs=1e-9)
    assert ours.recall_at_100 == pytest.approx(reference["recall@100"], abs=1e-9)
    assert ours.mrr_at_10 == pytest.approx(reference["mrr@10"], abs=1e-9)
    # equal scores: trec_eval (pytrec_eval) breaks the tie by document id, the larger first
    tied = {"q1": [("a", 1.0), ("c", 1.0), ("e", 1.0), ("b", 2.0)]}
    judged_tied = {"q1": {"c": 1, "a": 2}}
    ours = evaluate_run(tied, judged_tied)
    reference = _scored_reference(judged_tied, tied, "pytrec_eval")
    assert ours.ndcg_at_10 == pytest.approx(reference["ndcg@10"], abs=1e-9)
    assert ours.mrr_at_10 == pytest.approx(reference["mrr@10"], abs=1e-9) == 1 / 3
    # written as TREC lines, the ranks are those same ranks
    assert list(trec_run_lines(tied, "t")) == [
        "q1 Q0 b 1 2.000000 t", "q1 Q0 e 2 1.000000 t", "q1 Q0 c 3 1.000000 t",
        "q1 Q0 a 4 1.000000 t"]


def test_a_stores_run_keeps_its_order_in_its_scores() -> None:
    # MMR reorders hits below others with higher fused scores: the run, now ranked by its
    # scores, must still rank the documents as the search did
    records = [{"id": f"d{i}", "text": f"brake pads rotor fluid {'brake ' * (i % 3)} wear {i}"}
               for i in range(30)]
    with enginelib.memory(records, embedder=HashingEmbedder(32)) as store:
        queries = {"q1": "brake pads wear", "q2": "rotor fluid"}
        searched = store.search_batch(list(queries.values()), limit=100, chunks_per_doc=1,
                                      answerability_threshold=None, log=False, mmr=True)
        run = rank_documents(store, queries, mmr=True).run
    for pairs, response in zip(run.values(), searched, strict=True):
        assert [doc for doc, _ in pairs] == [hit.document_id for hit in response.hits]
        assert all(a[1] > b[1] for a, b in itertools.pairwise(pairs)), pairs


def test_a_stores_run_keeps_its_order_for_trec_eval() -> None:
    # trec_eval (pytrec_eval, ir-measures) reads a score as a float32: the scores MMR's order
    # was kept by, one double step apart, were one number there, and the tie went to the
    # larger document id (a run nDCG@10 0.665 by `enginelib eval` scored 0.675 by trec_eval)
    lowered = scores_in_order([("a", 1.0), ("b", 1.0), ("c", 0.5)])
    assert [doc for doc, _ in lowered] == ["a", "b", "c"]
    judged = {"q1": {"a": 1}}
    reference = _scored_reference(judged, {"q1": lowered}, "pytrec_eval")
    assert reference["mrr@10"] == evaluate_run({"q1": lowered}, judged).mrr_at_10 == 1.0
    records = [{"id": f"d{i}", "text": f"brake pads rotor fluid {'brake ' * (i % 3)} wear {i}"}
               for i in range(30)]
    with enginelib.memory(records, embedder=HashingEmbedder(32)) as store:
        queries = {"q1": "brake pads wear", "q2": "rotor fluid"}
        run = rank_documents(store, queries, mmr=True).run
    for pairs in run.values():
        singles = [np.float32(score) for _, score in pairs]
        assert all(a > b for a, b in itertools.pairwise(singles)), pairs
    # each query's every document judged, graded by its rank: any reordering shows in nDCG
    graded = {qid: {doc: len(pairs) - i for i, (doc, _) in enumerate(pairs)}
              for qid, pairs in run.items()}
    reference = _scored_reference(graded, run, "pytrec_eval")
    assert reference["ndcg@10"] == pytest.approx(evaluate_run(run, graded).ndcg_at_10, abs=1e-9)
    assert evaluate_run(run, graded).ndcg_at_10 == pytest.approx(1.0)


def test_a_written_run_keeps_its_order_for_trec_eval() -> None:
    # six decimals wrote 0.1234568 and 0.1234567 as 0.123457 (and a store run's lowered
    # scores as their neighbour's): trec_eval read ties and ranked them by document id
    run = {"q1": [("a", 0.1234568), ("b", 0.1234567), ("c", 0.1234567), ("d", 0.5)],
           "q2": scores_in_order([("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 2e-7), ("e", 0.0)])}
    lines = list(trec_run_lines(run, "t"))
    assert lines[:4] == ["q1 Q0 d 1 0.500000 t", "q1 Q0 a 2 0.123457 t",
                         "q1 Q0 c 3 0.123456702 t", "q1 Q0 b 4 0.123456702 t"]
    read: dict[str, list[tuple[str, float]]] = {}
    for line in lines:
        qid, _, doc, _, score, _ = line.split()
        read.setdefault(qid, []).append((doc, float(score)))
    for qid, pairs in run.items():
        for judged_doc, _ in pairs:  # each document judged relevant alone: its rank shows
            judged = {qid: {judged_doc: 1}}
            ours = evaluate_run({qid: pairs}, judged).mrr_at_10
            assert _scored_reference(judged, {qid: read[qid]}, "pytrec_eval")["mrr@10"] == ours

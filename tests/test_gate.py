"""The answerability gate: its pure functions, its decisions on real stores (DuckDB, hnswlib,
Tantivy; hashing embedder), bad input, and what the response and the CLI carry."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import enginelib
from enginelib import NO_RELEVANT_SOURCES
from enginelib.cli.main import main as cli
from enginelib.search import gate
from tests.helpers import doc, open_test_store

# -- pure functions -------------------------------------------------------------------


def test_bm25_idf_is_highest_for_unseen_words_and_falls_with_frequency() -> None:
    assert gate.bm25_idf(0, 100) > gate.bm25_idf(1, 100) > gate.bm25_idf(50, 100) > gate.bm25_idf(100, 100)
    assert gate.bm25_idf(0, 100) == pytest.approx(math.log1p(100.5 / 0.5))
    assert gate.bm25_idf(500, 100) == gate.bm25_idf(100, 100)  # df is capped at N


def test_coverage_weighs_words_by_idf_and_names_the_missing_ones() -> None:
    rare = gate.QueryTerm("erasure", 4.0, frozenset({"erasur"}))
    common = gate.QueryTerm("data", 1.0, frozenset({"data"}))
    value, missing = gate.coverage([rare, common], {"data", "personal"})
    assert value == pytest.approx(1.0 / 5.0) and missing == ("erasure",)
    value, missing = gate.coverage([rare, common], {"erasur"})
    assert value == pytest.approx(4.0 / 5.0) and missing == ("data",)
    assert gate.coverage([], {"data"}) == (None, ())


def test_messages_show_few_missing_words_each_cut_to_a_readable_length() -> None:
    words = ("é" * 3000, "brake", "pads", "rotor", "caliper", "fluid", "hose")
    shown = gate.shown_words(words, 5)
    assert shown.startswith("é" * 39 + "…, brake, pads") and shown.endswith("caliper (+2 more)")
    assert len(shown) < 100
    evidence = gate.GateEvidence(missing_words=words)
    assert "é" * 41 not in gate.describe(evidence) and "(+2 more)" in gate.describe(evidence)
    assert gate.shown_words(("a", "b"), 5) == "a, b"


def test_a_hyphenated_word_is_weighed_once_through_its_parts() -> None:
    def term(word: str) -> gate.QueryTerm:
        return gate.QueryTerm(word, 5.0, frozenset({word}))

    compound = [term("african-american"), term("african"), term("american"), term("diet")]
    assert [t.word for t in gate.one_term_per_word(compound)] == ["african", "american", "diet"]
    # "l'effacement": the elided article is too short to index, the word carries it
    assert [t.word for t in gate.one_term_per_word([term("l'effacement"), term("effacement")])] == [
        "effacement"]
    # a code with no part of its own among the terms stays one term
    assert [t.word for t in gate.one_term_per_word([term("covid-19"), term("covid")])] == [
        "covid-19", "covid"]
    assert [t.word for t in gate.one_term_per_word([term("1k0615301m")])] == ["1k0615301m"]


def test_a_hyphenated_query_word_is_covered_by_its_unhyphenated_spelling(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s", chunking=None)
    store.ingest_documents([
        doc("a", "Hypertension among African American women on a plant based diet.", title="Diet"),
        doc("b", "Brake pads wear faster in city traffic.", title="Brakes"),
    ])
    response = store.search("African-American hypertension")
    assert response.gate is not None
    evidence = response.gate.evidence
    assert evidence.coverage == pytest.approx(1.0) and evidence.missing_words == ()
    assert "african-american" not in evidence.content_words
    store.close()


@pytest.mark.parametrize("question", [
    "Que dit le considérant 116 ?", "Que prévoit le considérant 116 ?",
    "What does recital 116 say?",
])
def test_the_verb_asking_what_a_text_says_is_not_a_missing_word(tmp_path: Path, question: str) -> None:
    # The provision never says "dit" or "say"; counting the verb as a missing content word
    # (rare in the corpus, so heavy by IDF) refused questions that name a provision.
    store = open_test_store(tmp_path / "s", chunking=None)
    store.ingest_documents([
        doc("a", "Considérant 116 : coopération internationale entre autorités de contrôle. "
                 "Recital 116: international cooperation between supervisory authorities.",
            title="Considérant 116"),
        doc("b", "Les plaquettes de frein s'usent plus vite en ville.", title="Freins"),
    ])
    response = store.search(question)
    assert response.gate is not None
    assert not {"dit", "prévoit", "say"} & set(response.gate.evidence.content_words)
    assert response.gate.evidence.missing_words == ()
    store.close()


def test_agreement_is_the_overlap_of_the_two_top_lists() -> None:
    assert gate.agreement([1, 2, 3], [3, 2, 9]) == pytest.approx(2 / 3)
    assert gate.agreement([1, 2], []) is None
    assert gate.agreement(list(range(20)), list(range(5, 25)), n=10) == pytest.approx(0.5)


def test_similarity_z_compares_the_best_cosine_with_sampled_passages() -> None:
    sample = np.array([0.70, 0.72, 0.74, 0.76, 0.78])
    z = gate.similarity_z(0.86, sample)
    assert z == pytest.approx((0.86 - 0.74) / np.std(sample))
    assert gate.similarity_z(0.9, np.array([0.5])) is None  # too few to tell a spread
    assert gate.similarity_z(0.9, np.full(8, 0.5)) is None  # no spread at all


def test_semantic_evidence_is_calibrated_per_embedder_with_a_fallback() -> None:
    low, high = gate.COSINE_LEVELS["e5-small"]["same"]
    assert gate.semantic_evidence(low, 0.0, "e5-small") == 0.0
    assert gate.semantic_evidence(high, 0.0, "e5-small") == 1.0
    # across languages the same cosine is stronger evidence (e5's cosines sit lower there)
    middle = (low + high) / 2
    assert gate.semantic_evidence(middle, None, "e5-small", cross_lingual=True) > \
        gate.semantic_evidence(middle, None, "e5-small")
    # an unknown embedder's cosine range is not assumed: its z-score decides
    z_low, z_high = gate.FALLBACK_Z_LEVELS
    assert gate.semantic_evidence(0.99, z_low, "some-unknown-model") == 0.0
    assert gate.semantic_evidence(0.01, z_high, "some-unknown-model") == 1.0
    assert gate.semantic_evidence(None, None, "some-unknown-model") is None


def test_languages_compare_on_their_prefix() -> None:
    assert gate.same_language("fr", "fr-CA") and gate.same_language("en", None)
    assert not gate.same_language("en", "fr")


def test_decision_carries_reason_code_and_numbers() -> None:
    strong = gate.GateEvidence(similarity=0.88, similarity_z=9.0, semantic=1.0, coverage=0.9,
                               agreement=0.5, content_words=("erasure",))
    weak = gate.GateEvidence(similarity=0.2, similarity_z=0.5, semantic=0.0, coverage=0.1,
                             agreement=0.0, content_words=("bouillabaisse",),
                             missing_words=("bouillabaisse",))
    yes = gate.decide(strong, gate.DEFAULT_THRESHOLD)
    no = gate.decide(weak, gate.DEFAULT_THRESHOLD)
    assert yes.answerable and yes.reason_code == gate.ANSWERED and yes.score == 1.0
    assert not no.answerable and no.reason_code == gate.WEAK_EVIDENCE
    assert "bouillabaisse" in no.message and "threshold" in no.message
    assert gate.decide(weak, None).reason_code == gate.GATE_OFF
    data = no.to_dict()
    assert data["decision"] == "refuse" and data["evidence"]["missing_words"] == ["bouillabaisse"]
    json.dumps(data)  # plain JSON


# -- on a real store ------------------------------------------------------------------

PART = "1K0615301M"


@pytest.fixture(scope="module")
def parts_store(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    """60 near-identical brake-disc sheets; only one carries the part number asked for."""
    store = open_test_store(tmp_path_factory.mktemp("gate") / "s", chunking=None)
    docs = []
    for i in range(60):
        number = PART if i == 37 else f"1K0615{301 + i + 100:03d}{'ABCDEFGH'[i % 8]}"
        docs.append(doc(
            f"disc-{i:02d}", f"Front brake disc {number}, ventilated, 312 mm diameter, for "
            f"Golf and Octavia platforms. Check run-out and minimum thickness at every service.",
            title=f"Brake disc {number}", metadata={"truth_level": "L1"},
        ))
    docs.append(doc("gdpr", "The data subject shall have the right to obtain from the controller "
                    "the erasure of personal data concerning him or her without undue delay.",
                    title="Right to erasure", metadata={"truth_level": "L1"}))
    store.ingest_documents(docs)
    yield store
    store.close()


def test_part_number_is_answered_in_the_default_configuration(parts_store: enginelib.Store) -> None:
    response = parts_store.search(PART)
    assert response.ok, response.reason
    assert response.hits[0].document_id == "disc-37"
    assert response.gate is not None and response.gate.reason_code == gate.ANSWERED
    assert response.gate.evidence.coverage == pytest.approx(1.0)


@pytest.mark.parametrize("strategy", ["hybrid", "fulltext"])
def test_a_commit_hash_is_answered_in_the_default_configuration(tmp_path: Path, strategy: str) -> None:
    # 40 hex digits: under the analyzers' old limit no text index held it, so a full-text
    # search was refused and a hybrid one rested on the vectors alone.
    hashes = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(30)]
    store = open_test_store(tmp_path / "s", chunking=None)
    store.ingest_documents([doc(f"release-{i}", f"Release notes: commit {h} fixes the brake "
                                f"sensor calibration.", title=f"Release {i}")
                            for i, h in enumerate(hashes)])
    response = store.search(hashes[17], strategy=strategy)
    assert response.ok, response.reason
    assert response.hits[0].document_id == "release-17"
    assert response.gate is not None and response.gate.reason_code == gate.ANSWERED
    store.close()


@pytest.mark.parametrize("strategy", ["hybrid", "vector", "fulltext"])
def test_gate_applies_to_every_strategy(parts_store: enginelib.Store, strategy: str) -> None:
    found = parts_store.search(f"brake disc {PART}", strategy=strategy)
    assert found.gate is not None and found.gate.threshold == gate.DEFAULT_THRESHOLD
    evidence = found.gate.evidence
    assert evidence.coverage is not None  # every strategy's hits are read for the query's words
    assert (evidence.similarity is not None) == (strategy != "fulltext")
    assert (evidence.agreement is not None) == (strategy == "hybrid")
    if strategy != "vector":  # the hashing embedder cannot know a part number
        assert found.ok and found.hits[0].document_id == "disc-37"
    strict = parts_store.search(f"brake disc {PART}", strategy=strategy, answerability_threshold=0.999)
    assert strict.gate is not None and strict.gate.threshold == 0.999
    assert strict.ok == (strict.gate.score >= 0.999)
    nowhere = parts_store.search("bouillabaisse saffron recipe", strategy="fulltext")
    assert nowhere.status == NO_RELEVANT_SOURCES and nowhere.gate is not None


def test_explicit_threshold_and_no_gate(parts_store: enginelib.Store) -> None:
    strict = parts_store.search("brake disc thickness", answerability_threshold=0.999)
    assert strict.gate is not None
    if not strict.ok:
        assert strict.gate.reason_code == gate.BELOW_THRESHOLD and "threshold" in (strict.reason or "")
    off = parts_store.search("bouillabaisse saffron recipe", answerability_threshold=None)
    assert off.ok and off.gate is not None and off.gate.reason_code == gate.GATE_OFF


@pytest.mark.parametrize("query", [
    "Article 17",  # an article number alone
    "the of and to",  # English stop words only
    "le la les de du",  # French stop words only
    "droit à l'effacement erasure of personal data",  # mixed languages
    "Recht auf Löschung personenbezogener Daten",  # a language the store has no analyzer for
    "数据删除的权利",  # a script no analyzer splits into words
    "zzqxv plumbus grobnak",  # words that appear nowhere
])
@pytest.mark.parametrize("strategy", ["hybrid", "fulltext"])
def test_bad_input_gets_a_defined_answer(parts_store: enginelib.Store, query: str, strategy: str) -> None:
    response = parts_store.search(query, strategy=strategy)
    assert response.status in ("ok", NO_RELEVANT_SOURCES)
    assert response.gate is not None
    if response.ok:
        assert response.hits and response.gate.decision == "answer"
    else:
        assert response.hits == () and response.reason and response.gate.decision == "refuse"
        assert response.gate.reason_code in (gate.WEAK_EVIDENCE, gate.NO_MATCH, gate.ONLY_STOP_WORDS)


def test_only_stop_words_say_so(parts_store: enginelib.Store) -> None:
    response = parts_store.search("the of and to", strategy="fulltext")
    assert not response.ok
    assert response.gate is not None and response.gate.reason_code in (gate.ONLY_STOP_WORDS, gate.NO_MATCH)
    assert response.gate.evidence.content_words == ()


@pytest.mark.parametrize("query", ["the of and to", "What is it?", "le la les de du", "Why?"])
@pytest.mark.parametrize("strategy", ["hybrid", "vector"])
def test_only_stop_words_are_refused_even_where_a_vector_is_close(
    parts_store: enginelib.Store, query: str, strategy: str
) -> None:
    # an embedding finds *something* near any text; a query with no content word was
    # answered on that cosine alone
    response = parts_store.search(query, strategy=strategy)
    assert not response.ok and response.hits == ()
    assert response.gate is not None and response.gate.reason_code == gate.ONLY_STOP_WORDS
    assert "only stop words" in (response.reason or "")


def test_only_function_words_tells_acronyms_and_other_scripts_apart() -> None:
    from enginelib.search.quotes import only_function_words

    assert only_function_words("the of and") and only_function_words("Est-ce quoi ?")
    # "WHO" and "IT" are acronyms; a script no analyzer splits is not stop words
    for query in ("WHO", "IT", "M&M's", "数据删除的权利", "Article 17", "", "?!"):
        assert not only_function_words(query), query


def test_words_that_appear_nowhere_count_as_missing(parts_store: enginelib.Store) -> None:
    # Hybrid still returns vector neighbours; the gate sees that none of the words is there.
    response = parts_store.search("zzqxv plumbus grobnak")
    assert response.gate is not None and response.gate.threshold is not None
    assert response.gate.evidence.coverage == 0.0
    assert set(response.gate.evidence.missing_words) == {"zzqxv", "plumbus", "grobnak"}
    # with the gate off nobody weighs the evidence, so none is gathered (it costs ms)
    off = parts_store.search("zzqxv plumbus grobnak", answerability_threshold=None)
    assert off.gate is not None and off.gate.reason_code == gate.GATE_OFF
    assert off.gate.evidence == gate.GateEvidence()


def test_response_dict_and_cli_carry_the_gate(parts_store: enginelib.Store, tmp_path: Path) -> None:
    data = parts_store.search(PART).to_dict()
    assert data["gate"]["decision"] == "answer" and data["gate"]["reason_code"] == gate.ANSWERED
    assert set(data["gate"]["evidence"]) >= {"similarity", "coverage", "agreement", "semantic"}

    store_path = tmp_path / "cli-store"
    with open_test_store(store_path, chunking=None) as store:
        store.ingest_documents([doc("disc", f"Front brake disc {PART}, ventilated.", title="Disc",
                                    metadata={"truth_level": "L1"})])
    runner = CliRunner(env={"ENGINELIB_EMBEDDER": "hashing-64"})
    result = runner.invoke(cli, ["search", PART, "--store", str(store_path), "--json",
                                 "--strategy", "fulltext"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["gate"]["decision"] == "answer" and out["gate"]["evidence"]["coverage"] == 1.0
    explained = runner.invoke(cli, ["search", PART, "--store", str(store_path), "--explain",
                                    "--strategy", "fulltext"])
    assert "gate: answer (ANSWERED)" in explained.output and "coverage 1.0000" in explained.output


def test_an_empty_store_says_so_rather_than_that_nothing_matched(tmp_path: Path) -> None:
    store = open_test_store(tmp_path / "s")
    response = store.search("brake pads")
    assert not response.ok and response.gate is not None
    assert response.gate.reason_code == gate.NO_MATCH
    assert "holds no documents yet" in (response.reason or "")
    store.ingest_documents([doc("a", "Tyres need their pressure checked.")])
    store.delete_document("a")
    assert "holds no documents yet" in (store.search("brake pads").reason or "")
    store.close()


@pytest.mark.parametrize("threshold", [gate.DEFAULT_THRESHOLD, None])
def test_every_refusal_carries_a_reason_code(parts_store: enginelib.Store, threshold: float | None) -> None:
    # filters that keep no chunk, and a page past the last result, were refused with
    # gate None: no reason_code for a program to switch on (the CLI's JSON lacked it)
    nothing = parts_store.search("brake pads", filters={"tags": ["no-such-tag"]},
                                 answerability_threshold=threshold)
    past = parts_store.search(PART, strategy="fulltext", offset=500,
                              answerability_threshold=threshold)  # answered on page one
    for response in (nothing, past):
        assert response.status == NO_RELEVANT_SOURCES and response.hits == ()
        assert response.gate is not None and response.gate.decision == "refuse"
        assert response.gate.reason_code == gate.NO_MATCH
        assert response.gate.message == response.reason
    assert nothing.reason == "no chunk matches the truth levels and filters"
    assert (past.reason or "").startswith("offset 500 is past the last result")

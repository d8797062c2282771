"""Fusion weighs each method by its evidence; definition questions look for the definitions.

Pure functions first (``fusion.method_weights``, weighted RRF), then the engine: an English
question over French text gives BM25 the weight of what it covered, a French one the full
weight; then the definition twin of query understanding over the regulatory corpus (BM25
is real, the embedder hashed). The regulatory figures are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json

import pytest

import enginelib
from enginelib import HashingEmbedder, Store
from enginelib.search import fusion, fusion_evidence
from enginelib.search.rewrite import definition_variant
from enginelib.types import LoadedDocument
from tests.helpers import DATASETS

# -- pure functions ------------------------------------------------------------------


def test_one_language_keeps_plain_rrf_weights() -> None:
    assert fusion.method_weights("en", "en", 0.1) == {"vector": 1.0, "bm25": 1.0}
    assert fusion.method_weights("fr", "fr-CA", 0.0) == {"vector": 1.0, "bm25": 1.0}
    # an unknown passage language is read as the query's: nothing says BM25 is noise
    assert fusion.method_weights("en", None, 0.0) == {"vector": 1.0, "bm25": 1.0}


def test_across_languages_bm25_weighs_what_its_best_hit_covered() -> None:
    assert fusion.method_weights("en", "fr", 0.25) == {"vector": 1.0, "bm25": 0.25}
    assert fusion.method_weights("en", "fr", 0.0)["bm25"] == 0.0
    assert fusion.method_weights("en", "fr", 1.7)["bm25"] == 1.0  # clipped to 0..1
    # no content word to weigh: coverage says nothing, BM25 keeps its weight
    assert fusion.method_weights("en", "fr", None)["bm25"] == 1.0


def test_weighted_rrf_is_the_canonical_formula_with_weights() -> None:
    rankings = {"vector": [(1, 0.9), (2, 0.8)], "bm25": [(2, 7.0), (3, 5.0)]}
    plain = fusion.rrf(rankings, 60)
    assert plain == fusion.rrf(rankings, 60, {"vector": 1.0, "bm25": 1.0})
    assert plain[2] == pytest.approx(1 / 62 + 1 / 61)
    weighted = fusion.rrf(rankings, 60, {"vector": 1.0, "bm25": 0.5})
    assert weighted[2] == pytest.approx(1 / 62 + 0.5 / 61)
    assert weighted[3] == pytest.approx(0.5 / 62)
    # a method with no weight cannot reorder: the vector order stands, BM25-only last
    silent = fusion.rrf(rankings, 60, {"vector": 1.0, "bm25": 0.0})
    assert [label for label, _ in fusion.order(silent)] == [1, 2, 3]


# -- cross-lingual weighting in the engine -------------------------------------------
# The hashing embedder (the Protocol seam) makes the vector ranking deterministic; BM25 is
# real. What is checked is the weight each method got, read back from the fused scores.

FRENCH = [
    ("art-17", "Article 17 — Droit à l'effacement",
     "La personne concernée a le droit d'obtenir du responsable du traitement l'effacement, "
     "dans les meilleurs délais, de données à caractère personnel la concernant."),
    ("tourisme", "Office de tourisme",
     "Point information de l'office de tourisme : information sur les randonnées, contact "
     "par téléphone, information sur les horaires des musées."),
    ("art-20", "Article 20 — Droit à la portabilité des données",
     "Les personnes concernées ont le droit de recevoir les données les concernant dans un "
     "format structuré, couramment utilisé et lisible par machine."),
]


@pytest.fixture(scope="module")
def french(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = enginelib.open(tmp_path_factory.mktemp("xl") / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([
        LoadedDocument(id=doc_id, text=text, title=title, language="fr")
        for doc_id, title, text in FRENCH
    ])
    return store


def _bm25_weight(store: Store, query: str) -> tuple[float, str]:
    """The weight BM25's best hit got in the engine's RRF, from its fused score."""
    options = {"answerability_threshold": None, "limit": 10}
    hybrid = store.search(query, strategy="hybrid", **options)
    best = min((h for h in hybrid.hits if h.scores.bm25_rank is not None),
               key=lambda h: h.scores.bm25_rank or 0)
    assert best.scores.bm25_rank == 1
    vector_part = 0.0 if best.scores.vector_rank is None else 1 / (60 + best.scores.vector_rank)
    return (best.scores.fused - vector_part) * 61, best.document_id


def test_across_languages_bm25_counts_as_much_as_it_covered(french: Store) -> None:
    # English: only "information" (a French word too) matches; "erased" and "tourist"
    # are nowhere in the French text, so BM25 covered a part of the question's words.
    weight, doc_id = _bm25_weight(french, "Can tourist information be erased?")
    assert doc_id == "tourisme"
    view = french.view()
    text = french._text_index.search(["Can tourist information be erased?"], 10)[0]
    coverage = fusion_evidence.bm25_coverage(french, view, "Can tourist information be erased?", text)
    assert coverage is not None and 0.0 < coverage < 0.6
    assert weight == pytest.approx(coverage, abs=1e-6)


def test_in_the_passages_language_bm25_keeps_its_full_weight(french: Store) -> None:
    weight, doc_id = _bm25_weight(french, "Les informations de l'office de tourisme sont-elles effacées ?")
    assert doc_id == "tourisme"
    assert weight == pytest.approx(1.0, abs=1e-6)


# -- definition questions ----------------------------------------------------------------


@pytest.mark.parametrize(("question", "twin"), [
    ("How is pseudonymisation defined?", "How is pseudonymisation defined? definitions"),
    ("What is meant by a personal data breach?",
     "What is meant by a personal data breach? definitions"),
    ("Qu'entend-on par violation de données ?", "Qu'entend-on par violation de données ? définitions"),
    ("Comment la pseudonymisation est-elle définie ?",
     "Comment la pseudonymisation est-elle définie ? définitions"),
])
def test_a_definition_question_gets_a_definitions_twin(question: str, twin: str) -> None:
    assert definition_variant(question) == twin


@pytest.mark.parametrize("question", [
    "The mean suicide rate in women is higher after miscarriage",  # a statistic
    "Qu'est-ce qui provoque les aurores boréales ?",  # "what causes", not "what is"
    "Who must appoint a data protection officer?",
])
def test_other_questions_get_none(question: str) -> None:
    assert definition_variant(question) is None


@pytest.fixture(scope="module")
def regulatory(tmp_path_factory: pytest.TempPathFactory) -> Store:
    with (DATASETS / "regulatory" / "corpus.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    store = enginelib.open(tmp_path_factory.mktemp("def") / "s", embedder=HashingEmbedder(64))
    store.ingest_documents([
        LoadedDocument(id=r["_id"], text=r["text"], title=r["title"], language="en") for r in rows
    ])
    return store


def test_a_definition_question_finds_the_definitions_article(regulatory: Store) -> None:
    # Article 4 holds every definition under the heading "Definitions"; Articles 33-34
    # (notifying a breach) say "personal data breach" more often.
    question = "What is meant by a personal data breach?"
    options = {"strategy": "fulltext", "answerability_threshold": None, "limit": 5,
               "chunks_per_doc": 1}
    response = regulatory.search(question, **options)
    assert response.sub_queries == (question, f"{question} definitions")
    assert "gdpr-art-4" in [h.document_id for h in response.hits][:3]
    as_typed = regulatory.search(question, rewrite=False, **options)
    assert "gdpr-art-4" not in [h.document_id for h in as_typed.hits]


def test_keywords_alone_have_no_language_to_compare(french: Store) -> None:
    from enginelib.language import query_language

    assert query_language("tourist information erased") is None
    assert query_language("Can tourist information be erased?") == "en"
    assert query_language("Les informations sont-elles effacées ?") == "fr"
    # no function word: nothing says the query is English, BM25 keeps its full weight
    weight, doc_id = _bm25_weight(french, "tourist information erased")
    assert doc_id == "tourisme"
    assert weight == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("query, language", [
    ("droit à l'effacement", "fr"),  # "à" and an elided article: French's own marks
    ("délai d’effacement", "fr"),
    ("l’IA à haut risque", "fr"),
    ("What legal bases make processing lawful besides consent?", "en"),  # no article
    ("Does anonymous data fall under data protection law?", "en"),
    ("Quel délai pour notifier ?", "fr"),
    ("AIPD", None),
    ("GDPR fines", None),
    ("don't erase O'Brien", None),
])
def test_a_short_querys_language_is_told_by_its_small_words(query: str, language: str | None) -> None:
    from enginelib.language import query_language

    assert query_language(query) == language


def test_the_gate_reads_keywords_alone_as_the_passages_language(french: Store) -> None:
    """The gate and fusion read keywords the same way: with no word telling their language,
    nothing says the query crosses languages (read as English, a French keyword query met
    French text with the lenient cross-lingual levels)."""
    def crossing(query: str) -> bool:
        response = french.search(query, limit=3)
        assert response.gate is not None  # answered or not, the evidence is there
        return response.gate.evidence.cross_lingual

    assert not crossing("tourisme information randonnées")
    assert not crossing("AIPD randonnées")
    assert not crossing("droit à l'effacement")
    assert crossing("Can tourist information be erased?")

"""``e5-minilm``: e5-small and MiniLM side by side, MiniLM's half only where the text is English.

Unit tests use two hashing embedders as the parts (the joining, the language rule and the gate's
reading of the first part are independent of the models); the integration test runs the real
models and checks that French search is exactly e5's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.embedders.joined import E5_MINILM, JoinedEmbedder, null_half
from enginelib.embedders.registry import embedder_for_store, embedder_names, make_embedder
from enginelib.manifest import read_manifest
from tests.helpers import doc

ENGLISH = "The data subject shall have the right to obtain the erasure of personal data."
FRENCH = "La personne concernée a le droit d'obtenir l'effacement de ses données."


def joined(first_dim: int = 384, second_dim: int = 32) -> JoinedEmbedder:
    return JoinedEmbedder(HashingEmbedder(first_dim), HashingEmbedder(second_dim))


def test_the_minilm_half_is_kept_only_for_english_text() -> None:
    model = joined(16, 8)
    passages = model.embed([ENGLISH, FRENCH])
    assert passages.shape == (2, 24)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-6)
    # a French passage's MiniLM half is the one fixed null vector, not its text's
    assert np.allclose(passages[1, 16:] / np.linalg.norm(passages[1, 16:]), null_half(8), atol=1e-6)
    assert np.allclose(np.linalg.norm(passages[:, 16:], axis=1), np.sqrt(0.5), atol=1e-6)
    queries = model.embed_queries(["What is the right to erasure?", "Quel est le droit à l'effacement ?",
                                   "erasure GDPR"])  # keywords only: no language, both halves
    assert np.any(queries[0, 16:]) and not np.any(queries[1, 16:]) and np.any(queries[2, 16:])


def test_two_english_texts_meet_on_the_mean_of_both_models_cosines() -> None:
    first, second = HashingEmbedder(16), HashingEmbedder(8)
    model = JoinedEmbedder(first, second)
    query = "Who has the right to obtain erasure of personal data?"
    both = float(model.embed([ENGLISH])[0] @ model.embed_queries([query])[0])
    alone = [float(m.embed([ENGLISH])[0] @ m.embed([query])[0]) for m in (first, second)]
    assert both == pytest.approx(sum(alone) / 2, abs=1e-6)


def test_a_french_store_ranks_exactly_as_the_first_model_alone(tmp_path: Path) -> None:
    texts = {f"fr-{i}": t for i, t in enumerate([
        FRENCH, "Le responsable du traitement tient un registre des activités de traitement.",
        "Les plaquettes de frein sont remplacées lorsque leur épaisseur est inférieure à 2 mm.",
        "Le délégué à la protection des données est associé à toutes les questions.",
    ])}
    rankings = []
    for embedder in (joined(), HashingEmbedder(384)):
        with enginelib.open(tmp_path / embedder.name, embedder=embedder) as store:
            store.ingest_documents([doc(k, v, language="fr") for k, v in texts.items()])
            for question in ("droit à l'effacement des données", "erasure of data"):
                response = store.search(question, strategy="vector", answerability_threshold=None)
                rankings.append([h.document_id for h in response.hits])
    assert rankings[:2] == rankings[2:] and len(rankings[0]) == len(texts)


def test_a_french_query_ranks_a_mixed_store_exactly_as_the_first_model_alone(tmp_path: Path) -> None:
    """English and French passages side by side: the French query's cosines must all be e5's
    (one scale), not favour the French passages because their MiniLM half is empty."""
    texts = {"en-erasure": ENGLISH, "fr-erasure": FRENCH,
             "en-brakes": "Replace the brake pads when they are thinner than 2 mm.",
             "fr-freins": "Remplacer les plaquettes de frein lorsqu'elles font moins de 2 mm.",
             "en-records": "The controller shall keep a record of processing activities."}
    rankings = []
    for embedder in (joined(), HashingEmbedder(384)):
        with enginelib.open(tmp_path / embedder.name, embedder=embedder) as store:
            store.ingest_documents([doc(k, v, language=k[:2]) for k, v in texts.items()])
            response = store.search("Quand puis-je obtenir l'effacement de mes données personnelles ?",
                                    strategy="vector", answerability_threshold=None)
            rankings.append([h.document_id for h in response.hits])
    assert rankings[0] == rankings[1]


def test_a_french_querys_cosines_are_the_first_models_on_one_scale_for_every_passage() -> None:
    first = HashingEmbedder(384)
    model = JoinedEmbedder(first, HashingEmbedder(32))
    passages = [ENGLISH, FRENCH, "Article 17 of the GDPR covers the effacement of données.",
                "Le droit à l'effacement des données s'applique dans les cas prévus."]
    query = "Quand puis-je obtenir l'effacement de mes données ?"
    joined_cosines = model.embed(passages) @ model.embed_queries([query])[0]
    alone = first.embed(passages) @ first.embed([query])[0]
    assert np.allclose(joined_cosines, alone * np.sqrt(0.5), atol=1e-6)


def test_the_gate_weighs_the_first_models_cosine(tmp_path: Path) -> None:
    """Four passages: both stores' top five hold all of them, so the best cosine the gate
    reads must be the first model's own."""
    texts = {f"en-{i}": t for i, t in enumerate([
        ENGLISH, "The controller shall keep a record of processing activities.",
        "Replace the brake pads when they are thinner than 2 mm.",
        "The data protection officer shall be involved in all issues.",
    ])}
    question = "right to erasure of personal data"
    best = []
    for embedder in (joined(), HashingEmbedder(384)):
        with enginelib.open(tmp_path / embedder.name, embedder=embedder) as store:
            store.ingest_documents([doc(k, v) for k, v in texts.items()])
            response = store.search(question, answerability_threshold=0.0)
            assert response.gate is not None and response.gate.evidence.similarity is not None
            best.append(response.gate.evidence.similarity)
    assert best[0] == pytest.approx(best[1], abs=1e-5)
    # ... which is not what the joined vectors' own cosine says
    model = joined()
    full = model.embed(list(texts.values())) @ model.embed_queries([question])[0]
    assert float(full.max()) != pytest.approx(best[0], abs=1e-3)


def test_it_is_a_built_in_that_a_store_records_and_reopens_by_name() -> None:
    assert E5_MINILM in embedder_names()
    model = make_embedder(E5_MINILM)
    assert isinstance(model, JoinedEmbedder) and (model.name, model.dim) == (E5_MINILM, 768)
    assert isinstance(embedder_for_store(E5_MINILM, 768), JoinedEmbedder)


@pytest.mark.integration
@pytest.mark.slow
def test_real_models_french_search_is_e5s_and_english_gets_both(tmp_path: Path) -> None:
    french = {"fr-effacement": FRENCH,
              "fr-registre": "Le responsable du traitement tient un registre des activités de traitement.",
              "fr-freins": "Remplacer les plaquettes de frein lorsque leur épaisseur est inférieure à 2 mm."}
    rankings = []
    for name in (E5_MINILM, "e5-small"):
        with enginelib.open(tmp_path / name, embedder=name) as store:
            store.ingest_documents([doc(k, v, language="fr") for k, v in french.items()])
            for question in ("Quand puis-je obtenir l'effacement de mes données ?",
                             "When can I have my personal data erased?"):
                hits = store.search(question, strategy="vector", answerability_threshold=None).hits
                rankings.append([h.document_id for h in hits])
    assert rankings[:2] == rankings[2:] and rankings[0][0] == "fr-effacement"
    assert read_manifest(tmp_path / E5_MINILM).embedding_model == E5_MINILM  # type: ignore[union-attr]
    model = make_embedder(E5_MINILM)
    vectors = model.embed([ENGLISH, FRENCH])
    assert np.allclose(vectors[1, 384:] / np.linalg.norm(vectors[1, 384:]), null_half(384), atol=1e-5)
    assert not np.allclose(vectors[0, 384:] / np.linalg.norm(vectors[0, 384:]), null_half(384), atol=1e-2)

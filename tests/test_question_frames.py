"""A question wrapped in the conversational frame users type around it ("Can you tell me
...", "Pouvez-vous me dire ...") asks what the bare question asks: the gate decides it the
same, the same passage comes first, and an off-domain question is refused framed or not
(benchmarks/question_frames.py measures it on the regulatory sets)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import enginelib
from enginelib import HashingEmbedder
from enginelib.embedders.path import embed_queries
from enginelib.question_frames import question_core
from enginelib.search.highlights import is_function_word
from tests.helpers import doc, open_test_store

FILLER = [
    ("brakes", "Brake pads wear faster in city traffic; check the rotor and the caliper."),
    ("tyres", "Tyre pressure drops in cold weather; inflate the tyres before a long trip."),
    ("oil", "Change the engine oil and the oil filter every fifteen thousand kilometres."),
    ("freins", "Les plaquettes de frein s'usent plus vite en ville ; vérifiez les disques."),
    ("pneus", "La pression des pneus baisse par temps froid ; gonflez-les avant un long trajet."),
    ("vidange", "Vidangez l'huile moteur et changez le filtre tous les quinze mille kilomètres."),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> enginelib.Store:
    opened = open_test_store(tmp_path_factory.mktemp("frames") / "s", chunking=None)
    opened.ingest_documents([
        doc("retention-en", "Retention period: personal data is kept for no longer than the "
                            "retention period of six years, then erased.", title="Retention",
            language="en"),
        doc("retention-fr", "Durée de conservation : les données personnelles sont conservées "
                            "pendant une durée de conservation de six ans, puis effacées.",
            title="Conservation", language="fr"),
        *(doc(name, text, title=name.capitalize()) for name, text in FILLER),
    ])
    yield opened
    opened.close()


@pytest.mark.parametrize(("bare", "framed"), [
    ("What is the retention period?", "Can you tell me what the retention period is?"),
    ("What is the retention period?", "Please explain the retention period."),
    ("What is the retention period?", "I wonder what the retention period is, do you know?"),
    ("Quelle est la durée de conservation ?", "Pouvez-vous me dire quelle est la durée de conservation ?"),
    ("Quelle est la durée de conservation ?", "J'aimerais savoir quelle est la durée de conservation."),
    ("Quelle est la durée de conservation ?", "Bonjour, pourriez-vous m'expliquer la durée de conservation ?"),
])
def test_a_framed_question_is_decided_and_ranked_as_the_bare_one(
    store: enginelib.Store, bare: str, framed: str
) -> None:
    plain, wrapped = store.search(bare), store.search(framed)
    assert plain.gate is not None and wrapped.gate is not None
    assert plain.ok, plain.reason
    assert wrapped.gate.decision == plain.gate.decision, wrapped.reason
    assert wrapped.hits[0].document_id == plain.hits[0].document_id
    # the frame's words are not what is asked: not weighed, so none of them is missing
    assert wrapped.gate.evidence.content_words == plain.gate.evidence.content_words
    assert wrapped.gate.evidence.missing_words == ()


@pytest.mark.parametrize("question", [
    "Can you tell me how long to boil an egg?",
    "Please explain how to bake sourdough bread.",
    "Pouvez-vous me dire comment cuire un œuf à la coque ?",
    "J'aimerais savoir comment réussir une pâte feuilletée.",
])
def test_a_framed_off_domain_question_is_still_refused(store: enginelib.Store, question: str) -> None:
    response = store.search(question)
    assert not response.ok and response.hits == ()
    assert response.gate is not None and response.gate.evidence.missing_words


@pytest.mark.parametrize("word", ["tell", "know", "explain", "please", "question", "dites",
                                  "savoir", "pouvez-vous", "explique-moi", "d'après"])
def test_frame_words_are_question_words(word: str) -> None:
    assert is_function_word(word)


@pytest.mark.parametrize("word", ["help", "aide", "hi", "comprendre", "préciser", "demander",
                                  "retention", "conservation", "regulation", "règlement"])
def test_words_a_corpus_can_be_about_are_not(word: str) -> None:
    # "aide" is state aid, "hi" a cell marker ("Ly6C hi"), "comprendre" a law's "include",
    # "demander" a data subject's request: they frame some questions and are the topic of others
    assert not is_function_word(word)


def test_a_question_of_frame_words_only_says_so(store: enginelib.Store, tmp_path: Path) -> None:
    response = store.search("Can you tell me, please?")
    assert not response.ok and response.gate is not None
    assert response.gate.reason_code == "ONLY_STOP_WORDS"


# -- the frame is cut from what the model embeds (enginelib/question_frames.py) -------------


@pytest.mark.parametrize(("framed", "core"), [
    ("Can you tell me how long we may keep CVs?", "How long we may keep CVs?"),
    ("Hi, quick question: can you tell me about data portability?", "Data portability?"),
    ("I'd like to know whether the GDPR applies to us.", "Whether the GDPR applies to us."),
    ("I was wondering if consent can be withdrawn", "If consent can be withdrawn"),
    ("Pouvez-vous me dire combien de temps conserver les CV ?",
     "Combien de temps conserver les CV ?"),
    ("Bonjour, j'ai une question : qui est le responsable du traitement ?",
     "Qui est le responsable du traitement ?"),
    ("Je me demandais si le RGPD s’applique aux associations.",
     "Si le RGPD s'applique aux associations."),
])
def test_the_leading_frame_is_cut(framed: str, core: str) -> None:
    assert question_core(framed) == core


@pytest.mark.parametrize("text", [
    "What is the right to erasure?", "Can you tell me?", "Tell me about it", "Please explain",
    "Help desk tickets retention", "Hello Kitty", "GDPR Art. 17",
    "Quelle est la durée de conservation ?",
])
def test_a_question_without_a_frame_or_with_nothing_after_it_is_left_as_it_is(text: str) -> None:
    assert question_core(text) == text


def test_the_model_embeds_a_framed_question_as_its_core() -> None:
    embedder = HashingEmbedder(64)
    framed = embed_queries(embedder, ["Could you please tell me how long we keep CVs?"])
    core = embed_queries(embedder, ["How long we keep CVs?"])
    np.testing.assert_array_equal(framed, core)
    # what the store embeds for a search goes the same way
    assert question_core("Could you please tell me how long we keep CVs?") == "How long we keep CVs?"


@pytest.mark.parametrize(("typed", "read"), [
    ("how much sleep does a teenager need?", "How much sleep does a teenager need?"),
    ("comment effacer mes données ?", "Comment effacer mes données ?"),
    ("est-ce que le rgpd s'applique ?", "Est-ce que le rgpd s'applique ?"),
    ("can you tell me how long we keep CVs?", "How long we keep CVs?"),
])
def test_a_sentence_typed_in_lowercase_is_read_as_it_would_begin(typed: str, read: str) -> None:
    # e5-small put "how much sleep does a teenager need?" 0.036 closer to a French law's
    # passages than the same question with its capital: past the gate's cross-lingual band,
    # so an off-domain question was answered for its first letter
    assert question_core(typed) == read


@pytest.mark.parametrize("text", ["okra", "airport scanners", "gdpr fines", "eIDAS rules",
                                  "iPhone backups", "  ", ""])
def test_keywords_typed_in_lowercase_are_read_as_typed(text: str) -> None:
    # no sentence: a capital would make "okra" a name
    assert question_core(text) == text


class _Recording:
    """An embedder that keeps what it was asked to embed."""

    name, dim = "recording-4", 4

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_the_model_reads_a_lowercase_sentence_with_its_capital() -> None:
    model = _Recording()
    embed_queries(model, ["how long do we keep cvs?", "okra"])  # type: ignore[arg-type]
    assert model.texts == ["How long do we keep cvs?", "okra"]

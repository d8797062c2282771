"""A user's test of their own RAG code, with an enginelib store held in memory.

Needs only `pip install enginelib pytest`: the fixtures come with the package, the
store uses a small deterministic embedder (no model download), nothing is left on disk.
Run it with `pytest examples/test_with_enginelib.py`.
"""

import enginelib

MANUAL = [
    {"id": "pads", "text": "Replace the brake pads when they are thinner than 3 mm.",
     "truth_level": "L1", "tags": ["brakes"]},
    {"id": "fluid", "text": "Brake fluid absorbs water: change it every two years.",
     "truth_level": "L2", "tags": ["brakes"]},
    {"id": "forum", "text": "Someone on a forum says brake pads last forever.",
     "truth_level": "L4"},
]


# The fixtures' embedder hashes words: similar wording gives similar vectors, but its
# similarity values are not a real model's, so tests of ranking switch the answerability
# gate off (it is calibrated on real models); the refusal itself is tested on its own.
NO_GATE = {"answerability_threshold": None}


def answer_sources(store: enginelib.Store, question: str, **options) -> list[str]:
    """The code under test: which documents would my RAG app cite for this question?"""
    response = store.search(question, limit=3, **options)
    return [hit.citation.document_id for hit in response.hits]


def test_empty_store_refuses_to_answer(enginelib_store):
    response = enginelib_store.search("brake pads")
    assert response.status == enginelib.NO_RELEVANT_SOURCES
    assert response.hits == ()


def test_off_topic_question_is_refused(enginelib_store_factory):
    store = enginelib_store_factory(records=MANUAL)
    assert answer_sources(store, "GDPR consent for personal data") == []


def test_cites_the_trusted_manual(enginelib_store_factory):
    store = enginelib_store_factory(records=MANUAL)
    sources = answer_sources(store, "when should I replace the brake pads?", **NO_GATE)
    assert sources[0] == "pads"
    assert "forum" not in sources  # L4 is not searched unless asked for
    wider = answer_sources(store, "brake pads forum", truth_levels=["L1", "L2", "L4"], **NO_GATE)
    assert "forum" in wider


def test_citation_points_into_the_document(enginelib_store_factory):
    store = enginelib_store_factory(records=MANUAL)
    hit = store.search("brake fluid water", filters={"tags": ["brakes"]}, **NO_GATE).hits[0]
    text = store.get_document(hit.document_id)["content"]
    assert text[hit.start_offset:hit.end_offset] == hit.content  # the chunk
    assert text[hit.citation.quote_start:hit.citation.quote_end] == hit.citation.quote
    assert hit.citation.truth_level == "L2"


def test_ingest_in_the_test(enginelib_store):
    enginelib_store.ingest_documents(
        [enginelib.LoadedDocument(id="note", text="Torque the caliper bolts to 30 Nm.")],
        truth_level="L1",
    )
    hits = enginelib_store.search("caliper torque", **NO_GATE).hits
    assert hits[0].document_id == "note"

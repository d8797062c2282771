"""A refused search keeps the numbers it was refused on, for --json and for callers."""

from __future__ import annotations

import json
from pathlib import Path

import enginelib
from enginelib import HashingEmbedder
from enginelib.cli.commands_search import response_json
from tests.helpers import doc


def test_gate_refusal_carries_its_numbers(tmp_path: Path) -> None:
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32))
    store.ingest_documents([doc(f"d{i}", f"Brake pads wear {i} times faster on wet roads.")
                            for i in range(5)], truth_level="L1")
    # Half the query's words are nowhere in the corpus; the strictest threshold refuses it.
    query = "brake pads volcanic eruption"
    refused = store.search(query, strategy="hybrid", answerability_threshold=1.0, log=False)
    assert refused.status == "NO_RELEVANT_SOURCES" and refused.gate is not None
    assert not refused.gate.answerable and refused.gate.threshold == 1.0
    assert 0.0 <= refused.gate.score < 1.0 and "volcanic" in refused.gate.evidence.missing_words
    # the similarity it was decided on stays in the context, as for an answered search
    answered = store.search(query, strategy="hybrid", answerability_threshold=None, log=False)
    assert answered.ok and refused.context.confidence > 0
    assert abs(refused.context.confidence - answered.context.confidence) <= 1e-6
    data = json.loads(json.dumps(response_json(refused)))
    assert data["gate"]["answerable"] is False and data["gate"]["reason"] == refused.reason
    assert data["gate"]["score"] == round(refused.gate.score, 4)
    assert data["gate"]["confidence"] == refused.context.confidence
    store.close()

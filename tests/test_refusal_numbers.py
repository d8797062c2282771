"""A refused search keeps the numbers it was refused on, for --json and for callers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import enginelib
from enginelib import HashingEmbedder
from enginelib.cli.commands_search import response_json
from tests.helpers import doc


def test_gate_refusal_carries_its_similarity(tmp_path: Path) -> None:
    store = enginelib.open(tmp_path / "s", embedder=HashingEmbedder(32))
    store.ingest_documents([doc(f"d{i}", f"Brake pads wear {i} times faster on wet roads.")
                            for i in range(5)], truth_level="L1")
    refused = store.search("brake pads", strategy="hybrid", answerability_threshold=0.999,
                           log=False)
    assert refused.status == "NO_RELEVANT_SOURCES"
    shown = float(re.search(r"is (-?\d+\.\d+)", refused.reason or "").group(1))
    assert shown > 0 and abs(refused.context.confidence - shown) <= 1e-3
    data = json.loads(json.dumps(response_json(refused)))
    assert data["gate"] == {"answerable": False, "reason": refused.reason,
                            "confidence": refused.context.confidence}
    store.close()

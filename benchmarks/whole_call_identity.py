"""Before/after check for speed work on the search path: every response field a caller can
read (ids, order, scores, citations with their quotes, highlights, gate decisions), dumped
for SciFact and the regulatory stores under several request shapes, so two commits can be
compared byte for byte.

    python -m benchmarks.whole_call_identity --out before.jsonl
    ... change the code ...
    python -m benchmarks.whole_call_identity --out after.jsonl && cmp before.jsonl after.jsonl

Query vectors come from the hashing embedder (deterministic, 384 dims), so no model runs;
the regulatory stores (e5-small, built by ``benchmarks.regulatory_eval``) are read from
``--regulatory`` (copy them: a search may write the query log). Timings are left out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

import enginelib
from enginelib.embedder import HashingEmbedder
from enginelib.types import TRUTH_LEVELS

from .whole_call import load_scifact

HERE = Path(__file__).resolve().parent
SCIFACT_STORE = HERE / ".cache" / "whole_call_scifact"
REGULATORY = HERE / ".cache" / "regulatory"
QUESTIONS = HERE / "questions"

EVERY = {"truth_levels": list(TRUTH_LEVELS)}
SHAPES: dict[str, dict[str, Any]] = {
    "default": {},
    "issue-10": {**EVERY, "answerability_threshold": None, "limit": 10},
    "issue-100": {**EVERY, "answerability_threshold": None, "limit": 100, "chunks_per_doc": 1},
    "page-2": {**EVERY, "answerability_threshold": None, "limit": 10, "offset": 10},
    "deep-page": {**EVERY, "answerability_threshold": None, "limit": 20, "offset": 140,
                  "chunks_per_doc": 1},
    "two-per-doc": {**EVERY, "answerability_threshold": None, "limit": 30, "chunks_per_doc": 2},
    "mmr": {**EVERY, "answerability_threshold": None, "mmr": True, "limit": 10},
    "vector": {**EVERY, "strategy": "vector", "limit": 10},
    "fulltext": {**EVERY, "strategy": "fulltext", "limit": 10},
    "no-rewrite": {**EVERY, "rewrite": False, "limit": 10},
}


def scifact_store(docs: int) -> enginelib.Store:
    if not (SCIFACT_STORE / "manifest.json").exists():
        documents, _ = load_scifact(docs, 0)
        store = enginelib.open(SCIFACT_STORE, embedder=HashingEmbedder(384))
        store.ingest_documents(documents, truth_level="L1")
        return store
    return enginelib.open(SCIFACT_STORE, embedder=HashingEmbedder(384))


def questions(*names: str) -> list[str]:
    out = []
    for name in names:
        with open(QUESTIONS / f"{name}.jsonl", encoding="utf-8") as fh:
            out.extend(json.loads(line)["question"] for line in fh if line.strip())
    return out


def dump(store: enginelib.Store, name: str, queries: list[str], fh: Any) -> None:
    vectors = np.asarray(HashingEmbedder(384).embed(queries), dtype=np.float32)
    for shape, options in SHAPES.items():
        for query, vector in zip(queries, vectors, strict=True):
            response = store.search(query, query_vector=vector, cache=False, log=False, **options)
            data = response.to_dict()
            data.pop("execution_time_ms")
            data.pop("timings")
            fh.write(json.dumps({"store": name, "shape": shape, **data}, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--regulatory", type=Path, default=REGULATORY)
    args = parser.parse_args()
    _, scifact_queries = load_scifact(0, args.queries)
    with open(args.out, "w", encoding="utf-8") as fh:
        store = scifact_store(args.docs)
        dump(store, "scifact", scifact_queries, fh)
        store.close()
        for corpus, sets in (("en", ("regulatory_en", "off_domain_en")),
                             ("fr", ("regulatory_fr", "regulatory_en_over_fr", "off_domain_fr"))):
            store = enginelib.open(args.regulatory / corpus)
            dump(store, corpus, questions(*sets), fh)
            store.close()


if __name__ == "__main__":
    main()

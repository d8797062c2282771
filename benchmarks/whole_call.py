"""The whole call as a user makes it: wall time around ``store.search`` on SciFact documents.

    python -m benchmarks.whole_call [--docs 3000] [--queries 200] [--gate on|off]

A deterministic hashing embedder (384 dims) keeps the model out of the figure: what is
measured is validation, query understanding, retrieval, fusion, paging, the gate and the
cited hits, at limit 10 with the response cache off. Run it on two checkouts (put the
other one first on PYTHONPATH) to compare them in one session.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path

import enginelib
from enginelib.embedder import HashingEmbedder
from enginelib.search.request import SearchRequest
from enginelib.types import LoadedDocument

from .beir import SHARED_DATASETS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--gate", choices=("on", "off"), default="off")
    args = parser.parse_args()
    folder = SHARED_DATASETS / "scifact"
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(args.docs), fh)]
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for _, line in zip(range(args.queries), fh)]
    options: dict[str, object] = {"log": False, "limit": 10}
    if args.gate == "off":
        options["answerability_threshold"] = None
    if "cache" in {f.name for f in dataclasses.fields(SearchRequest)}:
        options["cache"] = False
    with tempfile.TemporaryDirectory() as tmp:
        store = enginelib.open(Path(tmp) / "s", embedder=HashingEmbedder(384))
        store.ingest_documents(
            [LoadedDocument(id=r["_id"], text=f"{r['title']}\n\n{r['text']}") for r in rows],
            truth_level="L1",
        )
        for strategy in ("hybrid", "fulltext", "vector"):
            for q in queries[:20]:
                store.search(q, strategy=strategy, **options)
            times = []
            for q in queries:
                started = time.perf_counter()
                store.search(q, strategy=strategy, **options)
                times.append((time.perf_counter() - started) * 1000.0)
            times.sort()
            print(f"{strategy:<9} p50 {statistics.median(times):6.2f} ms   "
                  f"p95 {times[int(0.95 * len(times))]:6.2f} ms")
        store.close()


if __name__ == "__main__":
    main()

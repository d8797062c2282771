"""What a truth-level filter costs at 100k chunks: the filter applied after retrieval (a
filter keeping most of the corpus) beside the filter inside the indexes, in one run.

    python -m benchmarks.filter_path [--chunks 100000] [--queries 200] [--out results/filter_path.json]

Synthetic one-chunk documents (40 words drawn from a 5,000-word Zipf vocabulary), hashing
embedder (384 dims), 94.9 % L1, 5 % L3, 0.1 % L4. Hybrid search at limit 10, gate, log and
response cache off, the query vector given. Measured, query by query in turn:

- every truth level (no filter);
- the default levels L1+L2 (94.9 % kept) through the post-filter path, and the same request
  forced through the in-index path (``POST_FILTER_MIN_FRACTION`` above 1), the path every
  filter took before;
- L3 only (5 %) and L4 only (0.1 %), which stay inside the index.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import enginelib
from enginelib.embedder import HashingEmbedder
from enginelib.search import retrieve
from enginelib.types import TRUTH_LEVELS, LoadedDocument

from .timing import percentiles


def synthetic(count: int, seed: int = 7) -> tuple[list[str], np.random.Generator]:
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{i:04d}" for i in range(5000)])
    weights = 1.0 / np.arange(1, 5001) ** 1.05
    weights /= weights.sum()
    words = rng.choice(vocabulary, size=(count, 40), p=weights)
    return [" ".join(row) for row in words], rng


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    texts, rng = synthetic(args.chunks)
    l4 = max(1, args.chunks // 1000)
    l3 = args.chunks // 20
    levels = ["L4"] * l4 + ["L3"] * l3 + ["L1"] * (args.chunks - l4 - l3)
    queries = [" ".join(texts[int(i)].split()[j] for j in (3, 11, 19, 27))
               for i in rng.integers(0, args.chunks, size=args.queries)]
    embedder = HashingEmbedder(384)
    vectors = np.asarray(embedder.embed(queries), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        store = enginelib.open(Path(tmp) / "s", embedder=embedder)
        started = time.perf_counter()
        step = 10_000
        for level in ("L4", "L3", "L1"):
            rows = [i for i, lv in enumerate(levels) if lv == level]
            for start in range(0, len(rows), step):
                store.ingest_documents(
                    [LoadedDocument(id=f"d{i:07d}", text=texts[i]) for i in rows[start:start + step]],
                    truth_level=level,
                )
        ingest_s = time.perf_counter() - started
        base = {"strategy": "hybrid", "limit": 10, "answerability_threshold": None,
                "log": False, "cache": False}
        runs: dict[str, tuple[dict[str, Any], float]] = {
            "every level (no filter)": ({"truth_levels": list(TRUTH_LEVELS)}, retrieve.POST_FILTER_MIN_FRACTION),
            "L1+L2 (94.9 %), post-filter": ({}, retrieve.POST_FILTER_MIN_FRACTION),
            "L1+L2 (94.9 %), inside the index (before)": ({}, 1.01),
            "L3 (5 %), inside the index": ({"truth_levels": ["L3"]}, retrieve.POST_FILTER_MIN_FRACTION),
            "L4 (0.1 %), inside the index": ({"truth_levels": ["L4"]}, retrieve.POST_FILTER_MIN_FRACTION),
        }

        def call(options: dict[str, Any], threshold: float, i: int) -> None:
            retrieve.POST_FILTER_MIN_FRACTION = threshold
            store.search(queries[i], query_vector=vectors[i], **base, **options)

        calls: dict[str, Callable[[int], None]] = {
            name: (lambda i, _o=o, _t=t: call(_o, _t, i)) for name, (o, t) in runs.items()
        }
        default_threshold = retrieve.POST_FILTER_MIN_FRACTION
        for i in range(10):
            for fn in calls.values():
                fn(i)
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for i in range(len(queries)):
            for name, fn in calls.items():
                t0 = time.perf_counter()
                fn(i)
                samples[name].append((time.perf_counter() - t0) * 1000.0)
        retrieve.POST_FILTER_MIN_FRACTION = default_threshold
        store.close()
    latency = {name: percentiles(values) for name, values in samples.items()}
    result = {"chunks": args.chunks, "queries": len(queries), "ingest_s": round(ingest_s, 1),
              "load_average": os.getloadavg(), "latency_ms": latency}
    for name, p in latency.items():
        print(f"{name:<45} p50 {p['p50']:8.3f} ms   p95 {p['p95']:8.3f} ms")
    print(f"ingest {ingest_s:.0f} s; load {result['load_average']}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

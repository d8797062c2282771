"""Repeated-query latency with the response cache, and what the cache's bound holds in memory.

    python -m benchmarks.response_cache --dataset scifact [--embedder hashing|minilm] [--docs N]

On an in-memory store of the dataset, times every judged query three ways, one search at a
time: cold (no response cache, empty query-vector LRU: the model embeds the query), the
query-vector LRU only (second pass, response cache off), and a response-cache hit (second
pass, cache on). Then fills the cache with distinct requests and compares its byte estimate
with the memory that clearing it gives back (tracemalloc), unbounded and under a bound.
Writes results/response_cache.json (+ .png when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc
from itertools import islice
from pathlib import Path
from typing import Any

import enginelib
from enginelib.embedder import Embedder, HashingEmbedder, QueryEmbeddingCache

from .beir import iter_corpus, load, resolve

RESULTS = Path(__file__).resolve().parent / "results"
NO_LOG = {"log": False, "answerability_threshold": None}


def _embedder(name: str) -> Embedder:
    if name == "hashing":
        return HashingEmbedder(384)
    from enginelib.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _timed(store: enginelib.Store, queries: list[str], **options: Any) -> list[float]:
    out = []
    for query in queries:
        started = time.perf_counter()
        store.search(query, **NO_LOG, **options)
        out.append((time.perf_counter() - started) * 1000.0)
    return out


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 4),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 4),
            "mean_ms": round(statistics.fmean(ordered), 4)}


def latency(store: enginelib.Store, queries: list[str]) -> dict[str, Any]:
    store.search(queries[0], **NO_LOG)  # load the view and the model once
    store.response_cache.resize(max_entries=0)
    store.query_embeddings = QueryEmbeddingCache(store.embedder)
    cold = _timed(store, queries)
    vector_lru = _timed(store, queries)
    store.response_cache.resize(max_entries=100_000)
    _timed(store, queries)  # fill
    hits_before = store.response_cache.hits
    cached = _timed(store, queries)
    assert store.response_cache.hits - hits_before == len(queries)
    return {"cold": _summary(cold), "query_vector_lru": _summary(vector_lru),
            "response_cache_hit": _summary(cached),
            "series": {"cold": cold, "query_vector_lru": vector_lru, "response_cache_hit": cached}}


def _retained(store: enginelib.Store) -> int:
    """Bytes that clearing the response cache gives back."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    store.response_cache.clear()
    gc.collect()
    return before - tracemalloc.get_traced_memory()[0]


def memory(store: enginelib.Store, queries: list[str], bound: int) -> dict[str, Any]:
    requests = [(q, limit) for limit in (5, 10, 20) for q in queries]
    tracemalloc.start()
    points = []
    store.response_cache.resize(max_entries=100_000, max_bytes=1 << 40)
    for count in (100, 300, len(requests)):
        store.response_cache.clear()
        for query, limit in requests[:count]:
            store.search(query, limit=limit, **NO_LOG)
        estimate = store.response_cache.bytes
        points.append({"entries": len(store.response_cache), "estimated_bytes": estimate,
                       "measured_bytes": _retained(store)})
    store.response_cache.resize(max_bytes=bound)
    peak_estimate = peak_entries = 0
    for query, limit in requests:
        store.search(query, limit=limit, **NO_LOG)
        peak_estimate = max(peak_estimate, store.response_cache.bytes)
        peak_entries = max(peak_entries, len(store.response_cache))
    bounded = {"max_bytes": bound, "requests": len(requests), "peak_estimated_bytes": peak_estimate,
               "peak_entries": peak_entries, "evictions": store.response_cache.evictions,
               "measured_bytes_at_end": _retained(store)}
    tracemalloc.stop()
    return {"unbounded": points, "bounded": bounded}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.response_cache", description=__doc__)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--docs", type=int, default=0, help="first N documents (0: all)")
    parser.add_argument("--bound", type=int, default=4 << 20, help="max_bytes for the bound run")
    args = parser.parse_args(argv)
    dataset = load(args.dataset)
    documents = iter_corpus(resolve(args.dataset))
    if args.docs:
        documents = islice(documents, args.docs)
    started = time.perf_counter()
    store = enginelib.memory(list(documents), embedder=_embedder(args.embedder), truth_level="L1")
    build_s = time.perf_counter() - started
    queries = list(dataset.queries.values())
    stats = store.stats()
    result = {
        "dataset": args.dataset, "embedder": store.embedder.name, "documents": stats["documents"],
        "chunks": stats["chunks"], "queries": len(queries), "build_s": round(build_s, 1),
        "latency": latency(store, queries), "memory": memory(store, queries, args.bound),
    }
    store.close()
    RESULTS.mkdir(exist_ok=True)
    name = f"response_cache_{resolve(args.dataset).name}_{args.embedder}"
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    _plot(result, RESULTS / f"{name}.png")
    printable = {k: v for k, v in result.items() if k != "latency"}
    printable["latency"] = {k: v for k, v in result["latency"].items() if k != "series"}
    print(json.dumps(printable, indent=1))
    return 0


def _plot(result: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for label, series in result["latency"]["series"].items():
        ordered = sorted(series)
        left.plot(ordered, [i / len(ordered) for i in range(1, len(ordered) + 1)], label=label)
    left.set_xscale("log")
    left.set_xlabel("latency per search (ms, log)")
    left.set_ylabel("fraction of queries")
    left.set_title(f"{result['dataset']} ({result['chunks']} chunks, {result['embedder']})")
    left.legend()
    points = result["memory"]["unbounded"]
    right.plot([p["entries"] for p in points], [p["measured_bytes"] / 2**20 for p in points],
               "o-", label="measured (tracemalloc)")
    right.plot([p["entries"] for p in points], [p["estimated_bytes"] / 2**20 for p in points],
               "s--", label="cache's estimate")
    bounded = result["memory"]["bounded"]
    right.axhline(bounded["max_bytes"] / 2**20, color="grey", linestyle=":",
                  label=f"bound run: max_bytes, measured {bounded['measured_bytes_at_end'] / 2**20:.1f} MiB")
    right.set_xlabel("cached responses")
    right.set_ylabel("MiB")
    right.set_title("memory held by the response cache")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())

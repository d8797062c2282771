"""The whole call as a user makes it: wall time around ``store.search`` on SciFact, beside
LanceDB hybrid and a bare Python RRF over Tantivy + hnswlib on the same chunks and vectors.

    python -m benchmarks.whole_call [--docs 3000] [--queries 200] [--out results/whole_call.json]

A deterministic hashing embedder (384 dims) keeps the model out of the figure: each query's
vector is computed once and passed as ``query_vector``, and the same vector goes to the peers.
The systems take turns query by query (round robin), so load from other processes on the
machine falls on all of them alike. Two engine configurations are measured:

- default: gate on, query log on, default truth levels (L1+L2); response cache off (a cache
  hit is not the call);
- issue: every truth level, gate off, log off, cache off (issue 15's configuration);

each at limit 10 and at depth 100 (limit 100, ``chunks_per_doc=1``: one hundred documents,
each hit cited; the peers return their top 100 chunks). A second pass with
timers around each stage gives the per-stage breakdown (the timers add ~1 us per stage).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import enginelib
from enginelib.embedder import HashingEmbedder
from enginelib.search import answerability, engine, rewrite, stages
from enginelib.types import TRUTH_LEVELS, LoadedDocument

from .beir import SHARED_DATASETS
from .peers import Corpus, LanceHybrid
from .run import _corpus
from .timing import percentiles

CONFIGS: dict[str, dict[str, Any]] = {
    "default": {"cache": False},
    "issue": {"cache": False, "log": False, "answerability_threshold": None,
              "truth_levels": list(TRUTH_LEVELS)},
}
LIMITS = (10, 100)


def options_for(config: str, limit: int) -> dict[str, Any]:
    """Depth 100 is one hundred documents, one chunk each (``chunks_per_doc=1``)."""
    return {**CONFIGS[config], "limit": limit, **({"chunks_per_doc": 1} if limit == 100 else {})}


class BareRrf:
    """The floor: Tantivy BM25 and hnswlib each asked for ``depth``, RRF (k=60) in Python."""

    name = "bare-rrf"

    def __init__(self, folder: Path, depth: int = 100) -> None:
        self.folder, self.depth = folder, depth

    def build(self, corpus: Corpus) -> None:
        import hnswlib
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
        builder.add_integer_field("row", stored=False, fast=True, indexed=False)
        schema = builder.build()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(schema, path=str(self.folder))
        writer = self.index.writer(50_000_000, 1)
        for row, text in enumerate(corpus.texts):
            writer.add_document(tantivy.Document(text=text, row=row))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.graph = hnswlib.Index(space="ip", dim=corpus.vectors.shape[1])
        self.graph.init_index(max_elements=len(corpus.vectors), M=16, ef_construction=200,
                              random_seed=100)
        self.graph.add_items(corpus.vectors, np.arange(len(corpus.vectors)), num_threads=1)
        self.graph.set_ef(max(100, self.depth))
        self.graph.set_num_threads(1)

    def search(self, query: str, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        words = re.sub(r"[^\w\s]", " ", query)
        parsed = self.index.parse_query(words, ["text"])
        found = self.searcher.search(parsed, limit=self.depth).hits
        text_rows = self.searcher.fast_field_values("row", [addr for _, addr in found])
        labels, _ = self.graph.knn_query(vector, k=self.depth)
        fused: dict[int, float] = {}
        for ranking in (labels[0].tolist(), text_rows):
            for rank, row in enumerate(ranking, 1):
                fused[row] = fused.get(row, 0.0) + 1.0 / (60 + rank)
        return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]

    def close(self) -> None:
        pass


class StageTimers:
    """Timers around the stage functions (module attributes), summed per call."""

    STAGES = {
        "query understanding": [(rewrite, "plan")],
        "filters": [(stages, "allowed_chunks")],
        "retrieval": [(stages, "retrieve")],
        "fusion": [(stages, "fuse"), (stages, "min_score")],
        "boosts, rerank, MMR, grouping": [(stages, "boost"), (stages, "rerank"),
                                          (stages, "diversify")],
        "paging (stitch)": [(stages, "page")],
        "gate": [(answerability, "assess"), (stages, "top_similarity")],
        "hits and citations": [(stages, "build_hits"), (stages, "context")],
        "logging": [(engine, "log")],
        "validation (options, query vector)": [(engine, "build_request"),
                                               (engine, "_query_vectors")],
    }

    def __init__(self) -> None:
        self.current: dict[str, float] = {}
        self.saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        for stage, targets in self.STAGES.items():
            for module, name in targets:
                original = getattr(module, name)
                self.saved.append((module, name, original))
                setattr(module, name, self._timed(stage, original))

    def remove(self) -> None:
        for module, name, original in self.saved:
            setattr(module, name, original)
        self.saved = []

    def _timed(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        current = self.current

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                current[stage] = current.get(stage, 0.0) + (time.perf_counter() - started) * 1e3

        return timed


def load_scifact(docs: int, queries: int) -> tuple[list[LoadedDocument], list[str]]:
    folder = SHARED_DATASETS / "scifact"
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(docs), fh)]
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for _, line in zip(range(queries), fh)]
    documents = [LoadedDocument(id=r["_id"], text=f"{r['title']}\n\n{r['text']}") for r in rows]
    return documents, texts


def measure(store: enginelib.Store, peers: dict[str, Any], queries: list[str],
            vectors: np.ndarray, warmup: int) -> tuple[dict[str, dict[str, float]],
                                                       dict[str, dict[str, float]]]:
    """Wall and CPU p50/p95 per (system, limit), systems taking turns query by query.

    CPU time (this process, every thread) is what a loaded machine inflates least; a
    system that answers on several threads (LanceDB) is charged for all of them."""
    calls: dict[str, Callable[[int, int], Any]] = {}
    for config in CONFIGS:
        for limit in LIMITS:
            options = options_for(config, limit)
            calls[f"enginelib {config} limit {limit}"] = (
                lambda i, _o=options: store.search(queries[i], query_vector=vectors[i], **_o))
    for name, peer in peers.items():
        for limit in LIMITS:
            calls[f"{name} limit {limit}"] = (
                lambda i, _l=limit, _p=peer: _p.search(queries[i], vectors[i], _l))
    for i in range(warmup):
        for call in calls.values():
            call(i)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(len(queries)):
        for name, call in calls.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            call(i)
            samples[name].append((time.perf_counter() - started) * 1000.0)
            cpu[name].append((time.process_time() - cpu_started) * 1000.0)
    return ({name: percentiles(values) for name, values in samples.items()},
            {name: percentiles(values) for name, values in cpu.items()})


def breakdown(store: enginelib.Store, queries: list[str], vectors: np.ndarray) -> dict[str, Any]:
    """Mean ms per stage and per call, for each configuration and limit."""
    timers = StageTimers()
    timers.install()
    out: dict[str, Any] = {}
    try:
        for config in CONFIGS:
            for limit in LIMITS:
                options = options_for(config, limit)
                totals: dict[str, float] = {}
                whole = []
                for query, vector in zip(queries, vectors, strict=True):
                    timers.current.clear()
                    started = time.perf_counter()
                    store.search(query, query_vector=vector, **options)
                    whole.append((time.perf_counter() - started) * 1000.0)
                    for stage, ms in timers.current.items():
                        totals[stage] = totals.get(stage, 0.0) + ms
                stage_ms = {s: round(totals.get(s, 0.0) / len(queries), 4) for s in timers.STAGES}
                # nested: page() holds deeper rungs' ranking; report paging net of them
                mean = statistics.fmean(whole)
                stage_ms["glue (presets, cache key, response copy)"] = round(
                    mean - sum(v for s, v in stage_ms.items() if s != "paging (stitch)"), 4)
                out[f"{config} limit {limit}"] = {"mean_ms": round(mean, 4), "stages_ms": stage_ms}
    finally:
        timers.remove()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--no-lance", action="store_true", help="skip LanceDB")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    documents, queries = load_scifact(args.docs, args.queries)
    embedder = HashingEmbedder(384)
    vectors = np.asarray(embedder.embed(queries), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        store = enginelib.open(Path(tmp) / "s", embedder=embedder)
        store.ingest_documents(documents, truth_level="L1")
        corpus = _corpus(store)
        peers: dict[str, Any] = {"bare-rrf": BareRrf(Path(tmp) / "bare")}
        if not args.no_lance:
            peers["lancedb-hybrid"] = LanceHybrid(Path(tmp) / "lance")
        for peer in peers.values():
            peer.build(corpus)
        latency, latency_cpu = measure(store, peers, queries, vectors, args.warmup)
        stages_ms = breakdown(store, queries, vectors)
        result = {
            "docs": len(documents), "chunks": len(corpus.labels), "queries": len(queries),
            "load_average": os.getloadavg(), "latency_ms": latency,
            "latency_cpu_ms": latency_cpu, "stages": stages_ms,
        }
        store.close()
    for name, p in latency.items():
        c = latency_cpu[name]
        print(f"{name:<32} p50 {p['p50']:7.3f} ms   p95 {p['p95']:7.3f} ms   "
              f"cpu p50 {c['p50']:7.3f} ms")
    for name, row in stages_ms.items():
        print(f"\n{name}: mean {row['mean_ms']:.3f} ms")
        for stage, ms in row["stages_ms"].items():
            print(f"  {stage:<40} {ms:7.3f}")
    print(f"\nchunks {result['chunks']} for {result['docs']} documents; load {result['load_average']}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
